#include "saga_definition.hpp"

#include "error.hpp"
#include "topic.hpp"

#include <cctype>
#include <cmath>
#include <set>

namespace once::saga {

const char* kind_name(StepKind k) {
    switch (k) {
        case StepKind::compensable: return "compensable";
        case StepKind::pivot: return "pivot";
        case StepKind::retriable: return "retriable";
    }
    return "?";
}

int Definition::step_index(std::string_view name) const {
    for (size_t i = 0; i < steps.size(); ++i)
        if (steps[i].name == name) return static_cast<int>(i);
    return -1;
}

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what, const std::string& detail = {},
                      const std::string& hint = {}) {
    throw Error(ErrorCode::saga_invalid_definition, "invalid saga definition: " + where + ": " + what,
                detail, hint.empty() ? "See docs/sagas.md for the definition format." : hint);
}

std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (char c : s.substr(0, 80)) out += c;
    if (s.size() > 80) out += "...";
    return out + "\"";
}

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

// A plain SQL function name, optionally schema-qualified: [schema.]name, unquoted identifiers.
bool valid_function_name(std::string_view name) {
    if (name.empty() || name.size() > 127) return false;
    int parts = 0;
    size_t i = 0;
    while (i <= name.size()) {
        size_t dot = name.find('.', i);
        std::string_view part = name.substr(i, dot == std::string_view::npos ? std::string_view::npos : dot - i);
        if (part.empty() || part.size() > 63 || !is_ident_start(part[0])) return false;
        for (char c : part)
            if (!is_ident_char(c)) return false;
        ++parts;
        if (dot == std::string_view::npos) break;
        i = dot + 1;
    }
    return parts <= 2;
}

int positive_int(const Json& v, const std::string& where, const std::string& field, int max) {
    if (!v.is_number() || v.as_number() != std::floor(v.as_number()) || v.as_number() < 1 || v.as_number() > max)
        bad(where, "\"" + field + "\" must be an integer between 1 and " + std::to_string(max),
            "It was " + v.dump().substr(0, 80) + ".");
    return static_cast<int>(v.as_number());
}

Target parse_target(const Json& v, const std::string& where, const std::string& field, bool allow_attempts) {
    if (!v.is_object())
        bad(where, "\"" + field + "\" must be an object with \"topic\" or \"function\"",
            std::string("It was a ") + Json::type_name(v.type()) + ".",
            "Write {\"topic\": \"stock.reserve\"} or {\"function\": \"cafe.send_notification\"}.");
    const Json* topic = v.find("topic");
    const Json* function = v.find("function");
    if ((topic != nullptr) == (function != nullptr))
        bad(where, "\"" + field + "\" needs exactly one of \"topic\" and \"function\"", {},
            "Write {\"topic\": \"stock.reserve\"} or {\"function\": \"cafe.send_notification\"}.");
    for (const auto& m : v.members())
        if (m.first != "topic" && m.first != "function" && !(allow_attempts && m.first == "max_attempts"))
            bad(where, "unknown field " + quoted(m.first) + " in \"" + field + "\"");
    Target t;
    if (topic) {
        if (!topic->is_string()) bad(where, "\"" + field + ".topic\" must be a string");
        try {
            validate_topic(topic->as_string());
        } catch (const Error& e) {
            bad(where, "\"" + field + ".topic\" is not a valid topic: " + e.what(),
                "It was " + quoted(topic->as_string()) + ".");
        }
        t.name = topic->as_string();
    } else {
        if (!function->is_string() || !valid_function_name(function->as_string()))
            bad(where, "\"" + field + ".function\" must be a function name such as \"schema.name\"",
                "It was " + function->dump().substr(0, 80) + ".",
                "The function takes (saga_id text, data jsonb) and returns jsonb.");
        t.is_function = true;
        t.name = function->as_string();
    }
    if (const Json* a = v.find("max_attempts")) t.max_attempts = positive_int(*a, where, field + ".max_attempts", 1000);
    return t;
}

double unit_ms(std::string_view unit) {
    static const std::pair<const char*, double> units[] = {
        {"ms", 1}, {"msec", 1}, {"msecs", 1}, {"millisecond", 1}, {"milliseconds", 1},
        {"s", 1000}, {"sec", 1000}, {"secs", 1000}, {"second", 1000}, {"seconds", 1000},
        {"m", 60000}, {"min", 60000}, {"mins", 60000}, {"minute", 60000}, {"minutes", 60000},
        {"h", 3600000}, {"hour", 3600000}, {"hours", 3600000},
        {"d", 86400000}, {"day", 86400000}, {"days", 86400000}};
    for (const auto& u : units)
        if (unit == u.first) return u.second;
    return 0;
}

}  // namespace

