#include "inbound/inbound_request.hpp"
#include "inbound/inbox_answer.hpp"

#include "core/json.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

namespace {

InboundHeaders standard(const std::string& id = "msg_1") {
    return {{"webhook-id", id}, {"webhook-timestamp", "1700000000"}, {"webhook-signature", "v1,x"},
            {"content-type", "application/json"}};
}

once::Json headers_of(const InboundParse& p) { return once::Json::parse(p.message->headers); }

}  // namespace

TEST(InboundRequest, Paths) {
    EXPECT_TRUE(is_webhook_path("/webhooks"));
    EXPECT_TRUE(is_webhook_path("/webhooks/"));
    EXPECT_TRUE(is_webhook_path("/webhooks/invoice.paid"));
    EXPECT_FALSE(is_webhook_path("/webhooks/a/b"));
    EXPECT_FALSE(is_webhook_path("/webhooksx"));
    EXPECT_FALSE(is_webhook_path("/"));
    EXPECT_FALSE(is_webhook_path("/metrics"));
    EXPECT_EQ(parse_inbound_request("/other", standard(), "{}").status, 404);
}

TEST(InboundRequest, StandardWebhookTopicFromThePath) {
    auto p = parse_inbound_request("/webhooks/invoice.paid", standard("evt_1"), R"({"amount": 12})");
    ASSERT_TRUE(p.message) << p.reason;
    EXPECT_EQ(p.message->id, "evt_1");
    EXPECT_EQ(p.message->topic, "invoice.paid");
    EXPECT_EQ(p.message->payload, R"({"amount": 12})");
    EXPECT_EQ(headers_of(p).find("webhook-timestamp")->as_string(), "1700000000");
}

TEST(InboundRequest, StandardWebhookTopicFromTheBodysType) {
    auto p = parse_inbound_request("/webhooks", standard(), R"({"type": "invoice.paid", "data": {}})");
    ASSERT_TRUE(p.message) << p.reason;
    EXPECT_EQ(p.message->topic, "invoice.paid");
    // the path wins over the body
    p = parse_inbound_request("/webhooks/a.b", standard(), R"({"type": "invoice.paid"})");
    ASSERT_TRUE(p.message);
    EXPECT_EQ(p.message->topic, "a.b");
    EXPECT_EQ(parse_inbound_request("/webhooks", standard(), R"({"data": {}})").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks", standard(), R"({"type": 3})").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks", standard(), R"([1])").status, 400);
}

TEST(InboundRequest, RefusesWhatTheInboxWouldRefuse) {
    EXPECT_EQ(parse_inbound_request("/webhooks/a..b", standard(), "{}").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks/order.*", standard(), "{}").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks", standard(), R"({"type": "com.example/x"})").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks/a", standard(std::string(256, 'i')), "{}").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks/a", standard("a\x01"), "{}").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks/a", standard(), "not json").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks/a", standard(), "").status, 400);
    auto h = standard();
    h["content-type"] = "text/plain";
    EXPECT_EQ(parse_inbound_request("/webhooks/a", h, "{}").status, 415);
    h["content-type"] = "application/vnd.api+json; charset=utf-8";
    EXPECT_TRUE(parse_inbound_request("/webhooks/a", h, "{}").message);
    h.erase("webhook-id");
    EXPECT_EQ(parse_inbound_request("/webhooks/a", h, "{}").status, 400);
}

