#include "sinks/postgres_sink.hpp"

#include "core/backoff.hpp"
#include "pq_connect.hpp"
#include "uri.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <random>

namespace once::relay {

using Clock = std::chrono::steady_clock;

PostgresSink::PostgresSink(const Uri& uri, std::string default_source, Millis timeout, Millis connect_timeout)
    : timeout_(timeout), connect_timeout_(connect_timeout) {
    source_ = uri.param("source", default_source);
    std::string tx = uri.param("tx", "group");
    if (tx != "group" && tx != "message") throw SinkError("postgresql sink: tx=" + tx + ": use tx=group or tx=message");
    std::string group = uri.param("group", "500");
    if (group.empty() || group.find_first_not_of("0123456789") != std::string::npos || std::stol(group) < 1 ||
        std::stol(group) > 10000)
        throw SinkError("postgresql sink: group=" + group + ": use a number 1..10000");
    group_max_ = tx == "message" ? 1 : static_cast<size_t>(std::stol(group));
    if (source_.empty()) throw SinkError("postgresql sink: the inbox source name is empty (set --name or ?source=)");
    conninfo_ = uri.without_params({"source", "tx", "group"});
    description_ = redact_uri(conninfo_);
    char* err = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(conninfo_.c_str(), &err);
    if (!parsed) {
        std::string e = err ? err : "invalid";
        PQfreemem(err);
        while (!e.empty() && e.back() == '\n') e.pop_back();
        throw SinkError("postgresql sink: invalid URI " + description_ + ": " + e);
    }
    PQconninfoFree(parsed);
}

PostgresSink::PostgresSink(TextIds, std::string conninfo, std::string source, Millis timeout, Millis connect_timeout)
    : conninfo_(std::move(conninfo)), source_(std::move(source)), timeout_(timeout), connect_timeout_(connect_timeout),
      group_max_(500), text_ids_(true) {
    description_ = redact_conninfo(conninfo_);
}

PostgresSink::~PostgresSink() { disconnect(); }

void PostgresSink::disconnect() {
    if (conn_) { PQfinish(conn_); conn_ = nullptr; }
}

void PostgresSink::connect() {
    disconnect();
    conn_ = relay_connect(conninfo_, "once-relay sink", connect_timeout_);
    if (PQstatus(conn_) != CONNECTION_OK) {
        std::string e = PQerrorMessage(conn_);
        while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
        disconnect();
        throw SinkError("cannot reach the inbox database " + description_ + ": " + e);
    }
    std::string setup = "SET statement_timeout = " + std::to_string(timeout_.count());
    PGresult* r = PQexec(conn_, setup.c_str());
    PQclear(r);
    r = PQexec(conn_,
               "SELECT pg_catalog.to_regprocedure('once.deliver(text,uuid,text,jsonb,jsonb)') IS NOT NULL,"
               "       EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
               "               WHERE n.nspname = 'once' AND p.proname = 'inbox_failed'),"
               "       pg_catalog.to_regprocedure('once.inbox_failed(text,text,text,text,jsonb,jsonb)') IS NOT NULL");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        std::string e = PQresultErrorMessage(r);
        PQclear(r);
        disconnect();
        throw SinkError("postgresql sink: cannot inspect the inbox database: " + e);
    }
    bool has_deliver = PQgetvalue(r, 0, 0)[0] == 't';
    has_inbox_failed_ = PQgetvalue(r, 0, 1)[0] == 't';
    inbox_failed_keeps_copy_ = PQgetvalue(r, 0, 2)[0] == 't';
    PQclear(r);
    if (!has_deliver) {
        disconnect();
        throw SinkError("postgresql sink: the database " + description_ +
                        " has no once.deliver(text,uuid,text,jsonb,jsonb); run CREATE EXTENSION pg_once there "
                        "and grant once_consumer to the relay's user");
    }
    r = PQprepare(conn_, "once_deliver",
                  text_ids_ ? "SELECT once.deliver($1, $2::text, $3, $4::jsonb, $5::jsonb)"
                            : "SELECT once.deliver($1, $2::uuid, $3, $4::jsonb, $5::jsonb)",
                  5, nullptr);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    std::string e = PQresultErrorMessage(r);
    PQclear(r);
    if (!ok) { disconnect(); throw SinkError("postgresql sink: cannot prepare once.deliver: " + e); }
    if (PQsetnonblocking(conn_, 1) != 0 || PQenterPipelineMode(conn_) != 1) {
        disconnect();
        throw SinkError("postgresql sink: cannot enter pipeline mode (libpq and server 14+ are needed)");
    }
    connect_failures_ = 0;
}

void PostgresSink::open() { connect(); }