void validate_saga_name(std::string_view name) {
    bool ok = !name.empty() && name.size() <= kMaxSagaName;
    for (char c : name)
        if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
              c == '_' || c == '-' || c == '.'))
            ok = false;
    if (!ok)
        throw Error(ErrorCode::saga_invalid_definition, "invalid saga name",
                    "The name was " + quoted(name) + ".",
                    "Use 1 to 63 characters from a-z, 0-9, '_', '-' and '.', e.g. \"campus_cafe_order\".");
}

int64_t parse_duration_ms(const Json& value, const std::string& field) {
    double ms = 0;
    if (value.is_number()) {
        ms = value.as_number() * 1000;
    } else if (value.is_string()) {
        const std::string& s = value.as_string();
        size_t i = 0;
        int pairs = 0;
        for (;;) {
            while (i < s.size() && s[i] == ' ') ++i;
            if (i >= s.size()) break;
            size_t start = i;
            while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
            std::string num = s.substr(start, i - start);
            while (i < s.size() && s[i] == ' ') ++i;
            size_t ustart = i;
            while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
            std::string unit = s.substr(ustart, i - ustart);
            double u = unit_ms(unit);
            char* end = nullptr;
            double n = num.empty() ? -1 : std::strtod(num.c_str(), &end);
            if (num.empty() || end != num.c_str() + num.size() || u == 0 || !(n >= 0))
                bad(field, "must be a duration such as \"30 seconds\" or \"1 minute 30 seconds\"",
                    "It was " + quoted(s) + ".");
            ms += n * u;
            ++pairs;
        }
        if (pairs == 0)
            bad(field, "must be a duration such as \"30 seconds\"", "It was " + quoted(s) + ".");
    } else {
        bad(field, "must be a duration such as \"30 seconds\" (or a number of seconds)",
            std::string("It was a ") + Json::type_name(value.type()) + ".");
    }
    if (!(ms >= 1) || ms > static_cast<double>(kMaxTimeoutMs))
        bad(field, "must be between 1 millisecond and 30 days", "It was " + value.dump().substr(0, 80) + ".");
    return static_cast<int64_t>(ms);
}