TEST(InboundRequest, TraceContextIsPassedOn) {
    auto h = standard();
    h["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto p = parse_inbound_request("/webhooks/a", h, "{}");
    ASSERT_TRUE(p.message);
    EXPECT_EQ(headers_of(p).find("traceparent")->as_string(), h["traceparent"]);
}

TEST(InboundRequest, BinaryCloudEvent) {
    auto h = standard("ev-1");
    h["ce-specversion"] = "1.0";
    h["ce-id"] = "ev-1";
    h["ce-type"] = "order.created";
    h["ce-source"] = "/shop";
    h["ce-subject"] = "order%2042";
    auto p = parse_inbound_request("/webhooks", h, R"({"n": 1})");
    ASSERT_TRUE(p.message) << p.reason;
    EXPECT_EQ(p.message->id, "ev-1");
    EXPECT_EQ(p.message->topic, "order.created");
    EXPECT_EQ(p.message->payload, R"({"n": 1})");
    auto inbox = headers_of(p);
    EXPECT_EQ(inbox.find("ce-source")->as_string(), "/shop");
    EXPECT_EQ(inbox.find("ce-subject")->as_string(), "order 42");
    EXPECT_EQ(inbox.find("ce-id"), nullptr);
    EXPECT_EQ(inbox.find("ce-type"), nullptr);

    auto unsigned_id = h;
    unsigned_id["ce-id"] = "ev-2";   // the id must be the signed webhook-id
    EXPECT_EQ(parse_inbound_request("/webhooks", unsigned_id, "{}").status, 400);
    auto no_source = h;
    no_source.erase("ce-source");
    EXPECT_EQ(parse_inbound_request("/webhooks", no_source, "{}").status, 400);
    auto bad_version = h;
    bad_version["ce-specversion"] = "0.3";
    EXPECT_EQ(parse_inbound_request("/webhooks", bad_version, "{}").status, 400);
    auto bad_encoding = h;
    bad_encoding["ce-subject"] = "a%2";
    EXPECT_EQ(parse_inbound_request("/webhooks", bad_encoding, "{}").status, 400);
    auto xml = h;
    xml["content-type"] = "application/xml";
    EXPECT_EQ(parse_inbound_request("/webhooks", xml, "<a/>").status, 415);
    EXPECT_EQ(parse_inbound_request("/webhooks/order.created", h, "{}").status, 400);
}

TEST(InboundRequest, StructuredCloudEvent) {
    auto h = standard("ev-9");
    h["content-type"] = "application/cloudevents+json; charset=utf-8";
    std::string body = R"({"specversion":"1.0","id":"ev-9","type":"order.created","source":"/shop","subject":"o-1",)"
                       R"("datacontenttype":"application/json","data":{"big":12345678901234567890123,"x":[1.50,"\u00e9"]}})";
    auto p = parse_inbound_request("/webhooks", h, body);
    ASSERT_TRUE(p.message) << p.reason;
    EXPECT_EQ(p.message->id, "ev-9");
    EXPECT_EQ(p.message->topic, "order.created");
    // numbers exactly as sent
    EXPECT_EQ(p.message->payload, R"({"big":12345678901234567890123,"x":[1.50,"é"]})");
    auto inbox = headers_of(p);
    EXPECT_EQ(inbox.find("ce-source")->as_string(), "/shop");
    EXPECT_EQ(inbox.find("ce-subject")->as_string(), "o-1");
    EXPECT_EQ(inbox.find("ce-datacontenttype")->as_string(), "application/json");

    auto no_data = R"({"specversion":"1.0","id":"ev-9","type":"t","source":"/s"})";
    ASSERT_TRUE(parse_inbound_request("/webhooks", h, no_data).message);
    EXPECT_EQ(parse_inbound_request("/webhooks", h, no_data).message->payload, "null");
    EXPECT_EQ(parse_inbound_request("/webhooks", h, R"({"specversion":"1.0","id":"ev-8","type":"t","source":"/s"})").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks", h, R"({"specversion":"1.0","id":"ev-9","source":"/s"})").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks", h, R"({"specversion":"0.3","id":"ev-9","type":"t","source":"/s"})").status, 400);
    EXPECT_EQ(parse_inbound_request("/webhooks", h, R"({"specversion":"1.0","id":"ev-9","type":"t","source":"/s","data_base64":"AA=="})").status, 415);
    EXPECT_EQ(parse_inbound_request("/webhooks", h, R"({"specversion":"1.0","id":"ev-9","type":"t","source":"/s","datacontenttype":"text/plain","data":"x"})").status, 415);
    EXPECT_EQ(parse_inbound_request("/webhooks", h, "[]").status, 400);
}

TEST(InboxAnswer, EachOutcomeItsStatus) {
    Outcome o;
    o.verdict = Verdict::delivered;
    EXPECT_EQ(answer_for(o).status, 200);
    EXPECT_EQ(answer_for(o).retry_after_s, 0);
    o.verdict = Verdict::dead;
    EXPECT_EQ(answer_for(o).status, 422);
    o.verdict = Verdict::retry;
    o.error = "handler failed in the inbox database: boom (SQLSTATE P0001)";
    auto a = answer_for(o);
    EXPECT_EQ(a.status, 503);
    EXPECT_GT(a.retry_after_s, 0);
    EXPECT_EQ(a.body.find("boom"), std::string::npos);   // the handler's error stays in the log
    o.retry_after = Millis(2500);
    EXPECT_EQ(answer_for(o).retry_after_s, 3);
    EXPECT_EQ(refusal(401, "no \"matching\" signature").body, R"({"error":"no \"matching\" signature"})");
}
