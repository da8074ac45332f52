#include "daemon_logger.hpp"
#include "log_safe.hpp"

#include <gtest/gtest.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>

using once::relay::log_safe;

TEST(LogSafe, PlainTextAndUtf8PassThrough) {
    EXPECT_EQ(log_safe(""), "");
    EXPECT_EQ(log_safe("admin login: ok (1 of 2)"), "admin login: ok (1 of 2)");
    EXPECT_EQ(log_safe("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0");
}

TEST(LogSafe, LineBreaksCannotForgeALine) {
    EXPECT_EQ(log_safe("x\ninfo: login: admin1 (admin)"), "x\\ninfo: login: admin1 (admin)");
    EXPECT_EQ(log_safe("a\r\nb\tc"), "a\\r\\nb\\tc");
    EXPECT_EQ(log_safe("\n").find('\n'), std::string::npos);
}

TEST(LogSafe, OtherControlsAndDelAsHex) {
    EXPECT_EQ(log_safe(std::string("a\0b", 3)), "a\\x00b");
    EXPECT_EQ(log_safe("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
    EXPECT_EQ(log_safe("\x01\x08\x0b\x0c\x1f\x7f"), "\\x01\\x08\\x0b\\x0c\\x1f\\x7f");
}

TEST(LogSafe, C1ControlsAsTheirUtf8Bytes) {
    EXPECT_EQ(log_safe("\xc2\x85next"), "\\xc2\\x85next");   // NEL
    EXPECT_EQ(log_safe("\xc2\x9b" "31m"), "\\xc2\\x9b" "31m");  // CSI
    EXPECT_EQ(log_safe("\xc2\x80\xc2\x9f\xc2\xa0"), "\\xc2\\x80\\xc2\\x9f\xc2\xa0");
}

TEST(LogSafe, InvalidUtf8BytesAsHex) {
    EXPECT_EQ(log_safe("\x9b" "31m"), "\\x9b" "31m");       // a lone C1 byte (8-bit CSI)
    EXPECT_EQ(log_safe("\xc3"), "\\xc3");                   // cut short
    EXPECT_EQ(log_safe("\xc0\x8a"), "\\xc0\\x8a");          // overlong newline
    EXPECT_EQ(log_safe("\xe0\x80\x8a"), "\\xe0\\x80\\x8a"); // overlong, three bytes
    EXPECT_EQ(log_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80"); // a surrogate
    EXPECT_EQ(log_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
    EXPECT_EQ(log_safe("\xff\xfe"), "\\xff\\xfe");
}

TEST(LogSafe, BackslashIsDoubledSoEscapesAreUnambiguous) {
    EXPECT_EQ(log_safe("a\\nb"), "a\\\\nb");
    EXPECT_NE(log_safe("a\\nb"), log_safe("a\nb"));
    EXPECT_EQ(log_safe("\\x0a"), "\\\\x0a");
}

TEST(LogSafe, EveryByteValueGivesOnePrintableLine) {
    for (int b = 0; b < 256; ++b) {
        std::string out = log_safe(std::string(1, static_cast<char>(b)) + "\xc2" + std::string(1, static_cast<char>(b)));
        for (unsigned char ch : out) {
            EXPECT_GE(ch, 0x20) << "byte " << b;
            EXPECT_NE(ch, 0x7f) << "byte " << b;
        }
    }
}

namespace {

std::string format_with(spdlog::formatter& f, const std::string& payload) {
    spdlog::details::log_msg msg("test", spdlog::level::warn, payload);
    spdlog::memory_buf_t out;
    f.format(msg, out);
    return std::string(out.data(), out.size());
}

}  // namespace

TEST(DaemonLogger, EscapesTheWholeMessageAndEndsTheLineOnce) {
    auto journal = once::relay::escaping_formatter(true);
    std::string line = format_with(*journal, "login failed for user \"\ninfo: login: admin1 (admin)\"");
    EXPECT_EQ(line, "warning: login failed for user \"\\ninfo: login: admin1 (admin)\"\n");
    auto plain = once::relay::escaping_formatter(false);
    line = format_with(*plain, "sink said: 500\r\nX: y");
    EXPECT_NE(line.find(" warning: sink said: 500\\r\\nX: y\n"), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
}

TEST(DaemonLogger, ALineBreakThatEndsTheMessageIsDropped) {
    auto f = once::relay::escaping_formatter(true);
    EXPECT_EQ(format_with(*f, "database down: connection refused\n"), "warning: database down: connection refused\n");
    EXPECT_EQ(format_with(*f, "two\nlines\r\n"), "warning: two\\nlines\n");
}
