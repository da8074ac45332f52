#include "page_test_util.hpp"
#include "pages/layout.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(LayoutPage, EscapesTitleUserAndFlash) {
    LayoutModel m{"<t>", "/dead", "<u>", "viewer", "tok", "<f>", 1.25, 0.5, {}, {}, ""};
    std::string html = render_layout(m, "<p>body</p>");
    EXPECT_TRUE(contains(html, "<title>&lt;t&gt; · once-console</title>"));
    EXPECT_TRUE(contains(html, "<span class=who>&lt;u&gt; (viewer)</span>"));
    EXPECT_TRUE(contains(html, "<div class=flash id=flash>&lt;f&gt;</div>"));
    EXPECT_TRUE(contains(html, "<p>body</p>"));
    EXPECT_FALSE(contains(html, "<u>"));
    EXPECT_TRUE(contains(html, "name=csrf value=\"tok\""));
    EXPECT_TRUE(contains(html, "page 1.2 ms (database 0.5 ms)") || contains(html, "page 1.3 ms (database 0.5 ms)"));
}

TEST(LayoutPage, MarksTheActivePageAndOmitsAnEmptyFlash) {
    LayoutModel m{"Dead letters", "/dead", "ann", "admin", "tok", "", 0, 0, {}, {}, ""};
    std::string html = render_layout(m, "");
    EXPECT_TRUE(contains(html, "<a href=\"/dead\" class=on>Dead letters</a>"));
    EXPECT_TRUE(contains(html, "<a href=\"/\">Overview</a>"));
    EXPECT_FALSE(contains(html, "id=flash"));
}

TEST(LoginPage, EscapesTheErrorAndCarriesTheToken) {
    std::string html = render_login("abc", "<bad>");
    EXPECT_TRUE(contains(html, "<div class=error id=error>&lt;bad&gt;</div>"));
    EXPECT_TRUE(contains(html, "name=csrf value=\"abc\""));
    EXPECT_FALSE(contains(render_login("abc", ""), "id=error"));
}

// Auto-refresh: a meta refresh and a link that pauses it (the same URL with refresh=off).
TEST(LayoutPage, AutoRefreshWithAPauseLink) {
    LayoutModel m{"Overview", "/", "ann", "admin", "tok", "", 0, 0, refresh_state("/dead", {{"topic", {"a b"}}}), {}, ""};
    std::string html = render_layout(m, "");
    EXPECT_TRUE(contains(html, "<meta http-equiv=refresh content=\"30\">"));
    EXPECT_TRUE(contains(html, "<a id=refresh-toggle href=\"/dead?topic=a%20b&amp;refresh=off\">Pause auto-refresh"));
    m.refresh = refresh_state("/dead", {{"topic", {"a b"}}, {"refresh", {"off"}}});
    html = render_layout(m, "");
    EXPECT_FALSE(contains(html, "http-equiv=refresh"));
    EXPECT_TRUE(contains(html, "<a id=refresh-toggle href=\"/dead?topic=a%20b\">Resume auto-refresh</a>"));
    EXPECT_EQ(refresh_state("/", {}).toggle_href, "/?refresh=off");
}

TEST(LayoutPage, NoRefreshUnlessThePageAsks) {
    LayoutModel m{"Confirm", "/dead", "ann", "admin", "tok", "", 0, 0, {}, {}, ""};
    std::string html = render_layout(m, "");
    EXPECT_FALSE(contains(html, "http-equiv=refresh"));
    EXPECT_FALSE(contains(html, "refresh-toggle"));
}

TEST(LayoutPage, ADatabaseSelectorWithSeveralDatabases) {
    LayoutModel m;
    m.title = "Overview";
    m.databases = {"orders", "bi<lling>"};
    m.database = "orders";
    std::string html = render_layout(m, "");
    EXPECT_TRUE(contains(html, "<span class=dbs id=databases>database: <a href=\"/db/orders/\" class=on>orders</a> "
                               "<a href=\"/db/bi&lt;lling&gt;/\">bi&lt;lling&gt;</a></span>"));
    m.databases = {"orders"};
    EXPECT_FALSE(contains(render_layout(m, ""), "id=databases"));
}
