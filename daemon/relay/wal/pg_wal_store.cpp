#include "wal/pg_wal_store.hpp"

#include "core/error.hpp"
#include "core/json.hpp"
#include "pq_connect.hpp"
#include "pq_text.hpp"
#include "wal/message_tag.hpp"

#include <memory>
#include <stdexcept>

namespace once::relay {

namespace {
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;
}

PgWalStore::PgWalStore(std::string conninfo, std::string name, Millis connect_timeout, std::string slot)
    : conninfo_(std::move(conninfo)), name_(std::move(name)), connect_timeout_(connect_timeout), slot_(std::move(slot)) {}

PgWalStore::~PgWalStore() {
    if (conn_) PQfinish(conn_);
}

void PgWalStore::fail(const std::string& what) {
    std::string message = what + ": " + one_line(conn_ ? PQerrorMessage(conn_) : "out of memory");
    if (conn_ && PQstatus(conn_) != CONNECTION_OK) {
        PQfinish(conn_);
        conn_ = nullptr;
    }
    throw std::runtime_error(message);
}

PGconn* PgWalStore::connection() {
    if (conn_ && PQstatus(conn_) == CONNECTION_OK) return conn_;
    if (conn_) PQfinish(conn_);
    conn_ = relay_connect(conninfo_, name_ + " wal write-back", connect_timeout_);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) fail("database connection failed");
    Result r(PQexec(conn_, "SET search_path = pg_catalog, pg_temp"), PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) fail("SET search_path failed");
    // The relay's loop waits for these calls: a keyed write-back waiting for its key's lock
    // bucket gives up after kLockTimeout (55P03) and is retried later (WalWriteBackBusy).
    Result t(PQexec(conn_, ("SET lock_timeout = " + std::to_string(kLockTimeout.count())).c_str()), PQclear);
    if (PQresultStatus(t.get()) != PGRES_COMMAND_OK) fail("SET lock_timeout failed");
    return conn_;
}

std::optional<std::string> PgWalStore::message_key() {
    PGconn* c = connection();
    Result probe(PQexec(c, "SELECT to_regprocedure('once.wal_secret()') IS NOT NULL"), PQclear);
    if (PQresultStatus(probe.get()) != PGRES_TUPLES_OK) fail("looking for once.wal_secret() failed");
    if (std::string(PQgetvalue(probe.get(), 0, 0)) != "t") return std::nullopt;
    // Binary result: the key's bytes as they are (never logged).
    Result r(PQexecParams(c, "SELECT once.wal_secret()", 0, nullptr, nullptr, nullptr, nullptr, 1), PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) fail("SELECT once.wal_secret() failed");
    if (PQntuples(r.get()) != 1 || PQgetisnull(r.get(), 0, 0)) throw std::runtime_error("once.wal_secret() returned no key");
    std::string key(PQgetvalue(r.get(), 0, 0), static_cast<size_t>(PQgetlength(r.get(), 0, 0)));
    if (key.size() != wal::kWalKeySize)
        throw std::runtime_error("once.wal_secret() returned " + std::to_string(key.size()) + " bytes, not " +
                                 std::to_string(wal::kWalKeySize));
    return key;
}

std::string wal_write_back_record(const WalWriteBack& w, const std::string& slot) {
    const Message& m = *w.message;
    std::string out = "{";
    auto field = [&](const char* name) {
        if (out.size() > 1) out += ',';
        once::append_json_string(out, name);
        out += ':';
    };
    auto text = [&](const char* name, const std::string* value) {
        field(name);
        if (value) once::append_json_string(out, *value);
        else out += "null";
    };
    auto raw = [&](const char* name, const std::string& json) {   // (a number, a literal or JSON text)
        field(name);
        out += json;
    };
    text("id", &m.id);
    text("topic", &m.topic);
    text("key", m.has_key ? &m.key : nullptr);
    raw("payload", m.payload);
    raw("headers", m.headers.empty() ? std::string("null") : m.headers);
    text("content_type", m.content_type.empty() ? nullptr : &m.content_type);
    text("created_at", &m.created_at);
    raw("attempts", std::to_string(w.attempts));
    const std::string error(w.error.c_str());   // (text ends at a NUL byte, as it did as a parameter)
    text("error", &error);
    raw("dead", w.dead ? "true" : "false");
    raw("key_owner", m.has_key ? std::to_string(w.order.key_owner) : std::string("null"));
    text("key_seq", m.has_key ? &w.order.key_seq : nullptr);
    text("slot", m.has_key ? &slot : nullptr);   // the fence is this slot's
    const std::string retry_after = w.retry_after ? pg_interval(*w.retry_after) : std::string();
    text("retry_after", w.retry_after ? &retry_after : nullptr);
    out += '}';
    return out;
}