bool PostgresSink::ready() {
    if (conn_ && PQstatus(conn_) == CONNECTION_OK) return true;
    if (!segments_.empty() || !pending_.empty()) return false;   // let process() report the failures first
    if (Clock::now() < retry_connect_at_) return false;
    try {
        connect();
        spdlog::info("postgresql sink: reconnected to {}", description_);
        return true;
    } catch (const SinkError& e) {
        ++connect_failures_;
        std::mt19937_64 rng(std::random_device{}());
        BackoffPolicy p{250, 10000};
        int64_t ms = backoff_delay_ms(p, std::min(connect_failures_, 12), std::uniform_real_distribution<double>(0.5, 1.0)(rng));
        retry_connect_at_ = Clock::now() + std::chrono::milliseconds(ms);
        // (the relay logs the outage once, when it starts and when it ends)
        spdlog::debug("{} (next try in {}ms)", e.what(), ms);
        return false;
    }
}

void PostgresSink::submit(uint64_t token, const Message& m) {
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
        Outcome o;
        o.token = token;
        o.verdict = Verdict::retry;
        o.error = "inbox database not connected";
        immediate_.push_back(std::move(o));
        return;
    }
    Call c;
    c.token = token;
    c.id = m.id;
    c.topic = m.topic;
    c.payload = m.payload;
    c.headers = m.headers;
    c.has_headers = !m.headers.empty();
    pending_.push_back(std::move(c));
    ++inflight_count_;
}

void PostgresSink::send_segment(Segment seg, std::vector<Outcome>& out) {
    for (auto& c : seg.calls) {
        int ok;
        if (seg.failure_record && inbox_failed_keeps_copy_) {
            // With a copy of the message: once.inbox_retry can run it again from there.
            const char* params[6] = {source_.c_str(), c.id.c_str(), c.outcome.error.c_str(), c.topic.c_str(),
                                     c.payload.c_str(), c.has_headers ? c.headers.c_str() : nullptr};
            ok = PQsendQueryParams(conn_, "SELECT once.inbox_failed($1, $2, $3, $4, $5::jsonb, $6::jsonb)", 6, nullptr,
                                   params, nullptr, nullptr, 0);
        } else if (seg.failure_record) {
            const char* params[3] = {source_.c_str(), c.id.c_str(), c.outcome.error.c_str()};
            ok = PQsendQueryParams(conn_, "SELECT once.inbox_failed($1, $2, $3)", 3, nullptr, params, nullptr, nullptr, 0);
        } else {
            const char* params[5] = {source_.c_str(), c.id.c_str(), c.topic.c_str(), c.payload.c_str(),
                                     c.has_headers ? c.headers.c_str() : nullptr};
            ok = PQsendQueryPrepared(conn_, "once_deliver", 5, params, nullptr, nullptr, 0);
        }
        if (ok != 1) {
            segments_.push_back(std::move(seg));
            fail_all(std::string("inbox database: ") + PQerrorMessage(conn_), out);
            return;
        }
    }
    if (PQpipelineSync(conn_) != 1) {
        segments_.push_back(std::move(seg));
        fail_all(std::string("inbox database: ") + PQerrorMessage(conn_), out);
        return;
    }
    segments_.push_back(std::move(seg));
    want_write_ = PQflush(conn_) == 1;
}

void PostgresSink::flush_pending(std::vector<Outcome>& out) {
    if (pending_.empty() || !conn_) return;
    std::vector<Call> calls;
    calls.swap(pending_);
    for (size_t i = 0; i < calls.size() && conn_;) {
        Segment seg;
        size_t n = std::min(group_max_, calls.size() - i);
        seg.grouped = n > 1;
        for (size_t k = 0; k < n; ++k) seg.calls.push_back(std::move(calls[i + k]));
        i += n;
        send_segment(std::move(seg), out);
    }
}

void PostgresSink::poll_fds(std::vector<pollfd>& fds) {
    if (!conn_ || segments_.empty()) return;
    fds.push_back(pollfd{PQsocket(conn_), static_cast<short>(POLLIN | (want_write_ ? POLLOUT : 0)), 0});
}

int PostgresSink::poll_timeout_ms() { return (immediate_.empty() && pending_.empty()) ? -1 : 0; }

void PostgresSink::fail_all(const std::string& why, std::vector<Outcome>& out) {
    auto fail = [&](Call& c) {
        Outcome o;
        o.token = c.token;
        o.verdict = Verdict::retry;
        o.error = why;
        out.push_back(std::move(o));
    };
    for (auto& seg : segments_)
        if (!seg.failure_record)
            for (auto& c : seg.calls) fail(c);
    for (auto& c : pending_) fail(c);
    segments_.clear();
    pending_.clear();
    inflight_count_ = 0;
    disconnect();
}

