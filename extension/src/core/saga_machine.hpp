// The saga state machine: pure decisions "given the definition, the state and an event, here
// is the new state, the commands to send and the history to record". No I/O, no clock, no
// randomness of its own (the caller passes now and a uniform random number), so every rule is
// unit-tested in microseconds and the PostgreSQL layer only loads, stores and sends.
#pragma once

#include "saga_definition.hpp"
#include "json.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace once::saga {

enum class Status { running, compensating, completed, compensated, failed };
enum class StepStatus { pending, running, succeeded, failed, timed_out, compensating, compensated };
// What the current step (cursor) waits for: a reply to a sent command, the retry time after a
// failed attempt, or saga_tick to run a local function.
enum class Waiting { none, reply, retry, local };
enum class Outcome { succeeded, failed, compensated, compensation_failed };

const char* status_name(Status s);
const char* step_status_name(StepStatus s);
Outcome parse_outcome(std::string_view text);  // throws saga_invalid_reply
const char* outcome_name(Outcome o);

struct State {
    Status status = Status::running;
    Status failed_in = Status::running;  // the status a failed saga stopped in (for saga_retry)
    int cursor = 0;                      // step being executed or compensated
    int attempts = 0;                    // sends of the current command
    int64_t deadline_ms = 0;             // 0: none (final or failed)
    Waiting waiting = Waiting::none;
    std::vector<StepStatus> steps;
    std::string reason;                  // why it failed / is compensating (the latest failure)
    // The failure that made the saga leave running (to compensate or to stop failed): kept
    // while later failures (a compensation that times out) replace reason; cleared when a
    // retry by hand resumes it running.
    std::string cause;

    bool final() const { return status == Status::completed || status == Status::compensated; }
};

Json to_json(const State& s, const Definition& d);
State state_from_json(const Json& j, const Definition& d);

struct Event {
    enum class Type { start, reply, deadline, retry, abort } type = Type::start;
    std::string step;       // reply
    Outcome outcome = Outcome::succeeded;
    std::string reason;     // reply error text, abort reason
    int64_t now_ms = 0;
    double random01 = 0.5;  // for backoff jitter
};

struct Command {
    int step = 0;
    bool compensate = false;
    std::string topic;
    int attempt = 1;
};

struct Transition {
    std::string from, to;   // saga statuses
    std::string step;
    std::string event;
    std::string reason;
};

enum class ReplyResult { applied, duplicate, late, rejected };
const char* reply_result_name(ReplyResult r);

struct Decision {
    State state;
    std::vector<Command> commands;
    std::vector<Transition> history;
    ReplyResult result = ReplyResult::applied;
    bool merge_output = false;   // a step's success was accepted: merge its output into the data
};

// Throws saga_unknown_step for a reply naming a step the definition lacks and
// saga_invalid_state for retry/abort in a status that does not allow them.
Decision decide(const Definition& d, const State& state, const Event& event);

}  // namespace once::saga