void PgWalStore::write_back(const WalWriteBack& w) {
    PGconn* c = connection();
    const std::string record = wal_write_back_record(w, slot_);
    const char* values[1] = {record.c_str()};
    Result r(PQexecParams(c,
                          "SELECT once.wal_write_back(pg_catalog.jsonb_populate_record("
                          "NULL::once.wal_write_back_message, $1::pg_catalog.jsonb))",
                          1, nullptr, values, nullptr, nullptr, 0),
             PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
        // The key's lock bucket is held: by a prepared transaction (ON216, at once), or by a
        // transaction longer than the lock_timeout (55P03). Nothing was written; the
        // connection is fine.
        const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
        if (state && (std::string(state) == sqlstate::key_held_by_prepared || std::string(state) == "55P03"))
            throw WalWriteBackBusy("once.wal_write_back: " +
                                   one_line(PQresultErrorField(r.get(), PG_DIAG_MESSAGE_PRIMARY)
                                                ? PQresultErrorField(r.get(), PG_DIAG_MESSAGE_PRIMARY)
                                                : "the key's lock is held"));
        fail("once.wal_write_back failed");
    }
}

std::string PgWalStore::current_snapshot() {
    Result r(PQexec(connection(), "SELECT pg_current_snapshot()::text"), PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1) fail("SELECT pg_current_snapshot() failed");
    return PQgetvalue(r.get(), 0, 0);
}

// One row whether or not the slot exists. invalidation_reason and failover exist from 17 on:
// read through to_jsonb so one statement serves every version. Physical senders are the WAL
// senders without a database; pg_stat_get_wal_senders() shows every role their pids, and
// pg_stat_get_activity() every role their database, so no extra grant is needed.
wal::SlotReading PgWalStore::read_slot() {
    PGconn* c = connection();
    const char* values[1] = {slot_.c_str()};
    Result r(PQexecParams(c,
                          "SELECT current_setting('server_version_num')::int, "
                          "       (SELECT count(*) FROM pg_stat_get_wal_senders() w "
                          "          JOIN pg_stat_get_activity(NULL::int) a ON a.pid = w.pid "
                          "         WHERE a.datid IS NULL)::int, "
                          "       s.slot_name IS NOT NULL, s.wal_status, to_jsonb(s) ->> 'invalidation_reason', "
                          "       to_jsonb(s) ->> 'failover', s.confirmed_flush_lsn::text "
                          "  FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = $1",
                          1, nullptr, values, nullptr, nullptr, 0),
             PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1) fail("reading pg_replication_slots failed");
    auto text = [&](int col) { return PQgetisnull(r.get(), 0, col) ? std::string() : std::string(PQgetvalue(r.get(), 0, col)); };
    wal::SlotReading s;
    s.slot = slot_;
    s.server_version = std::stoi(text(0));
    s.physical_senders = std::stoi(text(1));
    s.exists = text(2) == "t";
    s.wal_status = text(3);
    s.invalidation_reason = text(4);
    if (!PQgetisnull(r.get(), 0, 5)) s.failover = text(5) == "true";
    s.confirmed_flush_lsn = text(6);
    return s;
}

bool PgWalStore::key_in_table(const std::string& key, uint32_t owner) {
    PGconn* c = connection();
    std::string o = std::to_string(owner);
    const char* values[2] = {key.c_str(), o.c_str()};
    Result r(PQexecParams(c, "SELECT once.wal_key_in_table($1::text, $2::oid)", 2, nullptr, values, nullptr, nullptr, 0),
             PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1) fail("once.wal_key_in_table failed");
    return std::string(PQgetvalue(r.get(), 0, 0)) == "t";
}

int PgWalStore::release_fences(std::optional<wal::Lsn> confirmed) {
    PGconn* c = connection();
    std::string position = confirmed ? wal::format_lsn(*confirmed) : std::string();
    const char* values[2] = {slot_.c_str(), confirmed ? position.c_str() : nullptr};
    // Only this slot's fences. At start (nullopt) up to the slot's confirmed position as the
    // server has it; none (no slot yet): nothing of this slot is released.
    const char* sql = confirmed ? "SELECT once.wal_release_fences($1::name, $2::pg_lsn)"
                                : "SELECT once.wal_release_fences($1::name, COALESCE((SELECT s.confirmed_flush_lsn "
                                  "FROM pg_catalog.pg_replication_slots s WHERE s.slot_name = $1::name), '0/0'))";
    Result r(PQexecParams(c, sql, confirmed ? 2 : 1, nullptr, values, nullptr, nullptr, 0), PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1) fail("once.wal_release_fences failed");
    return std::stoi(PQgetvalue(r.get(), 0, 0));
}

std::vector<std::pair<std::string, uint32_t>> PgWalStore::fenced_keys() {
    PGconn* c = connection();
    const char* values[1] = {slot_.c_str()};
    Result r(PQexecParams(c, "SELECT key, key_owner FROM once.wal_fenced_keys($1::name)", 1, nullptr, values, nullptr,
                          nullptr, 0),
             PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) fail("once.wal_fenced_keys failed");
    std::vector<std::pair<std::string, uint32_t>> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
        out.emplace_back(PQgetvalue(r.get(), i, 0), static_cast<uint32_t>(std::stoul(PQgetvalue(r.get(), i, 1))));
    return out;
}

}  // namespace once::relay
