#include "page_test_util.hpp"
#include "pages/inbox.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(InboxPage, EmptyListsSaySo) {
    std::string html = render_inbox({});
    EXPECT_TRUE(contains(html, "No poison messages."));
    EXPECT_TRUE(contains(html, "No subscriptions."));
}

TEST(InboxPage, EscapesPoisonMessagesAndOffersARetry) {
    InboxModel m;
    m.poison.push_back({"<src>", "m\"1", "t", "5", "", "", "err & more"});
    m.csrf = "tok";
    std::string html = render_inbox(m);
    EXPECT_TRUE(contains(html, "<tr class=attn><td>&lt;src&gt;</td><td>m&quot;1</td>"));
    EXPECT_TRUE(contains(html, "<td>err &amp; more</td>"));
    EXPECT_TRUE(contains(html, "name=op value=inbox_retry><input type=hidden name=a value=\"&lt;src&gt;\""));
}

TEST(InboxPage, MarksASubscriptionWhoseHandlerWasDropped) {
    InboxModel m;
    m.subscriptions.push_back({"orders.*", "public.gone", "", false});
    m.subscriptions.push_back({"users.*", "public.here", "", true});
    std::string html = render_inbox(m);
    EXPECT_TRUE(contains(html, "<tr class=attn><td>orders.*</td><td>public.gone <b class=handler-gone>"));
    EXPECT_TRUE(contains(html, "<tr><td>users.*</td><td>public.here</td>"));
}

// The inbox's retry is confirmed and done under the inbox's own URLs.
TEST(InboxPage, TheRetryPostsToTheInboxConfirmation) {
    InboxModel m;
    m.poison.push_back({"src", "m1", "t", "5", "", "", "err", false});
    std::string html = render_inbox(m);
    EXPECT_TRUE(contains(html, "action=\"/inbox/confirm\""));
    EXPECT_FALSE(contains(html, "/other/"));
}

TEST(InboxPage, SaysWhatRetryDoesWithAndWithoutACopy) {
    InboxModel m;
    m.poison.push_back({"ONCE", "id-1", "t", "5", "", "", "e", true});
    m.poison.push_back({"shop-relay", "id-2", "t", "5", "", "", "e", false});
    std::string html = render_inbox(m);
    EXPECT_TRUE(contains(html, "runs its handlers now, from the copy kept here. If a pg_once relay named <code>ONCE</code> "
                               "brought it (postgresql:// sink), that relay also dead-lettered message <code>id-1</code>"));
    EXPECT_TRUE(contains(html, "From a pg_once relay named <code>shop-relay</code>: it dead-lettered message <code>id-2</code> "
                               "in its own database; redrive it there"));
}
