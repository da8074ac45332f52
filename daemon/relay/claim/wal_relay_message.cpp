#include "claim/wal_relay_message.hpp"

#include <cstdio>
#include <ctime>
#include <utility>

namespace once::relay {

namespace {

// Digits by hand, not snprintf: this runs for every message the stream carries, and
// snprintf was 6 % of the relay's CPU while it drained a backlog (perf, 100k messages).
void put_digits(char* at, long long v, int width) {
    for (int i = width - 1; i >= 0; --i, v /= 10) at[i] = static_cast<char>('0' + v % 10);
}

std::string timestamptz_text(int64_t unix_us) {
    int64_t secs = unix_us / 1'000'000, us = unix_us % 1'000'000;
    if (us < 0) { us += 1'000'000; --secs; }
    std::time_t t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    long long year = tm.tm_year + 1900LL;
    if (year < 0 || year > 9999) {   // (not a time pg_once writes; kept exact all the same)
        char buf[64];
        std::snprintf(buf, sizeof buf, "%04lld-%02d-%02d %02d:%02d:%02d.%06lld+00", year, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us));
        return buf;
    }
    std::string out = "0000-00-00 00:00:00.000000+00";
    put_digits(&out[0], year, 4);
    put_digits(&out[5], tm.tm_mon + 1, 2);
    put_digits(&out[8], tm.tm_mday, 2);
    put_digits(&out[11], tm.tm_hour, 2);
    put_digits(&out[14], tm.tm_min, 2);
    put_digits(&out[17], tm.tm_sec, 2);
    put_digits(&out[20], us, 6);
    return out;
}

}  // namespace

Message relay_message(once::WalMessage&& m) {
    Message r;
    r.id = once::uuid_to_string(m.id);
    r.topic = std::move(m.topic);
    r.has_key = m.key.has_value();
    if (m.key) r.key = std::move(*m.key);
    r.payload = std::move(m.payload);
    if (m.headers) r.headers = std::move(*m.headers);
    r.attempt = 1;
    r.created_at = timestamptz_text(m.created_at_us);
    if (m.content_type) r.content_type = std::move(*m.content_type);
    return r;
}

WalKeyOrder relay_key_order(const once::WalMessage& m) {
    if (!m.key) return {};
    return WalKeyOrder{m.key_owner, once::uuid_to_string(m.key_seq)};
}

}  // namespace once::relay
