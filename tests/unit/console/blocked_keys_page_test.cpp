#include "page_test_util.hpp"
#include "pages/blocked_keys.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(BlockedKeysPage, EmptyListSaysSo) {
    EXPECT_TRUE(contains(render_blocked_keys({}), "No key is blocked."));
}

TEST(BlockedKeysPage, ADeadHeadCanBeRedrivenADelayedOneWaits) {
    BlockedKeysModel m;
    m.rows.push_back({"<k>", "orders", "dead", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "x<y", "", "1000"});
    m.rows.push_back({"k2", "orders", "delayed", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", "", "2026-11-26 05:00:00.5+00", "2"});
    m.csrf = "tok";
    std::string html = render_blocked_keys(m);
    EXPECT_TRUE(contains(html, "<td>&lt;k&gt;</td>"));
    EXPECT_TRUE(contains(html, "its head is <b>dead</b>: x&lt;y"));
    EXPECT_TRUE(contains(html, "<td class=num>1000+</td>"));
    EXPECT_TRUE(contains(html, "Redrive head…"));
    EXPECT_TRUE(contains(html, "its head is <b>delayed</b> until 2026-11-26 05:00:00</td>"));
    EXPECT_TRUE(contains(html, "waits for its time"));
    EXPECT_FALSE(contains(html, "No key is blocked."));
}
