// The http sink's envelope body (sinks/webhook_envelope.hpp).
#include "sinks/webhook_envelope.hpp"

#include <gtest/gtest.h>

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
