// Saga definitions: parsing, validation and the normalised form stored by once.saga_define.
//
// Source format (jsonb):
//   {"steps": [{"name": "reserve_stock",
//               "action": {"topic": "stock.reserve"} | {"function": "cafe.reserve"},
//               "compensation": {"topic": "stock.release", "max_attempts": 5},   (optional)
//               "timeout": "30 seconds",     (optional, default 1 minute)
//               "max_attempts": 3,           (optional: sends of the action before it counts
//                                             as failed; default 3, retriable: unlimited)
//               "kind": "compensable" | "pivot" | "retriable"}, ...],
//    "reply_to": "saga.order.reply",         (optional, default "saga.<name>.reply")
//    "retry": {"base": "1 second", "cap": "5 minutes"}}   (optional backoff policy)
// Kinds must appear in the order compensable*, pivot?, retriable*. Retriable steps have no
// compensation. Every error names the offending step and field.
#pragma once

#include "backoff.hpp"
#include "json.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace once::saga {

// The saga engine reads and writes its JSON with the extension's DOM (core/json.hpp).
using once::Json;

enum class StepKind { compensable, pivot, retriable };
const char* kind_name(StepKind k);

struct Target {
    bool is_function = false;
    std::string name;       // topic or function name (schema.function)
    int max_attempts = 0;   // compensations only: sends before the saga stops in failed
};

struct StepDef {
    std::string name;
    StepKind kind = StepKind::compensable;
    Target action;
    std::optional<Target> compensation;
    int64_t timeout_ms = 60000;
    int max_attempts = 3;   // 0 = unlimited (retriable default)
};

struct Definition {
    std::vector<StepDef> steps;
    std::string reply_to;
    BackoffPolicy retry{1000, 300000};

    // Index of the step with this name, or -1.
    int step_index(std::string_view name) const;
};

constexpr size_t kMaxSteps = 64;
constexpr size_t kMaxStepName = 63;
constexpr size_t kMaxSagaName = 63;
constexpr int64_t kMaxTimeoutMs = 30LL * 24 * 3600 * 1000;

// Validates a saga name: [a-z0-9_.-], 1..63 bytes. Throws saga_invalid_definition.
void validate_saga_name(std::string_view name);

// Parses the source definition (JSON text); throws once::Error(saga_invalid_definition).
Definition parse_definition(std::string_view saga_name, std::string_view json_text);

// The normalised form (every default filled in, durations in milliseconds) and back.
Json to_json(const Definition& d);
Definition from_normalized(const Json& j);

// "30 seconds", "1 minute 30 seconds", "500ms", "2h", or a number of seconds.
// Returns milliseconds; throws saga_invalid_definition naming `field`.
int64_t parse_duration_ms(const Json& value, const std::string& field);

// A Mermaid state diagram of the definition (stateDiagram-v2).
std::string mermaid_diagram(std::string_view saga_name, const Definition& d);

}  // namespace once::saga
