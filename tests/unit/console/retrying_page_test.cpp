#include "page_test_util.hpp"
#include "pages/format.hpp"
#include "pages/retrying.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

RetryingRow row(int i) {
    std::string n = std::to_string(1000 + i);
    return {"01a2232e-49b4-72e7-9288-29" + n + "bad9fd", "payment.capture", "pay-" + n, "3",
            "HTTP 502 <upstream>", "2026-11-28 17:22:46.256391+00", "", "01a2232e-4b71-7941-983a-5e97" + n + "ca39", false};
}

}  // namespace

TEST(RetryingPage, ListsAttemptsLastErrorAndNextTry) {
    RetryingModel m;
    m.rows.push_back(row(1));
    std::string html = render_retrying(m);
    EXPECT_TRUE(contains(html, "<td class=\"num attempts\">3</td>"));
    EXPECT_TRUE(contains(html, "<td class=last-error>HTTP 502 &lt;upstream&gt;</td>"));
    EXPECT_TRUE(contains(html, "<td class=next-try>2026-11-28 17:22:46</td>"));
    EXPECT_TRUE(contains(html, "href=\"/find?id=" + row(1).id + "\""));
    EXPECT_FALSE(contains(html, "id=more"));
}

TEST(RetryingPage, AMessageARelayHoldsShowsItsLease) {
    RetryingModel m;
    RetryingRow r = row(1);
    r.in_flight = true;
    r.relay = "relay-1";
    m.rows.push_back(r);
    EXPECT_TRUE(contains(render_retrying(m), "in flight (relay-1, lease until 2026-11-28 17:22:46)"));
}

TEST(RetryingPage, AFullPageLinksTheNextAfterItsLastPosition) {
    RetryingModel m;
    m.topic = "payment.capture";
    for (int i = 0; i < kPage; ++i) m.rows.push_back(row(i));
    std::string html = render_retrying(m);
    EXPECT_TRUE(contains(html, "id=more href=\"/retrying?topic=payment.capture&amp;after=" + m.rows.back().pos + "\""));
}

TEST(RetryingPage, EmptySaysSo) {
    RetryingModel m;
    EXPECT_TRUE(contains(render_retrying(m), "No message is retrying."));
    m.topic = "x";
    EXPECT_TRUE(contains(render_retrying(m), "No message is retrying on this topic."));
}
