#include "outbox/source_db.hpp"

#include "outbox/claimed_rows.hpp"
#include "outbox/statements.hpp"
#include "pq_connect.hpp"
#include "pq_text.hpp"
#include "outbox/session_check.hpp"
#include "uri.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <memory>

namespace once::relay {

struct SourceDb::Result {
    std::unique_ptr<PGresult, void (*)(PGresult*)> r{nullptr, PQclear};
    PGresult* get() const { return r.get(); }
};

namespace {


}  // namespace

SourceDb::SourceDb(std::string conninfo, std::string relay_name, Millis connect_timeout, std::string synchronous_commit)
    : conninfo_(std::move(conninfo)), redacted_(redact_conninfo(conninfo_)), name_(std::move(relay_name)),
      connect_timeout_(connect_timeout), synchronous_commit_(std::move(synchronous_commit)) {}

SourceDb::~SourceDb() { disconnect(); }

void SourceDb::check_conninfo(const std::string& conninfo) {
    char* err = nullptr;
    PQconninfoOption* o = PQconninfoParse(conninfo.c_str(), &err);
    if (!o) {
        std::string e = one_line(err ? err : "invalid connection string");
        PQfreemem(err);
        throw std::runtime_error("--db: " + e);
    }
    PQconninfoFree(o);
}

void SourceDb::disconnect() {
    if (conn_) { PQfinish(conn_); conn_ = nullptr; }
    holds_lock_ = false;
}

bool SourceDb::connected() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }
int SourceDb::socket() const { return conn_ ? PQsocket(conn_) : -1; }

std::string SourceDb::server() const {
    if (!conn_) return "(not connected)";
    std::string host = PQhost(conn_) ? PQhost(conn_) : "?";
    return host + ":" + (PQport(conn_) ? PQport(conn_) : "?");
}

void SourceDb::raise(const std::string& what, const char* err) {
    std::string msg = what + ": " + one_line(err);
    if (!connected()) { disconnect(); throw DbLost(msg); }
    throw std::runtime_error(msg);
}

