#include "page_test_util.hpp"
#include "pages/format.hpp"
#include "pages/sagas.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

SagaRow saga_row(const std::string& id, const std::string& status) {
    return {id, "order", "1", status, "reserve", "1", "2026-11-26 04:01:02.5+00", "", ""};
}

SagaModel saga(const std::string& status) {
    SagaModel m;
    m.name = m.definition_name = "order";
    m.id = "o-1";
    m.version = "1";
    m.status = status;
    m.step = "reserve";
    m.attempts = "1";
    m.steps.push_back({"reserve", "compensable", "topic stock.reserve", "topic stock.release", 0});
    m.history.push_back({"2026-11-26 04:01:02.123456+00", "running", "running", "reserve", "sent", "", ""});
    m.csrf = "tok";
    return m;
}

}  // namespace

TEST(SagaListPage, EmptyListsSaySo) {
    std::string html = render_saga_list({});
    EXPECT_TRUE(contains(html, "No saga definitions."));
    EXPECT_TRUE(contains(html, "No sagas match."));
}

TEST(SagaListPage, CountsPerDefinitionMarkFailuresAndCap) {
    SagaListModel m;
    m.counts = {{"order", "failed", "2"}, {"order", "completed", "1000"}, {"<pay>", "running", "1"}};
    std::string html = render_saga_list(m);
    EXPECT_TRUE(contains(html, "<tr class=attn><td>order</td>"));
    EXPECT_TRUE(contains(html, "status=completed\">1000+</a>"));
    EXPECT_TRUE(contains(html, "<tr><td>&lt;pay&gt;</td>"));
}

TEST(SagaListPage, EscapesRowsAndTheSearch) {
    SagaListModel m;
    m.q = "<q>";
    m.by_id = true;
    m.rows.push_back(saga_row("<id>", "failed"));
    std::string html = render_saga_list(m);
    EXPECT_TRUE(contains(html, "Sagas with the id &lt;q&gt;, one per definition"));
    EXPECT_TRUE(contains(html, "<tr class=attn><td><a href=\"/saga?name=order&amp;id=%3Cid%3E\">&lt;id&gt;</a>"));
    EXPECT_TRUE(contains(html, "<span class=\"badge st-failed\">failed</span>"));
    EXPECT_FALSE(contains(html, "<id>"));
}

TEST(SagaListPage, AFullPageLinksToOlderOnesUnlessSearching) {
    SagaListModel m;
    for (int i = 0; i < kPage; ++i) m.rows.push_back(saga_row("s" + std::to_string(i), "running"));
    EXPECT_TRUE(contains(render_saga_list(m), "id=older"));
    m.q = "order_id=1";
    EXPECT_FALSE(contains(render_saga_list(m), "id=older"));
}

TEST(SagaPage, AFailedSagaCanBeRetriedOrAborted) {
    SagaModel m = saga("failed");
    m.last_error = "<boom>";
    std::string html = render_saga(m);
    EXPECT_TRUE(contains(html, "<dd id=last-error>&lt;boom&gt;</dd>"));
    EXPECT_TRUE(contains(html, "id=retry>"));
    EXPECT_TRUE(contains(html, "id=abort>"));
    EXPECT_TRUE(contains(html, "<td>2026-11-26 04:01:02.123</td>"));
    EXPECT_TRUE(contains(html, "<svg"));
}

TEST(SagaPage, ARunningSagaCanOnlyBeAbortedAFinishedOneNeither) {
    std::string running = render_saga(saga("running"));
    EXPECT_FALSE(contains(running, "id=retry>"));
    EXPECT_TRUE(contains(running, "id=abort>"));
    std::string done = render_saga(saga("completed"));
    EXPECT_FALSE(contains(done, "id=abort>"));
    EXPECT_FALSE(contains(done, "id=cause"));
}

TEST(SagaPage, EscapesItsValues) {
    SagaModel m = saga("running");
    m.id = "<id>";
    m.input_text = "{\"x\": \"<y>\"}";
    m.cause = "a&b";
    std::string html = render_saga(m);
    EXPECT_TRUE(contains(html, "<dt>saga id</dt><dd>&lt;id&gt;</dd>"));
    EXPECT_TRUE(contains(html, "&lt;y&gt;"));
    EXPECT_TRUE(contains(html, "<dd id=cause><b>a&amp;b</b></dd>"));
    EXPECT_FALSE(contains(html, "<id>"));
}

TEST(SagaPath, FollowsTheHistoryAndCompensations) {
    std::vector<SagaHistoryRow> h{{"", "running", "running", "reserve", "", "", ""},
                                  {"", "running", "compensating", "charge", "", "", ""},
                                  {"", "compensating", "compensated", "reserve", "", "", ""}};
    DiagramPath p = saga_path(h, "compensated", "reserve");
    EXPECT_EQ(p.current, "compensated");
    EXPECT_TRUE(p.edges.count({"start", "reserve"}));
    EXPECT_TRUE(p.edges.count({"reserve", "undo_charge"}));
    EXPECT_TRUE(p.edges.count({"undo_charge", "undo_reserve"}));
    EXPECT_TRUE(p.edges.count({"undo_reserve", "compensated"}));
    EXPECT_EQ(saga_path({}, "compensating", "charge").current, "undo_charge");
    EXPECT_EQ(saga_path({}, "running", "charge").current, "charge");
}

TEST(SagaConfirmPage, AbortAsksForAReasonAndWarnsAViewer) {
    SagaConfirmModel m{"abort", "<n>", "o-1", false, "tok"};
    std::string html = render_saga_confirm(m);
    EXPECT_TRUE(contains(html, "Your role (viewer) cannot act"));
    EXPECT_TRUE(contains(html, "of definition <code>&lt;n&gt;</code>?"));
    EXPECT_TRUE(contains(html, "id=reason"));
    m.op = "retry";
    m.admin = true;
    html = render_saga_confirm(m);
    EXPECT_FALSE(contains(html, "id=reason"));
    EXPECT_FALSE(contains(html, "cannot act"));
}
