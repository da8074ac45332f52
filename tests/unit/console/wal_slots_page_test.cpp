#include "page_test_util.hpp"
#include "pages/overview.hpp"
#include "pages/wal_slots.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

WalSlotRow streamed(const std::string& name) {
    WalSlotRow s;
    s.slot = name;
    s.plugin = "pgoutput";
    s.active = true;
    s.walsender_pid = "4242";
    s.wal_status = "reserved";
    s.confirmed_lsn = "0/1A6A868";
    s.retained_bytes = 20480;
    s.unconfirmed_bytes = 1536;
    s.lag_seconds = 0.25;
    s.client = "local";
    return s;
}

}  // namespace

TEST(WalSlots, AttentionWhenNotStreamedOrGivenUp) {
    WalSlotRow s = streamed("relay_a");
    EXPECT_EQ(wal_slot_attention(s), "");
    s.active = false;
    EXPECT_EQ(wal_slot_attention(s), "no relay streams it: its messages wait");
    s.active = true;
    s.wal_status = "unreserved";
    EXPECT_NE(wal_slot_attention(s).find("max_slot_wal_keep_size"), std::string::npos);
    s.wal_status = "lost";
    EXPECT_NE(wal_slot_attention(s).find("invalidated"), std::string::npos);
}

TEST(WalSlots, BytesInWords) {
    EXPECT_EQ(bytes_text(0), "0 bytes");
    EXPECT_EQ(bytes_text(1), "1 byte");
    EXPECT_EQ(bytes_text(1023), "1023 bytes");
    EXPECT_EQ(bytes_text(1536), "1.5 kB");
    EXPECT_EQ(bytes_text(5LL * 1024 * 1024), "5.0 MB");
    EXPECT_EQ(bytes_text(3LL * 1024 * 1024 * 1024), "3.0 GB");
}

// With the WAL transport an empty table is not an empty backlog: the line names the slot.
TEST(WalSlots, EmptyOutboxNamesTheSlotWithTheWalTransport) {
    WalModel m;
    m.transport = "table";
    EXPECT_EQ(empty_outbox_text(m), "The outbox is empty.");
    m.transport = "wal";
    m.slots.push_back(streamed("relay_a"));
    std::string t = empty_outbox_text(m);
    EXPECT_EQ(t.find("The outbox is empty"), std::string::npos);
    EXPECT_NE(t.find("The outbox table is empty."), std::string::npos);
    EXPECT_NE(t.find("replication slot relay_a (1.5 kB of WAL not yet confirmed)"), std::string::npos) << t;
    m.slots.push_back(streamed("relay_b"));
    EXPECT_NE(empty_outbox_text(m).find("slots relay_a and relay_b (3.0 kB"), std::string::npos);
    m.slots.clear();
    EXPECT_NE(empty_outbox_text(m).find("no logical replication slot"), std::string::npos);
}

TEST(WalSlots, TableShowsEveryFigureAndMarksASlotNobodyStreams) {
    WalModel m;
    m.transport = "wal";
    m.slots.push_back(streamed("relay_a"));
    WalSlotRow idle = streamed("relay_<b>");
    idle.active = false;
    idle.walsender_pid.reset();
    idle.lag_seconds.reset();
    m.slots.push_back(idle);
    std::string html = render_wal(m);
    EXPECT_TRUE(contains(html, "<td class=pid>4242</td>"));
    EXPECT_TRUE(contains(html, "<td class=wal-status>reserved</td>"));
    EXPECT_TRUE(contains(html, "data-bytes=\"20480\">20.0 kB</td>"));
    EXPECT_TRUE(contains(html, "data-bytes=\"1536\">1.5 kB</td>"));
    EXPECT_TRUE(contains(html, "<td class=\"num lag\">0.2 s</td>") || contains(html, "<td class=\"num lag\">0.3 s</td>"));
    EXPECT_TRUE(contains(html, "<tr class=attn data-slot=\"relay_&lt;b&gt;\">"));
    EXPECT_TRUE(contains(html, "<td class=pid>—</td>"));
    EXPECT_FALSE(contains(html, "relay_<b>"));
    EXPECT_TRUE(contains(html, "once.transport: <b>wal</b>"));
}

TEST(WalSlots, OverviewCountsASlotThatNeedsAttentionAndNamesTheSlot) {
    OverviewModel m;
    m.relays.push_back({"relay-1", "1", "127.0.0.1", "2026-11-26 04:00:00+00", 3});
    m.wal.transport = "wal";
    WalSlotRow s = streamed("relay_a");
    s.active = false;
    m.wal.slots.push_back(s);
    Attention a = overview_attention(m);
    EXPECT_EQ(a.rows, 1);
    EXPECT_EQ(a.wal_slot_reasons, std::vector<std::string>{"no relay streams it: its messages wait"});
    std::string html = render_overview(m, a);
    EXPECT_FALSE(contains(html, "The outbox is empty."));
    EXPECT_TRUE(contains(html, "The outbox table is empty. once.transport = &#39;wal&#39;"));
    EXPECT_TRUE(contains(html, "id=wal-slots"));
}

TEST(WalSlots, OverviewWithTheTableTransportAndNoSlotHasNoWalSection) {
    OverviewModel m;
    m.wal.transport = "table";
    std::string html = render_overview(m, overview_attention(m));
    EXPECT_TRUE(contains(html, "The outbox is empty."));
    EXPECT_FALSE(contains(html, "id=wal-slots"));
}
