#include "saga_machine.hpp"

#include "backoff.hpp"
#include "error.hpp"

namespace once::saga {

const char* status_name(Status s) {
    switch (s) {
        case Status::running: return "running";
        case Status::compensating: return "compensating";
        case Status::completed: return "completed";
        case Status::compensated: return "compensated";
        case Status::failed: return "failed";
    }
    return "?";
}

const char* step_status_name(StepStatus s) {
    switch (s) {
        case StepStatus::pending: return "pending";
        case StepStatus::running: return "running";
        case StepStatus::succeeded: return "succeeded";
        case StepStatus::failed: return "failed";
        case StepStatus::timed_out: return "timed_out";
        case StepStatus::compensating: return "compensating";
        case StepStatus::compensated: return "compensated";
    }
    return "?";
}

const char* outcome_name(Outcome o) {
    switch (o) {
        case Outcome::succeeded: return "succeeded";
        case Outcome::failed: return "failed";
        case Outcome::compensated: return "compensated";
        case Outcome::compensation_failed: return "compensation_failed";
    }
    return "?";
}

const char* reply_result_name(ReplyResult r) {
    switch (r) {
        case ReplyResult::applied: return "applied";
        case ReplyResult::duplicate: return "duplicate";
        case ReplyResult::late: return "late";
        case ReplyResult::rejected: return "rejected";
    }
    return "?";
}

Outcome parse_outcome(std::string_view t) {
    if (t == "succeeded") return Outcome::succeeded;
    if (t == "failed") return Outcome::failed;
    if (t == "compensated") return Outcome::compensated;
    if (t == "compensation_failed") return Outcome::compensation_failed;
    throw Error(ErrorCode::saga_invalid_reply, "invalid saga reply outcome",
                "The outcome was \"" + std::string(t.substr(0, 80)) + "\".",
                "Use succeeded or failed for an action, compensated or compensation_failed for a compensation.");
}

namespace {

const char* waiting_name(Waiting w) {
    switch (w) {
        case Waiting::none: return "none";
        case Waiting::reply: return "reply";
        case Waiting::retry: return "retry";
        case Waiting::local: return "local";
    }
    return "?";
}

template <typename E, size_t N>
E parse_enum(const std::string& s, const char* (&names)[N], E fallback) {
    for (size_t i = 0; i < N; ++i)
        if (s == names[i]) return static_cast<E>(i);
    return fallback;
}

const char* kStatusNames[] = {"running", "compensating", "completed", "compensated", "failed"};
const char* kStepNames[] = {"pending", "running", "succeeded", "failed", "timed_out", "compensating", "compensated"};
const char* kWaitingNames[] = {"none", "reply", "retry", "local"};

}  // namespace

Json to_json(const State& s, const Definition& d) {
    Json j = Json::object();
    j.set("status", Json::string(status_name(s.status)));
    if (s.status == Status::failed) j.set("failed_in", Json::string(status_name(s.failed_in)));
    j.set("cursor", Json::number(s.cursor));
    j.set("attempts", Json::number(s.attempts));
    j.set("deadline_ms", Json::number(static_cast<double>(s.deadline_ms)));
    j.set("waiting", Json::string(waiting_name(s.waiting)));
    Json steps = Json::array();
    for (auto st : s.steps) steps.push(Json::string(step_status_name(st)));
    j.set("steps", std::move(steps));
    if (!s.reason.empty()) j.set("reason", Json::string(s.reason));
    if (!s.cause.empty()) j.set("cause", Json::string(s.cause));
    if (s.waiting == Waiting::local && s.cursor >= 0 && s.cursor < static_cast<int>(d.steps.size())) {
        const StepDef& step = d.steps[s.cursor];
        bool comp = s.status == Status::compensating;
        Json local = Json::object();
        local.set("step", Json::string(step.name));
        local.set("function", Json::string(comp ? step.compensation->name : step.action.name));
        local.set("compensate", Json::boolean(comp));
        j.set("local", std::move(local));
    }
    return j;
}

State state_from_json(const Json& j, const Definition& d) {
    State s;
    auto str = [&](const char* k) { const Json* v = j.find(k); return v && v->is_string() ? v->as_string() : std::string(); };
    auto num = [&](const char* k) { const Json* v = j.find(k); return v && v->is_number() ? v->as_number() : 0.0; };
    s.status = parse_enum(str("status"), kStatusNames, Status::failed);
    s.failed_in = parse_enum(str("failed_in"), kStatusNames, Status::running);
    s.cursor = static_cast<int>(num("cursor"));
    s.attempts = static_cast<int>(num("attempts"));
    s.deadline_ms = static_cast<int64_t>(num("deadline_ms"));
    s.waiting = parse_enum(str("waiting"), kWaitingNames, Waiting::none);
    s.reason = str("reason");
    s.cause = str("cause");
    if (const Json* steps = j.find("steps"); steps && steps->is_array())
        for (const auto& st : steps->items())
            s.steps.push_back(parse_enum(st.is_string() ? st.as_string() : std::string(), kStepNames, StepStatus::pending));
    if (s.steps.size() != d.steps.size() || s.cursor < 0 || s.cursor >= static_cast<int>(d.steps.size()) ||
        (s.status == Status::compensating && !d.steps[s.cursor].compensation) ||
        (s.status == Status::failed && s.failed_in == Status::compensating && !d.steps[s.cursor].compensation &&
         s.steps[s.cursor] == StepStatus::compensating))
        throw Error(ErrorCode::internal, "stored saga state does not match its definition");
    return s;
}

namespace {

class Machine {
public:
    Machine(const Definition& d, const State& s, const Event& e) : d_(d), e_(e) { out_.state = s; }

