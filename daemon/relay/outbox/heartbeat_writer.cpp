#include "outbox/heartbeat_writer.hpp"

#include "heartbeat_state.hpp"
#include "pq_connect.hpp"
#include "pq_text.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <climits>
#include <memory>

namespace once::relay {

namespace {
using ResultPtr = std::unique_ptr<PGresult, void (*)(PGresult*)>;

std::string host_name() {
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
    return buf;
}
}  // namespace

HeartbeatWriter::HeartbeatWriter(std::string conninfo, Millis connect_timeout, HeartbeatIdentity id, const Metrics& metrics)
    : conninfo_(std::move(conninfo)), connect_timeout_(connect_timeout), id_(std::move(id)), metrics_(metrics),
      host_(host_name()), pid_(static_cast<int>(getpid())),
      started_at_unix_(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()),
      last_acked_(metrics.acked.load()), last_beat_at_(std::chrono::steady_clock::now()) {
    thread_ = std::thread([this] { run(); });
}

HeartbeatWriter::~HeartbeatWriter() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        char err[256];
        if (cancel_) PQcancel(cancel_, err, sizeof err);
    }
    cv_.notify_all();
    thread_.join();
    // The last word: the relay stopped on purpose (an error or a crash leaves the last beat to age).
    if (stopped_cleanly_ && !missing_) beat(true);
    disconnect();
}

void HeartbeatWriter::disconnect() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (cancel_) { PQfreeCancel(cancel_); cancel_ = nullptr; }
    }
    if (conn_) { PQfinish(conn_); conn_ = nullptr; }
}

void HeartbeatWriter::run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
        lock.unlock();
        beat(false);
        lock.lock();
        // (a database without the function: look again now and then, an update may add it)
        auto wait = missing_ ? Millis(std::chrono::minutes(10)) : id_.interval;
        cv_.wait_for(lock, wait, [this] { return stop_.load(); });
    }
}

bool HeartbeatWriter::beat(bool stopping) {
    auto failed = [&](const std::string& why) {
        if (stop_ && !stopping) return false;   // (cancelled: the relay is stopping)
        if (!failing_) spdlog::warn("heartbeat: cannot write the relay's heartbeat: {} (trying again every {})", why,
                                    format_duration(id_.interval));
        else spdlog::debug("heartbeat: cannot write the relay's heartbeat: {}", why);
        failing_ = true;
        if (conn_ && PQstatus(conn_) != CONNECTION_OK) disconnect();
        return false;
    };
    if (!conn_) {
        conn_ = relay_connect(conninfo_, "once-relay " + id_.relay_name, connect_timeout_);
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
    ResultPtr has(PQexec(conn_, "SELECT pg_catalog.to_regprocedure('once.relay_heartbeat(text, text, integer, text, text, text, "
                                "double precision, timestamptz, text, interval)') IS NOT NULL"),
                  PQclear);
    if (PQresultStatus(has.get()) != PGRES_TUPLES_OK) return failed(one_line(PQresultErrorMessage(has.get())));
    if (PQgetvalue(has.get(), 0, 0)[0] != 't') {
        if (!missing_)
            spdlog::warn("heartbeat: the database has no once.relay_heartbeat() (pg_once SQL before 0.3: run ALTER EXTENSION "
                         "pg_once UPDATE); the console cannot see this relay");
        missing_ = true;
        return false;
    }
    missing_ = false;

    HeartbeatInputs in;
    in.db_up = metrics_.db_connected.load();
    in.sink_up = metrics_.sink_connected.load();
    in.wal_stream_active = metrics_.wal_stream_active.load();
    in.stopping = stopping;
    auto now = std::chrono::steady_clock::now();
    uint64_t acked = metrics_.acked.load();
    double rate = messages_per_second(last_acked_, acked, std::chrono::duration<double>(now - last_beat_at_).count());

    std::string state = heartbeat_state(in);
    std::string pid = std::to_string(pid_);
    std::string mps = fmt::format("{:.3f}", rate);
    std::string started = fmt::format("{:.3f}", started_at_unix_);
    std::string interval = std::to_string(id_.interval.count()) + " milliseconds";
    std::string transport = id_.transport;
    const char* values[10] = {id_.relay_name.c_str(), host_.c_str(), pid.c_str(), transport.c_str(), id_.sink.c_str(),
                              state.c_str(), mps.c_str(), started.c_str(), ONCE_VERSION, interval.c_str()};
    ResultPtr r(PQexecParams(conn_,
                             "SELECT once.relay_heartbeat($1, $2, $3::integer, $4, $5, $6, $7::double precision, "
                             "pg_catalog.to_timestamp($8::double precision), $9, $10::interval)",
                             10, nullptr, values, nullptr, nullptr, 0),
                PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return failed(one_line(PQresultErrorMessage(r.get())));
    last_acked_ = acked;
    last_beat_at_ = now;
    if (failing_) spdlog::info("heartbeat: writing the relay's heartbeat again");
    failing_ = false;
    return true;
}

}  // namespace once::relay
