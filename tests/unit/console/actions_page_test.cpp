#include "page_test_util.hpp"
#include "pages/actions.hpp"
#include "pages/format.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(ActionsPage, EmptyListSaysSo) {
    EXPECT_TRUE(contains(render_actions({}), "No actions yet."));
}

TEST(ActionsPage, EscapesAndShortensLongIdLists) {
    ActionsModel m;
    m.rows.push_back({"7", "2026-11-26 04:01:02.9+00", "<ann>", "once_console_admin", "redrive", std::string(400, 'a'), "3", "ok"});
    std::string html = render_actions(m);
    EXPECT_TRUE(contains(html, "<td>&lt;ann&gt;</td>"));
    EXPECT_TRUE(contains(html, "<code>" + std::string(300, 'a') + "…</code>"));
    EXPECT_FALSE(contains(html, std::string(301, 'a')));
    EXPECT_FALSE(contains(html, "id=older"));
}

TEST(ActionsPage, AFullPageLinksToOlderOnes) {
    ActionsModel m;
    for (int i = 0; i < kPage; ++i) m.rows.push_back({std::to_string(100 - i), "", "a", "r", "x", "", "0", ""});
    EXPECT_TRUE(contains(render_actions(m), "<a id=older href=\"/actions?before=51\">"));
}