    Decision run() {
        State& s = out_.state;
        from_ = status_name(s.status);
        switch (e_.type) {
            case Event::Type::start: start(); break;
            case Event::Type::reply: reply(); break;
            case Event::Type::deadline: deadline(); break;
            case Event::Type::retry: retry(); break;
            case Event::Type::abort: abort(); break;
        }
        return std::move(out_);
    }

private:
    State& st() { return out_.state; }
    const StepDef& step(int i) const { return d_.steps[i]; }

    void record(const std::string& step_name, const std::string& event, const std::string& reason = {}) {
        out_.history.push_back({from_, status_name(st().status), step_name, event, reason});
        from_ = status_name(st().status);
    }

    int64_t now() const { return e_.now_ms; }

    // Sends (or schedules) the current command of the cursor step: its action when running,
    // its compensation when compensating.
    void issue(int attempt) {
        State& s = st();
        const StepDef& sd = step(s.cursor);
        bool comp = s.status == Status::compensating;
        const Target& t = comp ? *sd.compensation : sd.action;
        s.attempts = attempt;
        if (t.is_function) {
            s.waiting = Waiting::local;
            s.deadline_ms = now();   // due at once: saga_tick runs it
        } else {
            s.waiting = Waiting::reply;
            s.deadline_ms = now() + sd.timeout_ms;
            out_.commands.push_back({s.cursor, comp, t.name, attempt});
        }
    }

    void forward(int i) {
        State& s = st();
        s.status = Status::running;
        s.cursor = i;
        s.steps[i] = StepStatus::running;
        issue(1);
    }

    void finish(Status status) {
        State& s = st();
        s.status = status;
        s.waiting = Waiting::none;
        s.deadline_ms = 0;
        s.attempts = 0;
    }

    void fail(const std::string& reason) {
        State& s = st();
        if (s.status != Status::failed) s.failed_in = s.status;
        s.status = Status::failed;
        s.waiting = Waiting::none;
        s.deadline_ms = 0;
        s.reason = reason;
        if (s.cause.empty()) s.cause = reason;
    }

