// The http sink's envelope body (sinks/webhook_envelope.hpp).
#include "sinks/webhook_envelope.hpp"

#include "options.hpp"
#include "sinks/sink.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace once::relay;

namespace {

Message keyed() {
    Message m;
    m.id = "0190a000-0000-7000-8000-000000000001";
    m.topic = "orders.created";
    m.key = "order-\"7\"\n";
    m.has_key = true;
    m.payload = R"({"n": 1})";
    m.headers = R"({"h": "v"})";
    m.created_at = "2026-11-26 06:19:12.123456+00";
    return m;
}

Options parse(std::vector<std::string> args) {
    args.insert(args.begin(), "once-relay");
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    return parse_options(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST(WebhookEnvelope, HoldsTheRoutingMetadataBesideThePayload) {
    EXPECT_EQ(webhook_envelope(keyed()),
              R"({"type":"orders.created","timestamp":"2026-11-26T06:19:12.123456+00:00",)"
              R"("id":"0190a000-0000-7000-8000-000000000001","key":"order-\"7\"\n","headers":{"h": "v"},"data":{"n": 1}})");
}

TEST(WebhookEnvelope, NoKeyNoHeadersAndAnUnreadableTimeAreNull) {
    Message m = keyed();
    m.has_key = false;
    m.key.clear();
    m.headers.clear();
    m.created_at = "infinity";
    EXPECT_EQ(webhook_envelope(m), R"({"type":"orders.created","timestamp":null,)"
                                   R"("id":"0190a000-0000-7000-8000-000000000001","key":null,"headers":null,"data":{"n": 1}})");
}

TEST(WebhookEnvelope, TheHttpBodyOptionSelectsItForHttpSinksOnly) {
    EXPECT_FALSE(parse({"--db", "x", "--sink", "http://127.0.0.1:9/hook"}).http_body_envelope);
    EXPECT_FALSE(parse({"--db", "x", "--sink", "http://127.0.0.1:9/hook", "--http-body", "payload"}).http_body_envelope);
    Options o = parse({"--db", "x", "--sink", "http://127.0.0.1:9/hook", "--http-body", "envelope"});
    EXPECT_TRUE(o.http_body_envelope);
    EXPECT_NE(make_sink(o), nullptr);
    try {
        parse({"--db", "x", "--sink", "http://127.0.0.1:9/hook", "--http-body", "json"});
        ADD_FAILURE() << "--http-body json accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("--http-body: \"json\""), std::string::npos) << e.what();
    }
    Options stdout_sink = parse({"--db", "x", "--sink", "stdout:", "--http-body", "envelope"});
    EXPECT_THROW(make_sink(stdout_sink), std::exception);
}