void SourceDb::connect() {
    disconnect();
    conn_ = relay_connect(conninfo_, "once-relay " + name_, connect_timeout_);
    if (PQstatus(conn_) != CONNECTION_OK) {
        std::string e = one_line(PQerrorMessage(conn_));
        disconnect();
        throw DbLost("cannot connect to " + redacted_ + ": " + e);
    }
    Result r;
    r.r.reset(PQexec(conn_,
        "SELECT pg_catalog.to_regprocedure('once.claim(text,integer,interval,text[])') IS NOT NULL,"
        "       pg_catalog.pg_is_in_recovery()"));
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) raise("cannot inspect the database", PQresultErrorMessage(r.get()));
    bool has_claim = PQgetvalue(r.get(), 0, 0)[0] == 't';
    bool standby = PQgetvalue(r.get(), 0, 1)[0] == 't';
    if (standby) {
        std::string s = server();
        disconnect();
        throw DbLost("connected to a standby (" + s + "); add target_session_attrs=read-write to --db so the primary is chosen");
    }
    if (!has_claim) {
        disconnect();
        throw std::runtime_error("the database (" + redacted_ + ") has no once.claim(text,integer,interval,text[]): "
                                 "run CREATE EXTENSION pg_once there and grant once_relay to the relay's user");
    }
    // LISTEN, the prepared statements and the maintenance lock need a session of our own: a
    // transaction pool (outbox/session_check.hpp) is a configuration error, not an outage.
    try {
        check_own_session(conn_, conninfo_, redacted_, "once-relay " + name_, connect_timeout_);
    } catch (const SessionRequired&) {
        disconnect();
        throw;
    } catch (const std::exception& e) {
        disconnect();
        throw DbLost(e.what());
    }
    for (OutboxStatement which : {OutboxStatement::claim_leased, OutboxStatement::ack, OutboxStatement::nack,
                                  OutboxStatement::extend, OutboxStatement::dead, OutboxStatement::purge,
                                  OutboxStatement::saga_tick}) {
        const PreparedStatement& p = outbox_statement(which);
        Result pr;
        pr.r.reset(PQprepare(conn_, p.name, p.sql.c_str(), p.params, nullptr));
        if (PQresultStatus(pr.get()) != PGRES_COMMAND_OK) {
            if (prepare_clash_sqlstate(PQresultErrorField(pr.get(), PG_DIAG_SQLSTATE))) {
                std::string e = one_line(PQresultErrorMessage(pr.get()));
                disconnect();
                throw SessionRequired(session_required_message(redacted_, "preparing " + std::string(p.name) + " on a new connection: " + e));
            }
            raise(std::string("cannot prepare ") + p.name, PQresultErrorMessage(pr.get()));
        }
    }
    // The relay's own transactions (claim, ack, nack, extend) need not wait for a WAL flush:
    // a crash can only lose a claim (the lease is lost, the message comes back) or an ack (the
    // message is delivered again, the sink dedupes). The messages themselves were committed
    // durably by their producers. Saves two fsyncs per batch: latency and throughput.
    {
        std::string set = "SET synchronous_commit = " + synchronous_commit_;   // validated option value
        Result sr;
        sr.r.reset(PQexec(conn_, set.c_str()));
        if (PQresultStatus(sr.get()) != PGRES_COMMAND_OK) raise("cannot set synchronous_commit", PQresultErrorMessage(sr.get()));
    }
    std::string listen = std::string("LISTEN ") + kWakeChannel;
    Result lr;
    lr.r.reset(PQexec(conn_, listen.c_str()));
    if (PQresultStatus(lr.get()) != PGRES_COMMAND_OK) raise("LISTEN failed", PQresultErrorMessage(lr.get()));
    PQsetnonblocking(conn_, 0);
}

bool SourceDb::consume_wakeups() {
    if (!conn_) return false;
    if (PQconsumeInput(conn_) != 1) {
        std::string e = one_line(PQerrorMessage(conn_));
        disconnect();
        throw DbLost("connection lost: " + e);
    }
    bool woke = false;
    while (PGnotify* n = PQnotifies(conn_)) {
        woke = true;
        PQfreemem(n);
    }
    if (PQstatus(conn_) != CONNECTION_OK) { disconnect(); throw DbLost("connection lost"); }
    return woke;
}

SourceDb::Result SourceDb::exec(const char* name, bool prepared, const std::vector<const char*>& params) {
    if (!conn_) throw DbLost("not connected");
    Result r;
    if (prepared)
        r.r.reset(PQexecPrepared(conn_, name, static_cast<int>(params.size()), params.data(), nullptr, nullptr, 0));
    else
        r.r.reset(PQexecParams(conn_, name, static_cast<int>(params.size()), nullptr, params.data(), nullptr, nullptr, 0));
    auto st = PQresultStatus(r.get());
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
    const char* code = r.get() ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    std::string msg = one_line(r.get() ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_));
    // Connection exceptions, shutdowns and "read-only" after a failover: reconnect.
    // 26000: a statement prepared on this connection is gone (its session changed under it, as
    // through a transaction pool): reconnect, and the connect's check says why.
    bool lost = !connected() || connection_lost_sqlstate(code) || (prepared && prepared_statement_missing_sqlstate(code));
    if (lost) { disconnect(); throw DbLost(std::string(name).substr(0, 60) + ": " + msg); }
    throw std::runtime_error(msg);
}

std::vector<Message> SourceDb::claim(int batch, Millis lease, const std::vector<std::string>& topics) {
    std::string b = std::to_string(batch), l = pg_interval(lease);
    std::string t = array_literal(topics);
    Result r = exec(outbox_statement(OutboxStatement::claim_leased).name, true, {name_.c_str(), b.c_str(), l.c_str(), topics.empty() ? nullptr : t.c_str()});
    return decode_claimed_rows(r.get());
}