    bool needs_compensation(int j) const {
        const State& s = out_.state;
        return step(j).compensation &&
               (s.steps[j] == StepStatus::succeeded || s.steps[j] == StepStatus::timed_out);
    }

    // Compensates the newest step that still needs it; compensated when none is left.
    void next_compensation() {
        State& s = st();
        if (s.cause.empty()) s.cause = s.reason;
        s.status = Status::compensating;
        for (int j = static_cast<int>(d_.steps.size()) - 1; j >= 0; --j) {
            if (!needs_compensation(j)) continue;
            s.cursor = j;
            s.steps[j] = StepStatus::compensating;
            issue(1);
            record(step(j).name, "compensate " + step(j).name, s.reason);
            return;
        }
        finish(Status::compensated);
        record(step(s.cursor).name, "nothing left to compensate", s.reason);
    }

    int64_t backoff(int attempt) const {
        return backoff_delay_ms(d_.retry, attempt, e_.random01);
    }

    void start() {
        State& s = st();
        s = State();
        s.steps.assign(d_.steps.size(), StepStatus::pending);
        from_ = "new";
        forward(0);
        record(step(0).name, "saga started");
    }

    void after_success(int i) {
        if (i + 1 < static_cast<int>(d_.steps.size())) {
            forward(i + 1);
            record(step(i).name, step(i).name + " succeeded; next " + step(i + 1).name);
        } else {
            finish(Status::completed);
            st().reason.clear();
            record(step(i).name, step(i).name + " succeeded; saga completed");
        }
    }

    void reject(const std::string& step_name, const std::string& why) {
        out_.result = ReplyResult::rejected;
        fail(why);
        record(step_name, "reply rejected", why);
    }

    void ignore(ReplyResult r, const std::string& step_name, const std::string& why) {
        out_.result = r;
        record(step_name, r == ReplyResult::duplicate ? "duplicate reply ignored" : "late reply ignored", why);
    }

    // A success reported after the saga decided the step failed or timed out: the step did
    // its work, so it has to be undone like the others.
    void late_success(int i, const std::string& desc) {
        State& s = st();
        if (!step(i).compensation) {
            reject(step(i).name, desc + " arrived after compensation began, and step " + step(i).name +
                                     " has no compensation to undo it");
            return;
        }
        out_.result = ReplyResult::late;
        out_.merge_output = true;
        s.steps[i] = StepStatus::succeeded;
        if (s.status == Status::compensated) {
            record(step(i).name, "late success; compensation reopened", desc);
            next_compensation();
        } else {
            record(step(i).name, "late success; step will be compensated", desc);
        }
    }

