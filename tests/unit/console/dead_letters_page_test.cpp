#include "page_test_util.hpp"
#include "pages/dead_letters.hpp"
#include "pages/format.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

const std::string kId = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

DeadLetterRow row(const std::string& id = kId) {
    return {id, "orders", "<k>", "5", "2026-11-26 04:01:02.123456+00", "boom & <b>"};
}

}  // namespace

TEST(DeadLetterListPage, EscapesValues) {
    DeadLetterListModel m;
    m.filter.topic = "\"><x>";
    m.rows.push_back(row());
    m.csrf = "tok";
    std::string html = render_dead_letter_list(m);
    EXPECT_TRUE(contains(html, "<td>&lt;k&gt;</td>"));
    EXPECT_TRUE(contains(html, "<td>boom &amp; &lt;b&gt;</td>"));
    EXPECT_TRUE(contains(html, "value=\"&quot;&gt;&lt;x&gt;\""));
    EXPECT_TRUE(contains(html, "<td>2026-11-26 04:01:02</td>"));
    EXPECT_FALSE(contains(html, "<x>"));
    EXPECT_FALSE(contains(html, "id=older"));
}

TEST(DeadLetterListPage, EmptyListSaysSo) {
    DeadLetterListModel m;
    EXPECT_TRUE(contains(render_dead_letter_list(m), "No dead letters.</td>"));
    m.filter.key = "k";
    EXPECT_TRUE(contains(render_dead_letter_list(m), "No dead letters match.</td>"));
}

TEST(DeadLetterListPage, AFullPageLinksToOlderOnes) {
    DeadLetterListModel m;
    m.filter.topic = "a b";
    for (int i = 0; i < kPage; ++i) m.rows.push_back(row());
    std::string html = render_dead_letter_list(m);
    EXPECT_TRUE(contains(html, "<a id=older href=\"/dead?topic=a%20b&amp;key=&amp;error=&amp;before=2026-11-26") ||
                contains(html, "<a id=older href=\"/dead?topic=a+b&amp;key=&amp;error=&amp;before=2026-11-26"));
}

TEST(DeadLetterPage, DeadMessageHasActionsAndEscapedPayload) {
    DeadLetterModel m;
    m.id = kId;
    m.topic = "orders";
    m.attempt = "5";
    m.payload_text = "{\"a\": \"<b>\"}";
    m.dead_at = "2026-11-26 04:01:02.1+00";
    m.key = "k1";
    m.is_head = true;
    m.waiting = "1000";
    m.csrf = "tok";
    std::string html = render_dead_letter(m);
    EXPECT_TRUE(contains(html, "<span class=\"badge st-failed\">dead</span> since 2026-11-26 04:01:02"));
    EXPECT_TRUE(contains(html, "this message is the key's head; 1000+ later message(s)"));
    EXPECT_TRUE(contains(html, "{&quot;a&quot;: &quot;&lt;b&gt;&quot;}"));
    EXPECT_TRUE(contains(html, "<pre id=headers>(none)</pre>"));
    EXPECT_TRUE(contains(html, "id=redrive>"));
}

TEST(DeadLetterPage, PendingMessageHasNoActions) {
    DeadLetterModel m;
    m.id = kId;
    std::string html = render_dead_letter(m);
    EXPECT_TRUE(contains(html, "<dt>state</dt><dd>pending</dd>"));
    EXPECT_FALSE(contains(html, "its key"));
    EXPECT_FALSE(contains(html, "id=redrive"));
}

TEST(DeadLetterConfirmPage, SelectedIdsAreWellFormedAndBounded) {
    std::map<std::string, std::vector<std::string>> form{{"id", {kId, "not-a-uuid", "<x>"}}};
    EXPECT_EQ(selected_dead_letters(form), std::vector<std::string>{kId});
    form["id"] = std::vector<std::string>(kMaxIds + 10, kId);
    EXPECT_EQ(selected_dead_letters(form).size(), kMaxIds);
    EXPECT_TRUE(selected_dead_letters({}).empty());
}

TEST(DeadLetterConfirmPage, AsksAndWarnsAViewer) {
    DeadLetterConfirmModel m{"discard", {kId}, false, "tok"};
    std::string html = render_dead_letter_confirm(m);
    EXPECT_TRUE(contains(html, "Your role (viewer) cannot act"));
    EXPECT_TRUE(contains(html, "Discard these 1 dead letter(s)?"));
    EXPECT_TRUE(contains(html, "<input type=hidden name=id value=\"" + kId + "\">"));
    EXPECT_TRUE(contains(html, "class=danger id=confirm>Yes, discard"));
    m.admin = true;
    EXPECT_FALSE(contains(render_dead_letter_confirm(m), "cannot act"));
}
