#include "page_test_util.hpp"
#include "pages/find_message.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(FindMessagePage, TheFormAloneBeforeALookup) {
    std::string html = render_find(find_form(""));
    EXPECT_TRUE(contains(html, "id=find-id"));
    EXPECT_FALSE(contains(html, "id=not-found"));
    EXPECT_FALSE(contains(html, "id=found"));
}

// pg_once deletes an acked message: nothing found is "delivered or never sent", not "unknown".
TEST(FindMessagePage, NothingFoundSaysDeliveredOrNeverSent) {
    FindModel m = find_form("01a2232e-49b4-72e7-9288-296eb2bad9fd");
    m.looked_up = true;
    std::string html = render_find(m);
    EXPECT_TRUE(contains(html, "is not in the outbox or dead letters, nor in the delivered history or the inbox: delivered or never sent"));
}

TEST(FindMessagePage, AnOutboxRowLinksTheMessageAndADeadOneIsMarked) {
    FindModel m = find_form("01a2232e-49b4-72e7-9288-296eb2bad9fd");
    m.looked_up = true;
    m.rows.push_back({"outbox", "dead", "", "payment.capture", "pay-1", "5", "HTTP 502", "2026-11-28 17:22:45.8+00"});
    std::string html = render_find(m);
    EXPECT_TRUE(contains(html, "<tr class=attn data-place=\"outbox\"><td class=place><a href=\"/dead/01a2232e-49b4-72e7-9288-296eb2bad9fd\">outbox</a>"));
    EXPECT_TRUE(contains(html, "<td class=state>dead</td>"));
    EXPECT_TRUE(contains(html, "dead since 2026-11-28 17:22:45"));
}

TEST(FindMessagePage, InboxRowsAreEscapedAndLabelled) {
    FindModel m = find_form("<m>");
    m.looked_up = true;
    m.rows.push_back({"inbox", "poison", "shop-<relay>", "", "", "", "", "2026-11-28 17:00:00+00"});
    m.rows.push_back({"inbox failures", "failed 2 times", "shop-<relay>", "", "", "2", "boom", "2026-11-28 17:01:00+00"});
    std::string html = render_find(m);
    EXPECT_FALSE(contains(html, "<m>"));
    EXPECT_FALSE(contains(html, "shop-<relay>"));
    EXPECT_TRUE(contains(html, "received 2026-11-28 17:00:00"));
    EXPECT_TRUE(contains(html, "last failed 2026-11-28 17:01:00"));
}

TEST(FindMessagePage, TimeLabels) {
    auto label = [](const std::string& place, const std::string& state) {
        FoundRow r;
        r.place = place;
        r.state = state;
        return found_time_label(r);
    };
    EXPECT_EQ(label("outbox", "retrying"), "due");
    EXPECT_EQ(label("outbox", "claimed"), "lease until");
    EXPECT_EQ(label("outbox", "ready"), "due since");
    EXPECT_EQ(label("delivered", "delivered"), "delivered");
}