void PostgresSink::process(const pollfd*, size_t, std::vector<Outcome>& out) {
    for (auto& o : immediate_) out.push_back(std::move(o));
    immediate_.clear();
    if (!conn_) return;
    flush_pending(out);
    if (!conn_ || segments_.empty()) return;
    if (want_write_) {
        int f = PQflush(conn_);
        if (f < 0) { fail_all(std::string("inbox database: ") + PQerrorMessage(conn_), out); return; }
        want_write_ = f == 1;
    }
    if (PQconsumeInput(conn_) != 1) {
        std::string e = PQerrorMessage(conn_);
        while (!e.empty() && e.back() == '\n') e.pop_back();
        spdlog::warn("postgresql sink: connection lost: {}", e);
        fail_all("inbox database connection lost: " + e, out);
        return;
    }
    std::vector<Segment> resend;
    while (!segments_.empty() && !PQisBusy(conn_)) {
        PGresult* r = PQgetResult(conn_);
        if (r == nullptr) continue;   // end of one statement's results
        Segment& seg = segments_.front();
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            if (seg.failure_record) { segments_.pop_front(); continue; }
            bool any_failed = false;
            for (auto& c : seg.calls) any_failed |= c.failed || !c.have_result;
            if (seg.grouped && any_failed) {
                // The group's transaction rolled back: nothing of it happened. Send each
                // message again on its own so only the failing one fails.
                for (auto& c : seg.calls) {
                    Segment single;
                    c.have_result = false;
                    c.failed = false;
                    c.outcome = Outcome{};
                    single.calls.push_back(std::move(c));
                    resend.push_back(std::move(single));
                }
            } else {
                for (auto& c : seg.calls) {
                    if (!c.have_result) { c.outcome.verdict = Verdict::retry; c.outcome.error = "once.deliver returned nothing"; }
                    c.outcome.token = c.token;
                    out.push_back(std::move(c.outcome));
                    --inflight_count_;
                    if (c.failed && has_inbox_failed_ && !seg.grouped) {
                        Segment f;
                        f.failure_record = true;
                        Call fc;
                        fc.id = c.id;
                        fc.topic = c.topic;
                        fc.payload = c.payload;
                        fc.headers = c.headers;
                        fc.has_headers = c.has_headers;
                        fc.outcome.error = out.back().error;
                        f.calls.push_back(std::move(fc));
                        resend.push_back(std::move(f));
                    }
                }
            }
            segments_.pop_front();
            continue;
        }
        if (seg.failure_record || seg.next >= seg.calls.size()) { PQclear(r); continue; }
        Call& c = seg.calls[seg.next++];
        c.have_result = true;
        if (st == PGRES_TUPLES_OK && PQntuples(r) == 1) {
            std::string v = PQgetvalue(r, 0, 0);
            if (v == "processed" || v == "duplicate") {
                c.outcome.verdict = Verdict::delivered;
                c.outcome.duplicate = v == "duplicate";
            } else if (v == "no_handler") {
                c.outcome.verdict = Verdict::retry;
                c.outcome.error = "no handler subscribed for topic \"" + c.topic + "\" in the inbox database (once.subscribe); will retry";
            } else if (v == "poison") {
                c.outcome.verdict = Verdict::dead;
                c.outcome.error = "message is poison in the inbox database (handler failed too often; see once.inbox_poison)";
            } else {
                c.outcome.verdict = Verdict::retry;
                c.outcome.error = "once.deliver returned unexpected \"" + v + "\"";
            }
        } else {
            const char* msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
            const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            c.failed = true;
            c.outcome.verdict = Verdict::retry;
            if (st == PGRES_PIPELINE_ABORTED)
                c.outcome.error = "skipped: another message of its transaction failed";
            else
                c.outcome.error = std::string("handler failed in the inbox database: ") +
                                  (msg ? msg : PQresultErrorMessage(r)) +
                                  (code ? std::string(" (SQLSTATE ") + code + ")" : std::string());
        }
        PQclear(r);
    }
    for (auto& seg : resend) {
        if (!conn_) break;
        inflight_count_ += 0;   // resent members are still counted as in flight
        send_segment(std::move(seg), out);
    }
    if (conn_ && PQstatus(conn_) != CONNECTION_OK) fail_all("inbox database connection lost", out);
}

void PostgresSink::abandon(std::vector<Outcome>& out) {
    process(nullptr, 0, out);
    if (!segments_.empty() || !pending_.empty()) fail_all("inbox call abandoned (relay stopping or database lost)", out);
}

}  // namespace once::relay
