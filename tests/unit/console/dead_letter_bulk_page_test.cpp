#include "page_test_util.hpp"
#include "pages/dead_letter_bulk.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

BulkModel counted(int n) {
    BulkModel m;
    m.filter = {"payment.capture", "pay-", "HTTP 502", ""};
    m.counted = true;
    m.count.matching = n;
    if (n) m.count.newest = "2026-11-28 17:22:45.819361+00";
    m.admin = true;
    m.csrf = "tok";
    return m;
}

}  // namespace

TEST(DeadLetterBulk, FilterFromFieldsDropsAMalformedTime) {
    BulkFilter f = bulk_filter({{"topic", {"t"}}, {"key_prefix", {"k-"}}, {"error", {"e"}}, {"until", {"2026-11-26 04:00"}}});
    EXPECT_EQ(f.topic, "t");
    EXPECT_EQ(f.key_prefix, "k-");
    EXPECT_EQ(f.until, "2026-11-26 04:00");
    EXPECT_TRUE(f.any());
    EXPECT_EQ(bulk_filter({{"until", {"now(); DROP"}}}).until, "");
    EXPECT_FALSE(bulk_filter({}).any());
    EXPECT_TRUE(is_timestamp_text("2026-11-28 17:22:45.819361+00"));
    EXPECT_FALSE(is_timestamp_text(""));
    EXPECT_FALSE(is_timestamp_text(std::string(41, '1')));
}

TEST(DeadLetterBulk, TheFilterPageSaysHowManyMatch) {
    std::string html = render_bulk_page(counted(3));
    EXPECT_TRUE(contains(html, "<p id=matching data-n=\"3\">3 dead letters match topic <code>payment.capture</code>, key "
                               "starting with <code>pay-</code>, error containing <code>HTTP 502</code>.</p>"));
    EXPECT_TRUE(contains(html, "Redrive these 3…"));
    EXPECT_TRUE(contains(html, "action=\"/dead/bulk/confirm\""));
    EXPECT_TRUE(contains(html, "name=csrf value=\"tok\""));
    EXPECT_TRUE(contains(render_bulk_page(counted(1)), "1 dead letter match"));
}

TEST(DeadLetterBulk, NoneOrTooManyOfferNoAction) {
    EXPECT_FALSE(contains(render_bulk_page(counted(0)), "bulk-redrive"));
    std::string html = render_bulk_page(counted(kMaxBulk + 1));
    EXPECT_TRUE(contains(html, "more than 10000 dead letters match"));
    EXPECT_TRUE(contains(html, "id=too-many"));
    EXPECT_FALSE(contains(html, "bulk-redrive"));
    EXPECT_TRUE(contains(render_bulk_page(counted(kMaxBulk)), "Redrive these 10000…"));
}

// The confirmation carries the filter, the bound it counted up to and the count.
TEST(DeadLetterBulk, TheConfirmationCarriesTheFilterTheBoundAndTheCount) {
    BulkModel m = counted(3);
    m.op = "discard";
    std::string html = render_bulk_confirm(m);
    EXPECT_TRUE(contains(html, "<p id=question data-n=\"3\">Discard these 3 dead letters (topic <code>payment.capture</code>"));
    EXPECT_TRUE(contains(html, "dead at or before 2026-11-28 17:22:45)"));
    EXPECT_TRUE(contains(html, "action=\"/dead/bulk/act\""));
    EXPECT_TRUE(contains(html, "<input type=hidden name=op value=\"discard\">"));
    EXPECT_TRUE(contains(html, "<input type=hidden name=key_prefix value=\"pay-\">"));
    EXPECT_TRUE(contains(html, "<input type=hidden name=bound value=\"2026-11-28 17:22:45.819361+00\">"));
    EXPECT_TRUE(contains(html, "<input type=hidden name=expected value=\"3\">"));
    EXPECT_TRUE(contains(html, "Yes, discard 3"));
}

TEST(DeadLetterBulk, AConfirmationWithNothingLeftOrForAViewer) {
    BulkModel m = counted(0);
    m.op = "redrive";
    EXPECT_TRUE(contains(render_bulk_confirm(m), "nothing to do"));
    EXPECT_FALSE(contains(render_bulk_confirm(m), "/dead/bulk/act"));
    m = counted(2);
    m.op = "redrive";
    m.admin = false;
    EXPECT_TRUE(contains(render_bulk_confirm(m), "Your role (viewer) cannot act"));
}