Definition parse_definition(std::string_view saga_name, std::string_view json_text) {
    validate_saga_name(saga_name);
    Json root;
    try {
        root = Json::parse(json_text);
    } catch (const Error& e) {
        bad("definition", e.what(), e.detail());
    }
    if (!root.is_object())
        bad("definition", "must be a JSON object with a \"steps\" array",
            std::string("It was a ") + Json::type_name(root.type()) + ".");
    for (const auto& m : root.members())
        if (m.first != "steps" && m.first != "reply_to" && m.first != "retry")
            bad("definition", "unknown field " + quoted(m.first), {},
                "Top-level fields are \"steps\", \"reply_to\" and \"retry\".");
    Definition d;
    const Json* steps = root.find("steps");
    if (!steps || !steps->is_array() || steps->items().empty())
        bad("definition", "\"steps\" must be a non-empty array of steps");
    if (steps->items().size() > kMaxSteps)
        bad("definition", "too many steps", std::to_string(steps->items().size()) + " steps; at most " +
                                                std::to_string(kMaxSteps) + " are allowed.");

    std::set<std::string> names;
    int phase = 0;  // 0 compensable, 1 pivot seen, 2 retriable seen
    for (size_t i = 0; i < steps->items().size(); ++i) {
        const Json& s = steps->items()[i];
        std::string where = "step " + std::to_string(i + 1);
        if (!s.is_object()) bad(where, "must be an object", std::string("It was a ") + Json::type_name(s.type()) + ".");
        const Json* name = s.find("name");
        if (!name || !name->is_string()) bad(where, "\"name\" is required and must be a string");
        StepDef step;
        step.name = name->as_string();
        bool ok = !step.name.empty() && step.name.size() <= kMaxStepName;
        for (char c : step.name)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) ok = false;
        if (!ok)
            bad(where, "\"name\" must be 1 to 63 characters from A-Z, a-z, 0-9, '_' and '-'",
                "It was " + quoted(step.name) + ".", "Idempotency keys are \"<saga_id>:<step>\", so ':' is not allowed.");
        where += " (" + quoted(step.name) + ")";
        if (!names.insert(step.name).second) bad(where, "step names must be unique");
        for (const auto& m : s.members())
            if (m.first != "name" && m.first != "action" && m.first != "compensation" && m.first != "timeout" &&
                m.first != "max_attempts" && m.first != "kind")
                bad(where, "unknown field " + quoted(m.first), {},
                    "Step fields are name, action, compensation, timeout, max_attempts and kind.");
        if (const Json* kind = s.find("kind")) {
            std::string k = kind->is_string() ? kind->as_string() : kind->dump();
            if (k == "compensable") step.kind = StepKind::compensable;
            else if (k == "pivot") step.kind = StepKind::pivot;
            else if (k == "retriable") step.kind = StepKind::retriable;
            else bad(where, "\"kind\" must be \"compensable\", \"pivot\" or \"retriable\"", "It was " + quoted(k) + ".");
        }
        const Json* action = s.find("action");
        if (!action) bad(where, "\"action\" is required");
        step.action = parse_target(*action, where, "action", false);
        if (const Json* c = s.find("compensation"); c && !c->is_null()) {
            step.compensation = parse_target(*c, where, "compensation", true);
            if (step.compensation->max_attempts == 0) step.compensation->max_attempts = 5;
        }
        if (const Json* t = s.find("timeout")) step.timeout_ms = parse_duration_ms(*t, where + ": \"timeout\"");
        step.max_attempts = step.kind == StepKind::retriable ? 0 : 3;
        if (const Json* a = s.find("max_attempts")) step.max_attempts = positive_int(*a, where, "max_attempts", 1000);

        switch (step.kind) {
            case StepKind::compensable:
                if (phase != 0)
                    bad(where, "a compensable step must come before the pivot and the retriable steps", {},
                        "Order the steps compensable..., pivot, retriable....");
                break;
            case StepKind::pivot:
                if (phase != 0) bad(where, "only one pivot is allowed, before the retriable steps");
                phase = 1;
                break;
            case StepKind::retriable:
                if (step.compensation)
                    bad(where, "a retriable step is never compensated; remove its \"compensation\"");
                phase = 2;
                break;
        }
        d.steps.push_back(std::move(step));
    }

    if (const Json* r = root.find("reply_to")) {
        if (!r->is_string()) bad("definition", "\"reply_to\" must be a topic string");
        try {
            validate_topic(r->as_string());
        } catch (const Error& e) {
            bad("definition", std::string("\"reply_to\" is not a valid topic: ") + e.what(),
                "It was " + quoted(r->as_string()) + ".");
        }
        d.reply_to = r->as_string();
    } else {
        d.reply_to = "saga." + std::string(saga_name) + ".reply";
        for (char& c : d.reply_to)
            if (c != '.' && !std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
    }
    if (const Json* r = root.find("retry")) {
        if (!r->is_object()) bad("definition", "\"retry\" must be an object {\"base\": ..., \"cap\": ...}");
        for (const auto& m : r->members())
            if (m.first != "base" && m.first != "cap") bad("definition", "unknown field " + quoted(m.first) + " in \"retry\"");
        if (const Json* b = r->find("base")) d.retry.base_ms = parse_duration_ms(*b, "definition: \"retry.base\"");
        if (const Json* c = r->find("cap")) d.retry.cap_ms = parse_duration_ms(*c, "definition: \"retry.cap\"");
        if (d.retry.cap_ms < d.retry.base_ms) bad("definition", "\"retry.cap\" must not be smaller than \"retry.base\"");
    }
    return d;
}

namespace {
Json target_json(const Target& t) {
    Json j = Json::object();
    j.set(t.is_function ? "function" : "topic", Json::string(t.name));
    if (t.max_attempts) j.set("max_attempts", Json::number(t.max_attempts));
    return j;
}
Target target_from(const Json& j) {
    Target t;
    if (const Json* f = j.find("function")) { t.is_function = true; t.name = f->as_string(); }
    else if (const Json* tp = j.find("topic")) t.name = tp->as_string();
    if (const Json* a = j.find("max_attempts")) t.max_attempts = static_cast<int>(a->as_number());
    return t;
}
[[noreturn]] void corrupt(const std::string& what) {
    throw Error(ErrorCode::internal, "stored saga definition is corrupt: " + what);
}
}  // namespace

Json to_json(const Definition& d) {
    Json steps = Json::array();
    for (const auto& s : d.steps) {
        Json j = Json::object();
        j.set("name", Json::string(s.name));
        j.set("kind", Json::string(kind_name(s.kind)));
        j.set("action", target_json(s.action));
        if (s.compensation) j.set("compensation", target_json(*s.compensation));
        j.set("timeout_ms", Json::number(static_cast<double>(s.timeout_ms)));
        j.set("max_attempts", Json::number(s.max_attempts));
        steps.push(std::move(j));
    }
    Json root = Json::object();
    root.set("steps", std::move(steps));
    root.set("reply_to", Json::string(d.reply_to));
    Json retry = Json::object();
    retry.set("base_ms", Json::number(static_cast<double>(d.retry.base_ms)));
    retry.set("cap_ms", Json::number(static_cast<double>(d.retry.cap_ms)));
    root.set("retry", std::move(retry));
    return root;
}

