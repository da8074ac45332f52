#include "core/error.hpp"
#include "core/saga_definition.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace once::saga;

namespace {

const char* kCafe = R"({"steps": [
  {"name": "reserve_stock",   "action": {"topic": "stock.reserve"},   "compensation": {"topic": "stock.release"},  "timeout": "30 seconds", "max_attempts": 3},
  {"name": "capture_payment", "action": {"topic": "payment.capture"}, "compensation": {"topic": "payment.refund"}, "timeout": "30 seconds", "kind": "pivot"},
  {"name": "notify",          "action": {"function": "cafe.send_notification"}, "kind": "retriable"}
]})";

std::string error_of(const std::string& json, once::ErrorCode expected = once::ErrorCode::saga_invalid_definition) {
    try {
        parse_definition("order", json);
    } catch (const once::Error& e) {
        EXPECT_EQ(e.code(), expected) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "accepted: " << json;
    return {};
}

}  // namespace

TEST(SagaDefinition, ParsesTheCampusCafeOrder) {
    Definition d = parse_definition("campus_cafe_order", kCafe);
    ASSERT_EQ(d.steps.size(), 3u);
    EXPECT_EQ(d.steps[0].kind, StepKind::compensable);
    EXPECT_EQ(d.steps[0].timeout_ms, 30000);
    EXPECT_EQ(d.steps[0].max_attempts, 3);
    EXPECT_EQ(d.steps[0].compensation->name, "stock.release");
    EXPECT_EQ(d.steps[0].compensation->max_attempts, 5);
    EXPECT_EQ(d.steps[1].kind, StepKind::pivot);
    EXPECT_TRUE(d.steps[2].action.is_function);
    EXPECT_EQ(d.steps[2].max_attempts, 0);  // retriable: until it succeeds
    EXPECT_EQ(d.reply_to, "saga.campus_cafe_order.reply");
}

TEST(SagaDefinition, NormalisedFormRoundTrips) {
    Definition d = parse_definition("order", kCafe);
    Json j = to_json(d);
    Definition back = from_normalized(Json::parse(j.dump()));
    EXPECT_EQ(to_json(back).dump(), j.dump());
}

TEST(SagaDefinition, Durations) {
    EXPECT_EQ(parse_duration_ms(Json::string("1 minute 30 seconds"), "t"), 90000);
    EXPECT_EQ(parse_duration_ms(Json::string("500ms"), "t"), 500);
    EXPECT_EQ(parse_duration_ms(Json::string("2h"), "t"), 7200000);
    EXPECT_EQ(parse_duration_ms(Json::number(1.5), "t"), 1500);
    EXPECT_THROW(parse_duration_ms(Json::string("soon"), "t"), once::Error);
    EXPECT_THROW(parse_duration_ms(Json::string("0 seconds"), "t"), once::Error);
    EXPECT_THROW(parse_duration_ms(Json::string("31 days"), "t"), once::Error);
    EXPECT_THROW(parse_duration_ms(Json::boolean(true), "t"), once::Error);
}

TEST(SagaDefinition, ErrorsNameTheStepAndField) {
    EXPECT_NE(error_of(R"({"steps": []})").find("\"steps\""), std::string::npos);
    EXPECT_NE(error_of(R"([1])").find("JSON object"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a"}]})").find("step 1 (\"a\"): \"action\" is required"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}}, {"name": "a", "action": {"topic": "y"}}]})")
                  .find("step 2 (\"a\"): step names must be unique"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a:b", "action": {"topic": "x"}}]})").find("step 1"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "bad topic"}}]})").find("action.topic"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x", "function": "f"}}]})").find("exactly one"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"function": "drop table"}}]})").find("action.function"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}, "kind": "maybe"}]})").find("\"kind\""), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}, "timeout": "soon"}]})").find("\"timeout\""), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}, "max_attempts": 0}]})").find("max_attempts"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}, "colour": 1}]})").find("unknown field"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}, "kind": "retriable", "compensation": {"topic": "y"}}]})")
                  .find("never compensated"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "p", "action": {"topic": "x"}, "kind": "pivot"}, {"name": "c", "action": {"topic": "y"}}]})")
                  .find("step 2 (\"c\"): a compensable step must come before"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "p", "action": {"topic": "x"}, "kind": "pivot"}, {"name": "q", "action": {"topic": "y"}, "kind": "pivot"}]})")
                  .find("only one pivot"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}}], "reply_to": "a..b"})").find("reply_to"), std::string::npos);
    EXPECT_NE(error_of(R"({"steps": [{"name": "a", "action": {"topic": "x"}}], "retry": {"base": "1 minute", "cap": "1 second"}})").find("retry.cap"), std::string::npos);
    EXPECT_NE(error_of("{\"steps\": [").find("invalid JSON"), std::string::npos);
}

TEST(SagaDefinition, SagaNames) {
    EXPECT_NO_THROW(validate_saga_name("campus_cafe.order-v2"));
    for (const char* n : {"", "Order", "a b", "o:r"}) EXPECT_THROW(validate_saga_name(n), once::Error) << n;
    EXPECT_THROW(validate_saga_name(std::string(64, 'a')), once::Error);
}

TEST(SagaDefinition, MermaidDiagram) {
    Definition d = parse_definition("order", kCafe);
    std::string m = mermaid_diagram("order", d);
    EXPECT_NE(m.find("stateDiagram-v2"), std::string::npos);
    EXPECT_NE(m.find("reserve_stock --> capture_payment : succeeded"), std::string::npos);
    EXPECT_NE(m.find("capture_payment --> undo_reserve_stock : failed\n"), std::string::npos);
    EXPECT_NE(m.find("capture_payment --> undo_capture_payment : timed out 3x"), std::string::npos);
    EXPECT_NE(m.find("notify --> notify : failed / timeout (retry with backoff)"), std::string::npos);
    EXPECT_NE(m.find("undo_reserve_stock --> compensated"), std::string::npos);
}

// Fuzz: random mutations of a valid definition and random byte strings either parse or throw
// once::Error, never anything else (no crash, no std::exception of another kind).
TEST(SagaDefinition, FuzzNeverCrashes) {
    std::mt19937 rng(12345);
    const std::string base = kCafe;
    const std::string alphabet = "{}[]\":,0123456789abcdefghijklmnopqrstuvwxyz._- \\u\n\t";
    int accepted = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string s = base;
        int edits = 1 + static_cast<int>(rng() % 6);
        for (int e = 0; e < edits && !s.empty(); ++e) {
            size_t pos = rng() % s.size();
            switch (rng() % 4) {
                case 0: s.erase(pos, 1 + rng() % 8); break;
                case 1: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
                case 2: s[pos] = static_cast<char>(rng() % 256); break;
                case 3: s.insert(pos, s.substr(rng() % s.size(), rng() % 40)); break;
            }
        }
        try {
            Definition d = parse_definition("fuzz", s);
            ++accepted;
            // Whatever is accepted is self-consistent.
            EXPECT_FALSE(d.steps.empty());
            EXPECT_EQ(to_json(from_normalized(to_json(d))).dump(), to_json(d).dump());
            mermaid_diagram("fuzz", d);
        } catch (const once::Error&) {
        }
    }
    EXPECT_GT(accepted, 0);
}
