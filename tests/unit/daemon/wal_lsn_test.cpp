#include "wal/lsn.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace once::relay::wal;

TEST(WalLsn, FormatsLikePostgres) {
    EXPECT_EQ(format_lsn(0), "0/0");
    EXPECT_EQ(format_lsn(0x16B374D848ULL), "16/B374D848");
    EXPECT_EQ(format_lsn(~0ULL), "FFFFFFFF/FFFFFFFF");
}

TEST(WalLsn, ParsesWhatItFormats) {
    for (Lsn lsn : {Lsn{0}, Lsn{1}, Lsn{0x16B374D848ULL}, ~Lsn{0}}) EXPECT_EQ(parse_lsn(format_lsn(lsn)), lsn);
    EXPECT_EQ(parse_lsn("0/1a2b"), 0x1A2Bu);
}

TEST(WalLsn, RefusesWhatIsNotAnLsn) {
    for (const char* bad : {"", "/", "0/", "/0", "12", "0/123456789", "g/0", "0/0/0", " 0/0", "-1/0"})
        EXPECT_THROW(parse_lsn(bad), std::invalid_argument) << bad;
}
