// The relay's check for a transaction-pooling connection (outbox/session_check.hpp): which
// backend pids mean "this connection shares its server session", and which SQLSTATEs.
#include "outbox/session_check.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

TEST(SessionCheck, OwnSessionOnePidThroughoutOthersElsewhere) {
    // Direct or a session pool: the relay's backend stays, the other connection has its own.
    EXPECT_FALSE(shared_session_evidence({{101, 101, 101}, {202, 202}}));
    // (a session pool may give the second connection another server each time)
    EXPECT_FALSE(shared_session_evidence({{101, 101, 101}, {202, 303}}));
}

TEST(SessionCheck, OtherTransactionOnOurBackendIsPooled) {
    // PgBouncer, transaction mode, newest idle server first: the other connection's transaction
    // gets the server the relay's connection just released.
    auto e = shared_session_evidence({{101, 202, 202}, {101, 101}});
    ASSERT_TRUE(e);
    EXPECT_NE(e->find("backend pid 101"), std::string::npos) << *e;
    // Even when our own pid looked stable (a pool of one server, used in turn).
    EXPECT_TRUE(shared_session_evidence({{101, 101, 101}, {303, 101}}));
}

TEST(SessionCheck, OwnPidChangingIsPooled) {
    // Oldest idle server first (server_round_robin): the other connection lands elsewhere, but
    // our next transaction does too.
    auto e = shared_session_evidence({{101, 102, 101}, {303, 304}});
    ASSERT_TRUE(e);
    EXPECT_NE(e->find("101 and 102"), std::string::npos) << *e;
}

TEST(SessionCheck, EmptyOrSingleProbeIsNoEvidence) {
    EXPECT_FALSE(shared_session_evidence({}));
    EXPECT_FALSE(shared_session_evidence({{7}, {}}));
}

TEST(SessionCheck, Sqlstates) {
    EXPECT_TRUE(prepare_clash_sqlstate("42P05"));
    EXPECT_FALSE(prepare_clash_sqlstate("42P04"));
    EXPECT_FALSE(prepare_clash_sqlstate("26000"));
    EXPECT_FALSE(prepare_clash_sqlstate(nullptr));
    EXPECT_TRUE(prepared_statement_missing_sqlstate("26000"));
    EXPECT_FALSE(prepared_statement_missing_sqlstate("42P05"));
    EXPECT_FALSE(prepared_statement_missing_sqlstate(nullptr));
}

TEST(SessionCheck, MessageSaysWhatToDoOnOneLine) {
    std::string m = session_required_message("host=pool port=6432 dbname=app", "evidence here");
    EXPECT_EQ(m.find('\n'), std::string::npos);
    EXPECT_NE(m.find("host=pool port=6432 dbname=app"), std::string::npos);
    EXPECT_NE(m.find("evidence here"), std::string::npos);
    EXPECT_NE(m.find("connect it directly or through a session pool"), std::string::npos);
    EXPECT_NE(m.find("docs/poolers.md"), std::string::npos);
}

TEST(SessionCheck, ExitStatusIsExConfig) { EXPECT_EQ(kExitSessionRequired, 78); }