    void reply() {
        State& s = st();
        const int i = d_.step_index(e_.step);
        if (i < 0)
            throw Error(ErrorCode::saga_unknown_step, "saga reply names an unknown step",
                        "Step \"" + e_.step.substr(0, 80) + "\" is not part of this saga's definition.",
                        "Reply with the \"step\" of the command message.");
        const std::string& name = step(i).name;
        const Outcome o = e_.outcome;
        const std::string desc = "reply " + name + " " + outcome_name(o) + (e_.reason.empty() ? "" : ": " + e_.reason);
        const StepStatus ss = s.steps[i];
        const bool current = i == s.cursor;

        if (s.status == Status::failed) {
            out_.result = ReplyResult::late;
            record(name, "reply while failed; not applied", desc + " (use once.saga_retry to resume)");
            return;
        }

        if (s.status == Status::running) {
            if (current && ss == StepStatus::running) {
                if (o == Outcome::succeeded) {
                    out_.merge_output = true;
                    s.steps[i] = StepStatus::succeeded;
                    s.reason.clear();
                    after_success(i);
                    return;
                }
                if (o == Outcome::failed) {
                    if (s.waiting == Waiting::retry) return ignore(ReplyResult::duplicate, name, desc);
                    if (step(i).kind == StepKind::retriable) {
                        s.reason = desc;
                        if (step(i).max_attempts && s.attempts >= step(i).max_attempts) {
                            fail("retriable step " + name + " failed " + std::to_string(s.attempts) +
                                 " times; last: " + e_.reason);
                            record(name, desc, s.reason);
                            return;
                        }
                        s.waiting = Waiting::retry;
                        s.deadline_ms = now() + backoff(s.attempts);
                        record(name, name + " failed; retry after backoff", desc);
                        return;
                    }
                    s.steps[i] = StepStatus::failed;
                    s.reason = "step " + name + " failed" + (e_.reason.empty() ? "" : ": " + e_.reason);
                    record(name, name + " failed; compensating", s.reason);
                    next_compensation();
                    return;
                }
                return reject(name, desc + " does not fit: the action of " + name + " is pending, not its compensation");
            }
            if (i < s.cursor) {
                if (o == Outcome::succeeded && ss == StepStatus::succeeded) return ignore(ReplyResult::duplicate, name, desc);
                if (o == Outcome::failed && ss == StepStatus::succeeded && step(i).kind == StepKind::retriable)
                    return ignore(ReplyResult::late, name, desc);
            }
            return reject(name, desc + " does not fit: step " + step(s.cursor).name + " is pending");
        }

        // compensating, completed or compensated
        switch (o) {
            case Outcome::succeeded:
                if (ss == StepStatus::succeeded) return ignore(ReplyResult::duplicate, name, desc);
                if (ss == StepStatus::compensating || ss == StepStatus::compensated) {
                    out_.merge_output = true;
                    return ignore(ReplyResult::late, name, desc + "; its compensation was already sent");
                }
                if (ss == StepStatus::failed || ss == StepStatus::timed_out) return late_success(i, desc);
                break;
            case Outcome::failed:
                if (ss == StepStatus::failed) return ignore(ReplyResult::duplicate, name, desc);
                if (ss == StepStatus::timed_out || ss == StepStatus::compensating || ss == StepStatus::compensated)
                    return ignore(ReplyResult::late, name, desc);
                if (ss == StepStatus::succeeded && step(i).kind == StepKind::retriable)
                    return ignore(ReplyResult::late, name, desc);
                break;
            case Outcome::compensated:
                if (ss == StepStatus::compensated) return ignore(ReplyResult::duplicate, name, desc);
                if (s.status == Status::compensating && current && ss == StepStatus::compensating) {
                    s.steps[i] = StepStatus::compensated;
                    record(name, name + " compensated");
                    next_compensation();
                    return;
                }
                break;
            case Outcome::compensation_failed:
                if (ss == StepStatus::compensated) return ignore(ReplyResult::late, name, desc);
                if (s.status == Status::compensating && current && ss == StepStatus::compensating) {
                    if (s.waiting == Waiting::retry) return ignore(ReplyResult::duplicate, name, desc);
                    if (s.attempts >= step(i).compensation->max_attempts) {
                        fail("compensation of " + name + " kept failing (" + std::to_string(s.attempts) +
                             (s.attempts == 1 ? " attempt" : " attempts") + "); last: " + e_.reason);
                        record(name, desc, st().reason);
                        return;
                    }
                    s.waiting = Waiting::retry;
                    s.deadline_ms = now() + backoff(s.attempts);
                    record(name, "compensation of " + name + " failed; retry after backoff", desc);
                    return;
                }
                break;
        }
        reject(name, desc + " does not fit: step " + name + " is " + step_status_name(ss) + " and the saga is " +
                         status_name(s.status));
    }