int64_t SourceDb::ack(const std::vector<std::string>& ids) {
    if (ids.empty()) return 0;
    std::string a = array_literal(ids);
    Result r = exec(outbox_statement(OutboxStatement::ack).name, true, {name_.c_str(), a.c_str()});
    if (PQntuples(r.get()) == 1 && !PQgetisnull(r.get(), 0, 0)) {
        const char* v = PQgetvalue(r.get(), 0, 0);
        if (*v >= '0' && *v <= '9') return std::atoll(v);
    }
    return static_cast<int64_t>(ids.size());
}

std::string SourceDb::nack(const std::string& id, const std::string& error, std::optional<Millis> retry_after) {
    std::string ra = retry_after ? pg_interval(*retry_after) : std::string();
    Result r = exec(outbox_statement(OutboxStatement::nack).name, true, {name_.c_str(), id.c_str(), error.c_str(), retry_after ? ra.c_str() : nullptr});
    if (PQntuples(r.get()) == 1 && !PQgetisnull(r.get(), 0, 0)) return PQgetvalue(r.get(), 0, 0);
    return "retry";
}

void SourceDb::dead(const std::string& id, const std::string& error) {
    exec(outbox_statement(OutboxStatement::dead).name, true, {name_.c_str(), id.c_str(), error.c_str()});
}

void SourceDb::extend(const std::vector<std::string>& ids, Millis lease) {
    if (ids.empty()) return;
    std::string a = array_literal(ids), l = pg_interval(lease);
    exec(outbox_statement(OutboxStatement::extend).name, true, {name_.c_str(), a.c_str(), l.c_str()});
}

bool SourceDb::try_maintenance_lock() {
    if (holds_lock_) return true;
    // pg_once's own session lock: SQL's advisory lock functions cannot take it first.
    Result r = exec("SELECT once.relay_maintenance_lock()", false, {});
    holds_lock_ = PQgetvalue(r.get(), 0, 0)[0] == 't';
    return holds_lock_;
}

int64_t SourceDb::purge() {
    Result r = exec(outbox_statement(OutboxStatement::purge).name, true, {});
    if (PQntuples(r.get()) == 1 && !PQgetisnull(r.get(), 0, 0)) return std::atoll(PQgetvalue(r.get(), 0, 0));
    return 0;
}

std::optional<WaitingCount> SourceDb::waiting_messages(const std::string& wal_slot) {
    try {
        Result r = exec("SELECT COALESCE(sum(ready + delayed + in_flight + blocked), 0)::bigint, COALESCE(bool_or(capped), false) "
                        "FROM once.relay_topic_gauges()", false, {});
        if (PQntuples(r.get()) != 1) return std::nullopt;
        WaitingCount w{std::atoll(PQgetvalue(r.get(), 0, 0)), PQgetvalue(r.get(), 0, 1)[0] == 't', wal_slot, -1};
        if (!wal_slot.empty()) {
            Result s = exec("SELECT (pg_catalog.pg_current_wal_lsn() OPERATOR(pg_catalog.-) confirmed_flush_lsn)::bigint "
                            "FROM pg_catalog.pg_replication_slots WHERE slot_name OPERATOR(pg_catalog.=) $1",
                            false, {wal_slot.c_str()});
            if (PQntuples(s.get()) == 1 && !PQgetisnull(s.get(), 0, 0)) w.wal_slot_bytes = std::atoll(PQgetvalue(s.get(), 0, 0));
        }
        return w;
    } catch (const DbLost&) {
        throw;
    } catch (const std::exception&) {
        return std::nullopt;   // (pg_once SQL before 0.3: no such function)
    }
}

void SourceDb::saga_tick() { exec(outbox_statement(OutboxStatement::saga_tick).name, true, {}); }

}  // namespace once::relay
