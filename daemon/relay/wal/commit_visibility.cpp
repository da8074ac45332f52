#include "wal/commit_visibility.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>

namespace once::relay::wal {

namespace {

uint64_t parse_xid(std::string_view s, std::string_view whole) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
        throw std::invalid_argument("not a snapshot: \"" + std::string(whole) + "\"");
    return v;
}

}  // namespace

SnapshotXids parse_snapshot(std::string_view text) {
    size_t a = text.find(':');
    size_t b = a == std::string_view::npos ? a : text.find(':', a + 1);
    if (b == std::string_view::npos) throw std::invalid_argument("not a snapshot: \"" + std::string(text) + "\"");
    SnapshotXids s;
    s.xmin = parse_xid(text.substr(0, a), text);
    s.xmax = parse_xid(text.substr(a + 1, b - a - 1), text);
    std::string_view rest = text.substr(b + 1);
    for (bool more = !rest.empty(); more;) {
        size_t comma = rest.find(',');
        s.xip.push_back(parse_xid(rest.substr(0, comma), text));   // (an empty one throws)
        more = comma != std::string_view::npos;
        if (more) rest = rest.substr(comma + 1);
    }
    if (s.xmin > s.xmax) throw std::invalid_argument("not a snapshot (xmin above xmax): \"" + std::string(text) + "\"");
    return s;
}

bool committed_xid_visible(uint32_t xid, const SnapshotXids& snapshot) {
    // How far below xmax the xid lies, modulo 2^32; "below" when that is in (0, 2^31].
    uint32_t below = static_cast<uint32_t>(snapshot.xmax) - xid;
    if (below == 0 || below > 0x80000000u) return false;   // at or above xmax: still running
    uint64_t full = snapshot.xmax - below;
    return std::find(snapshot.xip.begin(), snapshot.xip.end(), full) == snapshot.xip.end();
}

}  // namespace once::relay::wal
