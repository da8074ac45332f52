#include "page_test_util.hpp"
#include "pages/keys.hpp"
#include "pages/row_action_confirm.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

KeyOwnerRow in_progress(const std::string& owner_id, std::optional<std::string> owner) {
    KeyOwnerRow r;
    r.owner_id = owner_id;
    r.owner = std::move(owner);
    r.state = "in_progress";
    return r;
}

}  // namespace

TEST(KeysPage, FormAloneBeforeALookup) {
    std::string html = render_keys(keys_form("", ""));
    EXPECT_TRUE(contains(html, "id=lookup"));
    EXPECT_FALSE(contains(html, "id=not-found"));
    EXPECT_FALSE(contains(html, "id=keys"));
}

TEST(KeysPage, AnUnknownKeySaysSoEscaped) {
    KeysModel m = keys_form("<s>", "<k>");
    m.looked_up = true;
    std::string html = render_keys(m);
    EXPECT_TRUE(contains(html, "<p id=not-found>No key <code>&lt;k&gt;</code> in scope <code>&lt;s&gt;</code>.</p>"));
    EXPECT_TRUE(contains(html, "value=\"&lt;s&gt;\""));
}

TEST(KeysPage, EachOwnerHasItsRowAndAReleaseWhileInProgress) {
    KeysModel m = keys_form("s", "k");
    m.looked_up = true;
    m.owners.push_back(in_progress("16384", "<app>"));
    m.owners.push_back(in_progress("16385", std::nullopt));
    m.owners.back().expired = true;
    m.owners.push_back(in_progress("0", std::nullopt));
    m.owners.back().state = "completed";
    m.owners.back().response_bytes = "12";
    m.csrf = "tok";
    std::string html = render_keys(m);
    EXPECT_TRUE(contains(html, "3 role(s) hold this key"));
    EXPECT_TRUE(contains(html, "<h2>Owner &lt;app&gt;</h2>"));
    EXPECT_TRUE(contains(html, "<h2>Owner dropped role, oid 16385</h2>"));
    EXPECT_TRUE(contains(html, "<h2>Owner none (stored by 0.1, shared)</h2>"));
    EXPECT_TRUE(contains(html, "in_progress (expired: treated as absent)"));
    EXPECT_TRUE(contains(html, "12 bytes (not shown: it belongs to its owner)"));
    EXPECT_TRUE(contains(html, "id=\"release-16384\""));
    EXPECT_FALSE(contains(html, "id=\"release-16385\""));   // expired
    EXPECT_FALSE(contains(html, "id=\"release-0\""));       // completed
}

TEST(RowActionConfirmPage, ValidatesTheForm) {
    EXPECT_TRUE(valid_row_action("inbox_retry", "a", "b"));
    EXPECT_TRUE(valid_row_action("key_release", "a", "b"));
    EXPECT_FALSE(valid_row_action("drop", "a", "b"));
    EXPECT_FALSE(valid_row_action("inbox_retry", "", "b"));
    EXPECT_FALSE(valid_row_action("inbox_retry", "a", ""));
    EXPECT_TRUE(is_owner_oid("0"));
    EXPECT_TRUE(is_owner_oid("4294967295"));
    EXPECT_FALSE(is_owner_oid("4294967296"));
    EXPECT_FALSE(is_owner_oid(""));
    EXPECT_FALSE(is_owner_oid("-1"));
    EXPECT_FALSE(is_owner_oid("12345678901"));
}

TEST(RowActionConfirmPage, AsksEscapedAndWarnsAViewer) {
    RowActionConfirmModel m{"key_release", "<s>", "<k>", "16384", "<app>", false, "tok"};
    std::string html = render_row_action_confirm(m);
    EXPECT_TRUE(contains(html, "Your role (viewer) cannot act"));
    EXPECT_TRUE(contains(html, "Release key <code>&lt;k&gt;</code> in scope <code>&lt;s&gt;</code> of owner <code>&lt;app&gt;</code>?"));
    EXPECT_TRUE(contains(html, "<input type=hidden name=owner value=\"16384\">"));
    EXPECT_TRUE(contains(html, "<a href=\"/keys\" id=cancel>"));
    RowActionConfirmModel retry{"inbox_retry", "src", "m1", "", "", true, "tok"};
    html = render_row_action_confirm(retry);
    EXPECT_FALSE(contains(html, "cannot act"));
    EXPECT_FALSE(contains(html, "name=owner"));
    EXPECT_TRUE(contains(html, "<a href=\"/inbox\" id=cancel>"));
}

TEST(RowActionConfirmPage, EachActionPostsToItsPagesUrl) {
    RowActionConfirmModel inbox{"inbox_retry", "src", "m1", "", "", true, "tok"};
    EXPECT_TRUE(contains(render_row_action_confirm(inbox), "action=\"/inbox/act\""));
    RowActionConfirmModel key{"key_release", "POST /x", "k", "10", "shop", true, "tok"};
    EXPECT_TRUE(contains(render_row_action_confirm(key), "action=\"/keys/act\""));
    EXPECT_FALSE(contains(render_row_action_confirm(key), "/other/"));
}