    void deadline() {
        State& s = st();
        if ((s.status != Status::running && s.status != Status::compensating) || s.deadline_ms > now() ||
            s.waiting == Waiting::local || s.waiting == Waiting::none) {
            out_.result = ReplyResult::duplicate;  // nothing due
            return;
        }
        const StepDef& sd = step(s.cursor);
        const bool comp = s.status == Status::compensating;
        if (s.waiting == Waiting::retry) {
            issue(s.attempts + 1);
            record(sd.name, std::string(comp ? "resend compensation of " : "resend ") + sd.name + " (attempt " +
                                std::to_string(s.attempts) + ")", "retry after backoff");
            return;
        }
        // A reply did not come in time.
        const int max = comp ? sd.compensation->max_attempts : sd.max_attempts;
        if (max == 0 || s.attempts < max) {
            issue(s.attempts + 1);
            record(sd.name, std::string(comp ? "resend compensation of " : "resend ") + sd.name + " (attempt " +
                                std::to_string(s.attempts) + ")", "timeout");
            return;
        }
        const std::string why = std::string(comp ? "compensation of " : "step ") + sd.name + " timed out after " +
                                std::to_string(s.attempts) + " attempts";
        if (comp || sd.kind == StepKind::retriable) {
            fail(why);
            record(sd.name, "timeout", why);
            return;
        }
        s.steps[s.cursor] = StepStatus::timed_out;
        s.reason = why;
        record(sd.name, "timeout; compensating", why);
        next_compensation();
    }

    void retry() {
        State& s = st();
        if (s.status != Status::failed)
            throw Error(ErrorCode::saga_invalid_state, "only a failed saga can be retried",
                        std::string("The saga is ") + status_name(s.status) + ".",
                        s.final() ? "It is finished." : "It is still in progress; saga_tick drives it.");
        const std::string was = s.reason;
        s.reason.clear();
        switch (s.failed_in) {
            case Status::running:
                s.cause.clear();
                forward(s.cursor);
                record(step(s.cursor).name, "retried by hand: resend " + step(s.cursor).name, was);
                return;
            case Status::compensating:
                s.status = Status::compensating;
                s.reason = was;
                if (s.steps[s.cursor] == StepStatus::compensating) {
                    issue(1);
                    record(step(s.cursor).name, "retried by hand: resend compensation of " + step(s.cursor).name, was);
                } else {
                    next_compensation();
                }
                return;
            default:
                finish(s.failed_in);
                record(step(s.cursor).name, "retried by hand: back to " + std::string(status_name(s.failed_in)), was);
                return;
        }
    }

    void abort() {
        State& s = st();
        if (s.final())
            throw Error(ErrorCode::saga_invalid_state, "a finished saga cannot be aborted",
                        std::string("The saga is ") + status_name(s.status) + ".");
        const std::string why = "aborted: " + (e_.reason.empty() ? std::string("by hand") : e_.reason);
        Status phase = s.status == Status::failed ? s.failed_in : s.status;
        if (phase == Status::compensating) {
            if (s.status == Status::compensating) {
                out_.result = ReplyResult::duplicate;
                record(step(s.cursor).name, "abort requested; already compensating", why);
                return;
            }
            s.status = Status::compensating;
            s.reason = why;
            if (s.steps[s.cursor] == StepStatus::compensating) {
                issue(1);
                record(step(s.cursor).name, "abort: resend compensation of " + step(s.cursor).name, why);
            } else {
                next_compensation();
            }
            return;
        }
        if (s.steps[s.cursor] == StepStatus::running)
            // Outcome unknown: the command may have taken effect, so compensate it too.
            s.steps[s.cursor] = s.waiting == Waiting::local ? StepStatus::failed : StepStatus::timed_out;
        s.reason = why;
        s.status = Status::compensating;
        record(step(s.cursor).name, "abort", why);
        next_compensation();
    }

    const Definition& d_;
    const Event& e_;
    Decision out_;
    std::string from_;
};

}  // namespace

Decision decide(const Definition& d, const State& state, const Event& event) {
    if (d.steps.empty()) throw Error(ErrorCode::internal, "saga definition has no steps");
    return Machine(d, state, event).run();
}

}  // namespace once::saga
