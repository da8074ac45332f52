// The server's notices in the relay's log (pq_notices.hpp): level per severity, line format.
#include "pq_notices.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

TEST(PqNotices, WarningsAreWarningsDebugIsDebugTheRestInfo) {
    EXPECT_EQ(notice_log_level("WARNING"), spdlog::level::warn);
    EXPECT_EQ(notice_log_level("DEBUG1"), spdlog::level::debug);
    EXPECT_EQ(notice_log_level("DEBUG5"), spdlog::level::debug);
    EXPECT_EQ(notice_log_level("NOTICE"), spdlog::level::info);
    EXPECT_EQ(notice_log_level("LOG"), spdlog::level::info);
    EXPECT_EQ(notice_log_level("INFO"), spdlog::level::info);
    EXPECT_EQ(notice_log_level("WARNUNG"), spdlog::level::info);   // localized (servers before 9.6)
}

TEST(PqNotices, TheLineNamesTheConnectionAndTheSeverityWithoutTheTrailingNewline) {
    EXPECT_EQ(notice_log_line("replication connection", "LOG", "starting logical decoding for slot \"s\"\n"),
              "replication connection: LOG: starting logical decoding for slot \"s\"");
    EXPECT_EQ(notice_log_line("database connection", "NOTICE", ""), "database connection: NOTICE: ");
}
