// once.wal_write_back's record as the relay sends it: one JSON object naming every field of
// once.wal_write_back_message, which jsonb_populate_record turns into the record.
#include "core/json.hpp"
#include "wal/pg_wal_store.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

using namespace once::relay;
using once::Json;

namespace {

Message keyed_xml() {
    Message m;
    m.id = "0190b2c4-0000-7000-8000-000000000001";
    m.topic = "order.placed";
    m.key = "order \"42\"";
    m.has_key = true;
    m.payload = R"("<order id=\"42\"/>")";
    m.headers = R"({"x-tenant": "t1"})";
    m.created_at = "2026-11-26 06:19:12.123456+00";
    m.content_type = "application/xml";
    return m;
}

}  // namespace

TEST(WalWriteBackRecord, NamesEveryFieldOfTheRecord) {
    Message m = keyed_xml();
    WalWriteBack w{&m, 1, "HTTP 503: try\nlater", false, WalKeyOrder{16385, "0190b2c4-0000-7000-8000-0000000000ff"},
                   Millis(2000)};
    Json r = Json::parse(wal_write_back_record(w, "once_relay"));
    std::set<std::string> names;
    for (const Json::Member& f : r.members()) names.insert(f.first);
    EXPECT_EQ(names, (std::set<std::string>{"id", "topic", "key", "payload", "headers", "content_type", "created_at",
                                            "attempts", "error", "dead", "key_owner", "key_seq", "slot",
                                            "retry_after"}));
    EXPECT_EQ(r.find("id")->as_string(), m.id);
    EXPECT_EQ(r.find("key")->as_string(), "order \"42\"");
    EXPECT_EQ(r.find("payload")->as_string(), "<order id=\"42\"/>");   // the payload's JSON, as JSON
    EXPECT_EQ(r.find("headers")->find("x-tenant")->as_string(), "t1");
    EXPECT_EQ(r.find("content_type")->as_string(), "application/xml");
    EXPECT_EQ(r.find("created_at")->as_string(), m.created_at);
    EXPECT_EQ(r.find("attempts")->as_number(), 1);
    EXPECT_EQ(r.find("error")->as_string(), "HTTP 503: try\nlater");
    EXPECT_FALSE(r.find("dead")->as_bool());
    EXPECT_EQ(r.find("key_owner")->as_number(), 16385);
    EXPECT_EQ(r.find("key_seq")->as_string(), "0190b2c4-0000-7000-8000-0000000000ff");
    EXPECT_EQ(r.find("slot")->as_string(), "once_relay");
    EXPECT_FALSE(r.find("retry_after")->is_null());
}

TEST(WalWriteBackRecord, AbsentFieldsAreNull) {
    Message m = keyed_xml();
    m.has_key = false;
    m.key.clear();
    m.headers.clear();
    m.content_type.clear();
    m.payload = R"({"n": 1})";
    WalWriteBack w{&m, 0, "", true};
    Json r = Json::parse(wal_write_back_record(w, "once_relay"));
    for (const char* name : {"key", "headers", "content_type", "key_owner", "key_seq", "slot", "retry_after"})
        EXPECT_TRUE(r.find(name)->is_null()) << name;
    EXPECT_TRUE(r.find("dead")->as_bool());
    EXPECT_EQ(r.find("payload")->find("n")->as_number(), 1);
}
