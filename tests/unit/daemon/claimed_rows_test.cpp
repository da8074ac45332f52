// The claim decoder reads columns by name: a statement whose select list changes order (or
// gains a column) still decodes, and one that lacks a column fails loudly instead of
// shifting every field by one. PGresults are built in memory (libpq's PQsetResultAttrs).
#include "outbox/claimed_rows.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace once::relay;

namespace {

using Rows = std::unique_ptr<PGresult, void (*)(PGresult*)>;

Rows make_rows(const std::vector<std::string>& names, const std::vector<std::vector<std::optional<std::string>>>& rows) {
    Rows r(PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK), PQclear);
    std::vector<PGresAttDesc> attrs(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
        std::memset(&attrs[i], 0, sizeof(PGresAttDesc));
        attrs[i].name = const_cast<char*>(names[i].c_str());
        attrs[i].typlen = -1;
    }
    EXPECT_EQ(PQsetResultAttrs(r.get(), static_cast<int>(attrs.size()), attrs.data()), 1);
    for (size_t t = 0; t < rows.size(); ++t)
        for (size_t c = 0; c < rows[t].size(); ++c) {
            const auto& v = rows[t][c];
            EXPECT_EQ(PQsetvalue(r.get(), static_cast<int>(t), static_cast<int>(c), v ? const_cast<char*>(v->c_str()) : nullptr,
                                 v ? static_cast<int>(v->size()) : -1),
                      1);
        }
    return r;
}

}  // namespace

TEST(ClaimedRows, ColumnsAreReadByNameWhateverTheirOrder) {
    Rows r = make_rows({"created_at", "attempt", "headers", "payload", "key", "topic", "id", "added_later"},
                       {{"2026-01-01", "3", "{\"h\": 1}", "{\"n\": 1}", "k1", "t.a", "id-1", "x"},
                        {"2026-01-02", "0", std::nullopt, "{}", std::nullopt, "t.b", "id-2", "y"}});
    std::vector<Message> m = decode_claimed_rows(r.get());
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].id, "id-1");
    EXPECT_EQ(m[0].topic, "t.a");
    EXPECT_TRUE(m[0].has_key);
    EXPECT_EQ(m[0].key, "k1");
    EXPECT_EQ(m[0].payload, "{\"n\": 1}");
    EXPECT_EQ(m[0].headers, "{\"h\": 1}");
    EXPECT_EQ(m[0].attempt, 3);
    EXPECT_EQ(m[0].created_at, "2026-01-01");
    EXPECT_EQ(m[1].id, "id-2");
    EXPECT_FALSE(m[1].has_key);
    EXPECT_EQ(m[1].headers, "");
    EXPECT_EQ(m[1].attempt, 0);
}

TEST(ClaimedRows, AMissingColumnIsAnErrorNotAShift) {
    Rows r = make_rows({"id", "topic", "payload", "headers", "attempt", "created_at"}, {});   // no "key"
    try {
        decode_claimed_rows(r.get());
        FAIL() << "decoded rows without a key column";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("\"key\""), std::string::npos) << e.what();
    }
}

TEST(ClaimedRows, TheSelectListNamesEveryColumnTheDecoderReads) {
    std::string list = kClaimedColumns;
    for (const char* name : {"AS id", "topic", "key", "AS payload", "AS headers", "attempt", "AS created_at"})
        EXPECT_NE(list.find(name), std::string::npos) << name;
}

TEST(ClaimedRows, ContentTypeIsReadWhenPresentAndEmptyWhenNull) {
    Rows r = make_rows({"id", "topic", "key", "payload", "headers", "attempt", "created_at", "content_type"},
                       {{"id-1", "t.a", std::nullopt, "\"<a/>\"", std::nullopt, "1", "2026-01-01", "application/xml"},
                        {"id-2", "t.a", std::nullopt, "{}", std::nullopt, "1", "2026-01-01", std::nullopt}});
    std::vector<Message> m = decode_claimed_rows(r.get());
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].content_type, "application/xml");
    EXPECT_EQ(m[1].content_type, "");
    EXPECT_NE(std::string(kClaimedColumns).find("content_type"), std::string::npos);
}
