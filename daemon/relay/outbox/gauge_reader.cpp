#include "outbox/gauge_reader.hpp"

#include "pq_connect.hpp"
#include "pq_text.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace once::relay {

std::chrono::milliseconds next_gauge_read_in(std::chrono::milliseconds took) {
    return std::max<std::chrono::milliseconds>(kGaugeInterval, took * 20);
}

GaugeReader::GaugeReader(std::string conninfo, std::string relay_name, Millis connect_timeout, Metrics& metrics,
                         std::string wal_slot)
    : conninfo_(std::move(conninfo)), name_(std::move(relay_name)), connect_timeout_(connect_timeout),
      wal_slot_(std::move(wal_slot)), metrics_(metrics) {
    metrics_.outbox_gauges_enabled = true;
    thread_ = std::thread([this] { run(); });
}

GaugeReader::~GaugeReader() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        char err[256];
        if (cancel_) PQcancel(cancel_, err, sizeof err);
    }
    cv_.notify_all();
    thread_.join();
    disconnect();
}

void GaugeReader::disconnect() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (cancel_) { PQfreeCancel(cancel_); cancel_ = nullptr; }
    }
    if (conn_) { PQfinish(conn_); conn_ = nullptr; }
}

void GaugeReader::run() {
    using Clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
        lock.unlock();
        auto start = Clock::now();
        read_once();
        auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
        lock.lock();
        // (a database without the functions: look again now and then, an update may add them)
        auto wait = missing_ ? std::chrono::milliseconds(std::chrono::minutes(10)) : next_gauge_read_in(took);
        cv_.wait_for(lock, wait, [this] { return stop_.load(); });
    }
}

namespace {
using ResultPtr = std::unique_ptr<PGresult, void (*)(PGresult*)>;
int64_t to_i64(const PGresult* r, int row, int col) { return std::strtoll(PQgetvalue(r, row, col), nullptr, 10); }
}  // namespace

bool GaugeReader::read_once() {
    auto start = std::chrono::steady_clock::now();
    auto failed = [&](const std::string& why) {
        if (stop_) return false;   // (cancelled: the relay is stopping)
        if (!failing_) spdlog::warn("metrics: cannot read the outbox gauges: {} (trying again every {} s)", why,
                                    kGaugeInterval.count());
        else spdlog::debug("metrics: cannot read the outbox gauges: {}", why);
        failing_ = true;
        if (conn_ && PQstatus(conn_) != CONNECTION_OK) disconnect();
        return false;
    };
    if (!conn_) {
        conn_ = relay_connect(conninfo_, "once-relay " + name_, connect_timeout_);
        if (PQstatus(conn_) != CONNECTION_OK) {
            std::string e = one_line(PQerrorMessage(conn_));
            disconnect();
            return failed("cannot connect: " + e);
        }
        ResultPtr r(PQexec(conn_, "SET statement_timeout = '10s'"), PQclear);
        if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return failed(one_line(PQresultErrorMessage(r.get())));
        std::lock_guard<std::mutex> lock(mu_);
        cancel_ = PQgetCancel(conn_);
    }
    read_wal_slot_lag();
    ResultPtr has(PQexec(conn_, "SELECT pg_catalog.to_regprocedure('once.relay_topic_gauges()') IS NOT NULL"), PQclear);
    if (PQresultStatus(has.get()) != PGRES_TUPLES_OK) return failed(one_line(PQresultErrorMessage(has.get())));
    if (PQgetvalue(has.get(), 0, 0)[0] != 't') {
        if (!missing_)
            spdlog::warn("metrics: the database has no once.relay_topic_gauges() (pg_once SQL before 0.3: run ALTER "
                         "EXTENSION pg_once UPDATE); /metrics has no outbox gauges");
        missing_ = true;
        return false;
    }
    missing_ = false;
    OutboxGauges g;
    ResultPtr t(PQexec(conn_, "SELECT topic, ready, delayed, in_flight, blocked, dead, COALESCE(oldest_ready_age, 0), capped "
                              "FROM once.relay_topic_gauges()"),
                PQclear);
    if (PQresultStatus(t.get()) != PGRES_TUPLES_OK) return failed(one_line(PQresultErrorMessage(t.get())));
    for (int i = 0; i < PQntuples(t.get()); ++i) {
        TopicGauge tg;
        tg.topic = PQgetvalue(t.get(), i, 0);
        tg.ready = to_i64(t.get(), i, 1);
        tg.delayed = to_i64(t.get(), i, 2);
        tg.in_flight = to_i64(t.get(), i, 3);
        tg.blocked = to_i64(t.get(), i, 4);
        tg.dead = to_i64(t.get(), i, 5);
        tg.oldest_ready_age = std::strtod(PQgetvalue(t.get(), i, 6), nullptr);
        tg.capped = PQgetvalue(t.get(), i, 7)[0] == 't';
        g.topics.push_back(std::move(tg));
    }
    ResultPtr s(PQexec(conn_, "SELECT status, sagas, capped FROM once.relay_saga_gauges()"), PQclear);
    if (PQresultStatus(s.get()) != PGRES_TUPLES_OK) return failed(one_line(PQresultErrorMessage(s.get())));
    for (int i = 0; i < PQntuples(s.get()); ++i)
        g.sagas.push_back(SagaGauge{PQgetvalue(s.get(), i, 0), to_i64(s.get(), i, 1), PQgetvalue(s.get(), i, 2)[0] == 't'});
    g.read_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
    g.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_.set_outbox_gauges(std::move(g));
    if (failing_) spdlog::info("metrics: reading the outbox gauges again");
    failing_ = false;
    return true;
}

// The WAL the slot holds back: the server's current position minus what the relay confirmed
// (pg_replication_slots and pg_current_wal_lsn() are readable by every role). No row (the slot
// is missing) or NULL (invalidated): -1, and the gauge is left out.
void GaugeReader::read_wal_slot_lag() {
    if (wal_slot_.empty()) return;
    const char* values[1] = {wal_slot_.c_str()};
    ResultPtr r(PQexecParams(conn_,
                             "SELECT (pg_catalog.pg_current_wal_lsn() - confirmed_flush_lsn)::bigint "
                             "FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
                             1, nullptr, values, nullptr, nullptr, 0),
                PQclear);
    int64_t lag = -1;
    if (PQresultStatus(r.get()) == PGRES_TUPLES_OK && PQntuples(r.get()) == 1 && !PQgetisnull(r.get(), 0, 0))
        lag = std::stoll(PQgetvalue(r.get(), 0, 0));
    metrics_.wal_slot_lag_bytes = lag;
}

}  // namespace once::relay