Definition from_normalized(const Json& j) {
    Definition d;
    const Json* steps = j.find("steps");
    if (!steps || !steps->is_array() || steps->items().empty() || steps->items().size() > kMaxSteps)
        corrupt("no steps");
    for (const auto& s : steps->items()) {
        StepDef st;
        const Json* name = s.find("name");
        const Json* kind = s.find("kind");
        const Json* action = s.find("action");
        if (!name || !kind || !action || !name->is_string() || !kind->is_string() || !action->is_object())
            corrupt("step without name, kind or action");
        st.name = name->as_string();
        const std::string& k = kind->as_string();
        st.kind = k == "pivot" ? StepKind::pivot : k == "retriable" ? StepKind::retriable : StepKind::compensable;
        st.action = target_from(*action);
        if (const Json* c = s.find("compensation"); c && c->is_object()) {
            st.compensation = target_from(*c);
            if (st.compensation->max_attempts < 1) st.compensation->max_attempts = 1;
        }
        if (const Json* t = s.find("timeout_ms")) st.timeout_ms = static_cast<int64_t>(t->as_number());
        if (const Json* a = s.find("max_attempts")) st.max_attempts = static_cast<int>(a->as_number());
        d.steps.push_back(std::move(st));
    }
    if (const Json* r = j.find("reply_to")) d.reply_to = r->as_string();
    if (const Json* r = j.find("retry")) {
        if (const Json* b = r->find("base_ms")) d.retry.base_ms = static_cast<int64_t>(b->as_number());
        if (const Json* c = r->find("cap_ms")) d.retry.cap_ms = static_cast<int64_t>(c->as_number());
    }
    return d;
}

std::string mermaid_diagram(std::string_view saga_name, const Definition& d) {
    if (d.steps.empty()) throw Error(ErrorCode::internal, "saga definition has no steps");
    std::string out = "---\ntitle: saga " + std::string(saga_name) + "\n---\nstateDiagram-v2\n";
    auto id = [](const std::string& step) {
        std::string s;
        for (char c : step) s += (c == '-') ? '_' : c;
        return s;
    };
    auto label = [](const Target& t) { return (t.is_function ? "function " : "topic ") + t.name; };
    out += "    [*] --> " + id(d.steps[0].name) + "\n";
    for (size_t i = 0; i < d.steps.size(); ++i) {
        const StepDef& s = d.steps[i];
        std::string sid = id(s.name);
        // Two descriptions of one state render as two lines.
        out += "    " + sid + " : " + s.name + " (" + kind_name(s.kind) + ")\n";
        out += "    " + sid + " : " + label(s.action) + "\n";
        std::string next = i + 1 < d.steps.size() ? id(d.steps[i + 1].name) : "completed";
        out += "    " + sid + " --> " + next + " : succeeded\n";
        if (s.kind == StepKind::retriable) {
            out += "    " + sid + " --> " + sid + " : failed / timeout (retry with backoff)\n";
            continue;
        }
        // Failure: compensate the previous steps, newest first. A step that timed out may have
        // taken effect, so it is compensated itself.
        int back = -1;
        for (int j = static_cast<int>(i) - 1; j >= 0; --j)
            if (d.steps[j].compensation) { back = j; break; }
        std::string undo_prev = back >= 0 ? "undo_" + id(d.steps[back].name) : std::string("compensated");
        if (s.compensation) {
            out += "    " + sid + " --> " + undo_prev + " : failed\n";
            out += "    " + sid + " --> undo_" + sid + " : timed out " + std::to_string(s.max_attempts) + "x\n";
        } else {
            out += "    " + sid + " --> " + undo_prev + " : failed / timed out " + std::to_string(s.max_attempts) + "x\n";
        }
    }
    for (int j = static_cast<int>(d.steps.size()) - 1; j >= 0; --j) {
        const StepDef& s = d.steps[j];
        if (!s.compensation) continue;
        std::string uid = "undo_" + id(s.name);
        out += "    " + uid + " : compensate " + s.name + "\n";
        out += "    " + uid + " : " + label(*s.compensation) + "\n";
        int back = -1;
        for (int k = j - 1; k >= 0; --k)
            if (d.steps[k].compensation) { back = k; break; }
        out += "    " + uid + " --> " + (back >= 0 ? "undo_" + id(d.steps[back].name) : std::string("compensated")) +
               " : compensated\n";
        out += "    " + uid + " --> failed : compensation kept failing\n";
    }
    out += "    completed --> [*]\n    compensated --> [*]\n    failed --> [*] : a person acts (saga_retry / saga_abort)\n";
    return out;
}

}  // namespace once::saga
