#include "wal/start_replication_command.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace once::relay::wal;

TEST(WalStartReplicationCommand, AsksForPgoutputProtocol1WithMessages) {
    EXPECT_EQ(start_replication_command("once_relay", "once_outbox", 0x16B374D848ULL),
              "START_REPLICATION SLOT once_relay LOGICAL 16/B374D848 (proto_version '1', "
              "publication_names 'once_outbox', messages 'true')");
    EXPECT_NE(start_replication_command("s", "p", 0).find(" LOGICAL 0/0 "), std::string::npos);
}

TEST(WalStartReplicationCommand, RefusesNamesThatWouldNeedQuoting) {
    std::string longest(63, 'a');
    EXPECT_NO_THROW(start_replication_command(longest, longest, 0));
    for (const std::string& bad : {std::string(), std::string(64, 'a'), std::string("Upper"), std::string("a-b"),
                                   std::string("a b"), std::string("x'; DROP"), std::string("a\"b")}) {
        EXPECT_THROW(start_replication_command(bad, "pub", 0), std::invalid_argument) << bad;
        EXPECT_THROW(start_replication_command("slot", bad, 0), std::invalid_argument) << bad;
    }
}
