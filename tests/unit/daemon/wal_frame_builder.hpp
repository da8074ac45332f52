// Hand-built replication frames and pgoutput messages for the WAL transport's unit tests:
// written from the PostgreSQL docs' layouts, independently of the parsers under test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wal_test {

inline void u8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }
inline void u32(std::string& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xFF));
}
inline void u64(std::string& out, uint64_t v) {
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xFF));
}

inline std::string xlog_data(uint64_t start, uint64_t end, int64_t time, std::string_view data) {
    std::string f = "w";
    u64(f, start);
    u64(f, end);
    u64(f, static_cast<uint64_t>(time));
    f += data;
    return f;
}

inline std::string keepalive(uint64_t end, int64_t time, bool reply) {
    std::string f = "k";
    u64(f, end);
    u64(f, static_cast<uint64_t>(time));
    u8(f, reply ? 1 : 0);
    return f;
}

inline std::string begin(uint64_t final_lsn, int64_t time, uint32_t xid) {
    std::string m = "B";
    u64(m, final_lsn);
    u64(m, static_cast<uint64_t>(time));
    u32(m, xid);
    return m;
}

inline std::string commit(uint64_t commit_lsn, uint64_t end_lsn, int64_t time) {
    std::string m = "C";
    u8(m, 0);
    u64(m, commit_lsn);
    u64(m, end_lsn);
    u64(m, static_cast<uint64_t>(time));
    return m;
}

inline std::string message(bool transactional, uint64_t lsn, std::string_view prefix, std::string_view content) {
    std::string m = "M";
    u8(m, transactional ? 1 : 0);
    u64(m, lsn);
    m += prefix;
    m.push_back('\0');
    u32(m, static_cast<uint32_t>(content.size()));
    m += content;
    return m;
}

}  // namespace wal_test
