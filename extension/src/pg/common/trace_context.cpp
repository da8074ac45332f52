// Trace context on messages; the model and why: trace_context.hpp.
#include "pg/common/trace_context.hpp"

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/trace_context.hpp"
#include "pg/common/convert.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/settings.hpp"

extern "C" {
#include "utils/guc.h"
}

#include <array>
#include <cstring>
#include <strings.h>

namespace once::pg {
namespace {

bool named(const std::string& name, const char* wanted) { return strcasecmp(name.c_str(), wanted) == 0; }

[[noreturn]] void invalid(const char* header, const std::string& why) {
    throw Error(ErrorCode::invalid_trace_context, std::string("invalid ") + header + " header", why + ".",
                "Pass a W3C trace context (00-<32 hex>-<16 hex>-<2 hex>), or set it once per transaction "
                "with SET LOCAL once.traceparent.");
}

void set_setting(const char* name, const std::string& value) {
    (void)set_config_option(name, value.c_str(), PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

}  // namespace

std::string current_traceparent() { return traceparent_setting ? traceparent_setting : ""; }

Jsonb* with_trace_context(Jsonb* headers, const Json* parsed) {
    const std::string parent = current_traceparent();
    const std::string state = tracestate_setting ? tracestate_setting : "";
    if (headers == nullptr && parent.empty()) return nullptr;
    Json parsed_here = Json::object();
    if (headers != nullptr && parsed == nullptr) parsed_here = Json::parse(jsonb_text(PointerGetDatum(headers)));
    const Json& given = headers != nullptr && parsed != nullptr ? *parsed : parsed_here;
    bool has_parent = false, has_state = false;
    for (const Json::Member& m : given.members()) {
        if (named(m.first, "traceparent")) {
            std::string why = "its value is not a string";
            if (!m.second.is_string() || !parse_traceparent(m.second.as_string(), &why)) invalid("traceparent", why);
            has_parent = true;
        } else if (named(m.first, "tracestate")) {
            std::string why = "its value is not a string";
            if (!m.second.is_string() || !valid_tracestate(m.second.as_string(), &why)) invalid("tracestate", why);
            has_state = true;
        }
    }
    if (parent.empty() || has_parent) return headers;
    Json h = given;
    h.set("traceparent", Json::string(parent));
    if (!state.empty() && !has_state) h.set("tracestate", Json::string(state));
    return DatumGetJsonbP(jsonb_datum(h));
}

std::string child_of(const std::string& parent) {
    auto t = parse_traceparent(parent);
    if (!t) return {};
    std::array<uint8_t, 8> span{};
    if (!pg_strong_random(span.data(), span.size())) throw Error(ErrorCode::internal, "no random bytes for a span id");
    return child_traceparent(*t, span);
}

int begin_trace_scope(Datum headers) {
    int level = pg_call([] { return NewGUCNestLevel(); });
    if (headers == 0) return level;
    Json h = Json::parse(jsonb_text(headers));
    std::string parent, state;
    for (const Json::Member& m : h.members()) {
        if (!m.second.is_string()) continue;
        if (named(m.first, "traceparent") && parse_traceparent(m.second.as_string())) parent = m.second.as_string();
        if (named(m.first, "tracestate") && valid_tracestate(m.second.as_string())) state = m.second.as_string();
    }
    // A message without a (valid) context runs its handlers without one, not under the caller's.
    pg_call([&] {
        set_setting("once.traceparent", parent);
        set_setting("once.tracestate", parent.empty() ? std::string() : state);
    });
    return level;
}

void end_trace_scope(int level) {
    pg_call([&] { AtEOXact_GUC(true, level); });
}

}  // namespace once::pg
