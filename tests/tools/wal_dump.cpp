// once-wal-dump: a developer and test tool for the WAL transport's reader. It streams a
// pgoutput slot with wal::ReplicationStream and prints what the relay would see, one line per
// event:
//   msg <commit_lsn> <id> <created_at_us> <topic> <key or -> <headers or -> <payload>
//   malformed <commit_lsn> <error>
//   end <commit_lsn> <end_lsn> <outbox messages>
//   confirmed <lsn>
// It stops after the transaction holding a message on --until-topic ends. With
// --confirm-after N it counts the first N messages as settled (as a sink's acknowledgements
// would) and confirms what wal::FlushTracker then allows: the end of the last transaction
// whose messages, and every earlier transaction's, are among them. Nothing else is confirmed.
// With --idle-past LSN it then goes on reading until a keepalive outside a transaction
// reports the server has sent everything below LSN (ReplicationStream::idle_position) and
// confirms that position if nothing is unsettled (FlushTracker::idle).
//
//   once-wal-dump CONNINFO SLOT PUBLICATION --until-topic T [--confirm-after N] [--idle-past LSN]
//                 [--timeout-seconds S]
#include "core/uuid_v7.hpp"
#include "wal/flush_tracker.hpp"
#include "wal/replication_stream.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

using namespace once::relay::wal;

namespace {

int usage() {
    std::cerr << "usage: once-wal-dump CONNINFO SLOT PUBLICATION --until-topic T [--confirm-after N] "
                 "[--idle-past LSN] [--timeout-seconds S]\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) return usage();
    ReplicationStreamOptions options;
    options.conninfo = argv[1];
    options.slot = argv[2];
    options.publication = argv[3];
    options.application_name = "once-wal-dump";
    std::string until_topic;
    long confirm_after = 0;
    long timeout_seconds = 30;
    Lsn idle_past = 0;
    for (int i = 4; i < argc; i += 2) {
        if (i + 1 >= argc) return usage();
        std::string flag = argv[i];
        if (flag == "--until-topic") until_topic = argv[i + 1];
        else if (flag == "--confirm-after") confirm_after = std::strtol(argv[i + 1], nullptr, 10);
        else if (flag == "--timeout-seconds") timeout_seconds = std::strtol(argv[i + 1], nullptr, 10);
        else if (flag == "--idle-past") idle_past = parse_lsn(argv[i + 1]);
        else return usage();
    }
    if (until_topic.empty()) return usage();

    try {
        ReplicationStream stream(options);
        stream.open();
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
        long seen = 0;
        bool stop_at_end = false;
        bool reached_until_topic = false;
        std::chrono::steady_clock::time_point last_ask{};
        FlushTracker tracker;
        std::vector<WalEvent> events;
        auto confirm = [&] {
            if (tracker.flush_position() > stream.confirmed()) {
                stream.confirm(tracker.flush_position());
                stream.send_status();
                std::cout << "confirmed " << format_lsn(tracker.flush_position()) << '\n';
            }
        };
        for (;;) {
            if (std::chrono::steady_clock::now() >= deadline) {
                std::cerr << "once-wal-dump: timed out " << (reached_until_topic ? "before the server was idle past "
                          + format_lsn(idle_past) : "before a message on " + until_topic) << "\n";
                return 1;
            }
            if (reached_until_topic && stream.idle_position() >= idle_past) {
                tracker.idle(stream.idle_position());
                confirm();
                std::cout.flush();
                stream.close();
                return 0;
            }
            if (reached_until_topic && std::chrono::steady_clock::now() - last_ask >= std::chrono::milliseconds(100)) {
                stream.send_status(true);  // the server answers with a keepalive: its position now
                last_ask = std::chrono::steady_clock::now();
            }
            events.clear();
            if (!stream.read_available(events)) {
                std::cerr << "once-wal-dump: the server ended the stream\n";
                return 1;
            }
            for (const auto& event : events) {
                if (auto* m = std::get_if<OutboxMessageEvent>(&event)) {
                    ++seen;
                    const auto& msg = m->message;
                    std::cout << "msg " << format_lsn(m->commit_lsn) << ' ' << once::uuid_to_string(msg.id) << ' '
                              << msg.created_at_us << ' ' << msg.topic << ' ' << msg.key.value_or("-") << ' ' << msg.headers.value_or("-") << ' '
                              << msg.payload << '\n';
                    tracker.message_received(m->commit_lsn);
                    if (seen <= confirm_after) tracker.message_settled(m->commit_lsn);
                    if (msg.topic == until_topic) stop_at_end = true;
                } else if (auto* bad = std::get_if<MalformedMessageEvent>(&event)) {
                    std::cout << "malformed " << format_lsn(bad->commit_lsn) << ' ' << bad->error << '\n';
                } else if (auto* newer = std::get_if<NewerFormatEvent>(&event)) {
                    std::cout << "newer " << format_lsn(newer->commit_lsn) << ' ' << newer->error << '\n';
                } else {
                    const auto& end = std::get<TransactionEndEvent>(event);
                    std::cout << "end " << format_lsn(end.commit_lsn) << ' ' << format_lsn(end.end_lsn) << ' '
                              << end.outbox_messages << '\n';
                    tracker.transaction_ended(end.commit_lsn, end.end_lsn);
                    if (confirm_after > 0) confirm();
                    if (stop_at_end && idle_past == 0) {
                        std::cout.flush();
                        stream.close();
                        return 0;
                    }
                    if (stop_at_end) reached_until_topic = true;
                }
            }
            std::cout.flush();
            stream.wait_readable(std::chrono::milliseconds(200));
        }
    } catch (const std::exception& e) {
        std::cerr << "once-wal-dump: " << e.what() << "\n";
        return 1;
    }
}
