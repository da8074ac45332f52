// The WAL transport's decoders meet bytes they do not control (a server of another version, a
// role writing its own pg_once messages): fed random and mutated input, they either decode or
// throw their own error, never crash or read out of bounds (run under valgrind or ASan to see
// the latter; the truncation tests of each decoder cover every prefix).
#include "core/wal_message.hpp"
#include "wal/outbox_stream_decoder.hpp"
#include "wal/protocol_error.hpp"
#include "wal/replication_frames.hpp"
#include "wal_frame_builder.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace once::relay::wal;

namespace {

std::string valid_content() {
    once::WalMessage m;
    m.id.fill(7);
    m.topic = "order.placed";
    m.key = "k";
    m.headers = "{}";
    m.payload = "{\"a\":1}";
    std::string content = once::encode_wal_message(m);
    once::append_wal_message_tag(content, once::WalMessageTag{});  // (the decoder does not verify tags)
    return content;
}

// A valid input with a few bytes overwritten, inserted or cut.
std::string mutate(std::string s, std::mt19937& rng) {
    std::uniform_int_distribution<int> byte(0, 255);
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
        size_t at = s.empty() ? 0 : rng() % s.size();
        switch (rng() % 3) {
        case 0: if (!s.empty()) s[at] = static_cast<char>(byte(rng)); break;
        case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(byte(rng))); break;
        default: s.resize(at); break;
        }
    }
    return s;
}

}  // namespace

TEST(WalRandomInput, WireFormatDecoderOnlyDecodesOrRejects) {
    std::mt19937 rng(21);
    std::string content = valid_content();
    for (int i = 0; i < 20000; ++i) {
        std::string input = mutate(content, rng);
        try {
            once::decode_wal_message(input);
        } catch (const once::WalMessageFormatError&) {
        }
    }
}

TEST(WalRandomInput, StreamDecodersOnlyDecodeOrReject) {
    std::mt19937 rng(42);
    std::vector<std::string> frames = {
        wal_test::xlog_data(1, 2, 3, wal_test::begin(0x100, 1, 2)),
        wal_test::xlog_data(1, 2, 3, wal_test::message(true, 0x90, "pg_once", valid_content())),
        wal_test::xlog_data(1, 2, 3, wal_test::commit(0x100, 0x128, 1)),
        wal_test::keepalive(5, 6, true),
    };
    for (int i = 0; i < 20000; ++i) {
        OutboxStreamDecoder decoder;
        std::vector<WalEvent> events;
        for (const auto& frame : frames) {
            std::string input = (rng() % 2) ? mutate(frame, rng) : frame;
            try {
                ReplicationFrame parsed = parse_replication_frame(input);
                if (auto* x = std::get_if<XLogData>(&parsed)) decoder.feed(x->data, events);
            } catch (const ProtocolError&) {
                break;  // the reader drops the connection here
            }
        }
    }
}
