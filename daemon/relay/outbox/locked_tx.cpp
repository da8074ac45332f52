#include "outbox/locked_tx.hpp"

#include "outbox/source_db.hpp"
#include "outbox/claimed_rows.hpp"
#include "outbox/statements.hpp"
#include "pq_connect.hpp"
#include "pq_text.hpp"
#include "outbox/session_check.hpp"
#include "uri.hpp"

#include <libpq-fe.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include <poll.h>

namespace once::relay {

// ------------------------------------------------------------------------------ settling a batch

std::optional<Batch::Settlement> start_settle_locked(Batch& b, LockedTx& tx) {
    std::optional<Batch::Settlement> s = b.take_settlement();
    if (s) tx.start_settle(*s);
    return s;
}

LockedSettle finish_settle_locked(Batch& b, LockedTx& tx, Batch::Settlement s) {
    LockedSettle out;
    try {
        out.report = tx.finish_settle();
        out.result = LockedSettle::Result::committed;
        out.settlement = std::move(s);
    } catch (const DbLost& e) {
        out.result = LockedSettle::Result::given_back;
        out.error = e.what();
        out.connection_lost = true;
        b.give_back(out.error);
    } catch (const std::exception& e) {   // TxFailed, or anything else: the transaction is gone
        out.result = LockedSettle::Result::given_back;
        out.error = e.what();
        out.connection_lost = !tx.connected();
        b.give_back(out.error);
    }
    return out;
}

std::string valid_utf8(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    size_t i = 0, n = text.size();
    auto cont = [&](size_t k) { return k < n && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80; };
    while (i < n) {
        auto c = static_cast<unsigned char>(text[i]);
        size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        bool ok = len > 0 && c != 0;
        for (size_t k = 1; ok && k < len; ++k) ok = cont(i + k);
        if (ok && len == 3) {   // no overlong forms, no surrogates
            auto c1 = static_cast<unsigned char>(text[i + 1]);
            ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
        } else if (ok && len == 4) {   // no overlong forms, nothing above U+10FFFF
            auto c1 = static_cast<unsigned char>(text[i + 1]);
            ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
        }
        if (ok) {
            out.append(text, i, len);
            i += len;
        } else {
            out.push_back('?');
            ++i;
        }
    }
    return out;
}

// ------------------------------------------------------------------------------ PgLockedTx

namespace {

using PgResult = std::unique_ptr<PGresult, void (*)(PGresult*)>;

}  // namespace

struct PgLockedTx::Cmd {
    const char* stmt;                       // prepared statement name, or SQL when !prepared
    bool prepared;
    std::vector<std::optional<std::string>> params;
};

struct PgLockedTx::Answer {
    PgResult r{nullptr, PQclear};
    bool ok = false;
    std::string error;                      // !ok: the server's message (or "not run": aborted pipeline)
    std::string sqlstate;
};

PgLockedTx::PgLockedTx(std::string conninfo, std::string relay_name, Millis connect_timeout, std::string synchronous_commit,
                       std::vector<std::string> session_settings)
    : conninfo_(std::move(conninfo)), name_(std::move(relay_name)), connect_timeout_(connect_timeout),
      synchronous_commit_(std::move(synchronous_commit)), session_settings_(std::move(session_settings)) {}

PgLockedTx::~PgLockedTx() { disconnect(); }

void PgLockedTx::disconnect() {
    if (conn_) { PQfinish(conn_); conn_ = nullptr; }   // an open transaction rolls back
    pending_syncs_ = 0;
    async_out_ = async_done_ = false;
    async_answers_.clear();
}

bool PgLockedTx::connected() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

void PgLockedTx::lost(const std::string& what) {
    std::string e = what;
    if (conn_) e += ": " + one_line(PQerrorMessage(conn_));
    disconnect();
    throw DbLost(e);
}

// Connects; refuses a standby; sets the relay's synchronous_commit. Throws DbLost.
void PgLockedTx::open_connection() {
    disconnect();
    conn_ = relay_connect(conninfo_, "once-relay " + name_, connect_timeout_);
    if (PQstatus(conn_) != CONNECTION_OK) lost("cannot connect to " + redact_conninfo(conninfo_));
    PgResult probe(PQexec(conn_, "SELECT pg_catalog.pg_is_in_recovery()"), PQclear);
    if (PQresultStatus(probe.get()) != PGRES_TUPLES_OK) lost("probing the server");
    if (PQgetvalue(probe.get(), 0, 0)[0] == 't') {
        disconnect();
        throw DbLost("connected to a standby; add target_session_attrs=read-write to --db so the primary is chosen");
    }
    // The relay's own transactions need not wait for a WAL flush (--synchronous-commit off, the
    // default), and in the locked mode that is still safe: the messages were committed durably
    // by their producers, and all a crash can take away is a COMMIT the relay already saw
    // succeed. Its deletes are then undone with it: the messages are back in the outbox, are
    // delivered again, and the sink's dedupe (JetStream Nats-Msg-Id, the inbox) drops the
    // duplicates. Order per key holds: WAL is flushed in order, so if a key's later settle
    // survived, the earlier one did too. (A leased claim lost this way: the lease is
    // forgotten and the message comes back.)
    std::string set = "SET synchronous_commit = " + synchronous_commit_;   // validated option value
    PgResult r(PQexec(conn_, set.c_str()), PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) lost(set);
    for (const std::string& setting : session_settings_) {
        PgResult sr(PQexec(conn_, setting.c_str()), PQclear);
        if (PQresultStatus(sr.get()) != PGRES_COMMAND_OK) lost(setting);
    }
}

void PgLockedTx::prepare(OutboxStatement which) {
    const PreparedStatement& st = outbox_statement(which);
    PgResult r(PQprepare(conn_, st.name, st.sql.c_str(), st.params, nullptr), PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
        std::string server = one_line(PQresultErrorMessage(r.get()));
        bool clash = prepare_clash_sqlstate(PQresultErrorField(r.get(), PG_DIAG_SQLSTATE));
        disconnect();
        // On a fresh connection the name can only exist in a server session another connection
        // used before: a transaction pool (outbox/session_check.hpp).
        if (clash)
            throw SessionRequired(session_required_message(
                redact_conninfo(conninfo_), std::string("preparing ") + st.name + " on a new connection: " + server));
        throw DbLost(std::string("cannot prepare ") + st.name + ": " + server);
    }
}

bool PgLockedTx::connect() {
    open_connection();
    PgResult probe(PQexec(conn_, "SELECT pg_catalog.to_regprocedure('once.claim_locked(text,integer,text[])') IS NOT NULL"),
                   PQclear);
    if (PQresultStatus(probe.get()) != PGRES_TUPLES_OK) lost("probing for once.claim_locked");
    if (PQgetvalue(probe.get(), 0, 0)[0] != 't') {
        disconnect();
        return false;
    }
    for (OutboxStatement s : {OutboxStatement::claim_locked, OutboxStatement::ack, OutboxStatement::nack, OutboxStatement::dead})
        prepare(s);
    if (PQenterPipelineMode(conn_) != 1) lost("cannot enter pipeline mode");
    return true;
}

void PgLockedTx::connect_for_leased_claims() {
    open_connection();
    prepare(OutboxStatement::claim_leased);
    if (PQenterPipelineMode(conn_) != 1) lost("cannot enter pipeline mode");
}

void PgLockedTx::start_leased_claim(int batch, Millis lease, const std::vector<std::string>& topics) {
    std::optional<std::string> t;
    if (!topics.empty()) t = array_literal(topics);
    start_async({{outbox_statement(OutboxStatement::claim_leased).name, true, {name_, std::to_string(batch), pg_interval(lease), t}}});
    leased_claim_ = true;
}

// Reads the answers of flights sent earlier and not waited for (the ROLLBACK after an empty
// claim), so rollback() sees the transaction's real status. (A flight started later skips
// them in take_result.)
void PgLockedTx::read_pending() {
    while (pending_syncs_ > 0) {
        PGresult* r = PQgetResult(conn_);
        if (!r) {
            if (!connected()) lost("connection lost");
            continue;   // end of one statement's results
        }
        bool sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        PQclear(r);
        if (sync) --pending_syncs_;
    }
}

// Sends every command and one Sync: one round trip, its answers read by async_ready. After
// the first error the server skips the rest up to the Sync (their answers say "not run").
void PgLockedTx::send_flight(const std::vector<Cmd>& cmds) {
    if (!connected()) lost("not connected");
    for (const Cmd& c : cmds) {
        std::vector<const char*> vals;
        for (const auto& p : c.params) vals.push_back(p ? p->c_str() : nullptr);
        int n = static_cast<int>(vals.size());
        int sent = c.prepared ? PQsendQueryPrepared(conn_, c.stmt, n, vals.data(), nullptr, nullptr, 0)
                              : PQsendQueryParams(conn_, c.stmt, n, nullptr, vals.data(), nullptr, nullptr, 0);
        if (sent != 1) lost(std::string("sending ") + c.stmt);
    }
    if (PQpipelineSync(conn_) != 1) lost("sending a sync");   // (flushes: the connection blocks on writes)
}

// One answer of a statement: its status, and the server's error if it failed.
static void read_answer(PgResult& r, bool& ok, std::string& error, std::string& sqlstate) {
    auto st = PQresultStatus(r.get());
    ok = st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
    if (st == PGRES_PIPELINE_ABORTED) {
        error = "not run (an earlier statement of the transaction failed)";
    } else if (!ok) {
        error = one_line(PQresultErrorMessage(r.get()));
        const char* code = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
        sqlstate = code ? code : "";
    }
}

// Blocks until the flight sent without waiting has all its answers.
void PgLockedTx::wait_async() {
    while (!async_ready()) {
        pollfd p{PQsocket(conn_), POLLIN, 0};
        if (::poll(&p, 1, -1) < 0 && errno != EINTR) lost("poll");
    }
}

void PgLockedTx::start_async(const std::vector<Cmd>& cmds) {
    if (async_out_) lost("a flight is already out");   // (the relay never does this)
    send_flight(cmds);
    async_out_ = true;
    async_done_ = false;
    async_answers_.clear();
}

int PgLockedTx::socket() const { return conn_ ? PQsocket(conn_) : -1; }

// Takes one result (after the answers of earlier ROLLBACK flights). Returns true at the
// flight's own Sync.
bool PgLockedTx::take_result(PGresult* raw) {
    PgResult r(raw, PQclear);
    bool sync = PQresultStatus(raw) == PGRES_PIPELINE_SYNC;
    if (pending_syncs_ > 0) {   // an earlier ROLLBACK's answer
        if (sync) --pending_syncs_;
        return false;
    }
    if (sync) return true;
    Answer a;
    a.r = std::move(r);
    read_answer(a.r, a.ok, a.error, a.sqlstate);
    // 26000: a statement prepared on this connection is gone (a pool moved it to another
    // server session): reconnect, and the connect's checks say why.
    if (!a.ok && (!connected() || connection_lost_sqlstate(a.sqlstate.c_str()) ||
                  prepared_statement_missing_sqlstate(a.sqlstate.c_str())))
        lost(a.error);
    async_answers_.push_back(std::move(a));
    return false;
}

bool PgLockedTx::async_ready() {
    if (!async_out_ || async_done_) return true;
    if (!connected() || PQconsumeInput(conn_) != 1) lost("connection lost");
    // PQisBusy: a PQgetResult now would block. Between statements it returns the NULL that ends
    // one statement's results and moves on to the next; after the flight's Sync we stop.
    while (!PQisBusy(conn_)) {
        PGresult* r = PQgetResult(conn_);
        if (!r) {
            if (!connected()) lost("connection lost");
            continue;
        }
        if (take_result(r)) {
            async_done_ = true;
            return true;
        }
    }
    return false;
}

std::vector<PgLockedTx::Answer> PgLockedTx::take_async() {
    if (!async_out_ || !async_done_) lost("answers taken before they arrived");
    async_out_ = async_done_ = false;
    return std::exchange(async_answers_, {});
}

void PgLockedTx::start_claim(int batch, const std::vector<std::string>& topics) {
    std::optional<std::string> t;
    if (!topics.empty()) t = array_literal(topics);
    start_async({{"BEGIN", false, {}}, {outbox_statement(OutboxStatement::claim_locked).name, true, {name_, std::to_string(batch), t}}});
    leased_claim_ = false;
}

bool PgLockedTx::claim_ready() { return async_ready(); }

std::vector<Message> PgLockedTx::finish_claim() {
    std::vector<Answer> a = take_async();
    if (leased_claim_) {   // one autocommitted statement: nothing to roll back
        if (a.size() != 1) lost("unexpected answers to a claim");
        if (!a[0].ok) throw std::runtime_error("once.claim: " + a[0].error);
    } else {
        if (a.size() != 2) lost("unexpected answers to a claim");
        if (!a[0].ok || !a[1].ok) {
            rollback();
            throw std::runtime_error("once.claim_locked: " + (a[0].ok ? a[1].error : a[0].error));
        }
    }
    std::vector<Message> out;
    try {
        out = decode_claimed_rows(a.back().r.get());
    } catch (...) {
        if (!leased_claim_) rollback();   // nothing decoded, nothing may stay held
        throw;
    }
    if (out.empty() && !leased_claim_) {
        // Nothing held: end the transaction without waiting for the answer (it is read with the
        // next flight), so an idle relay holds no snapshot and a drain pays no extra round trip.
        if (PQsendQueryParams(conn_, "ROLLBACK", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1 || PQpipelineSync(conn_) != 1)
            lost("sending ROLLBACK");
        ++pending_syncs_;
    }
    return out;
}

void PgLockedTx::start_settle(const Batch::Settlement& s) {
    std::vector<Cmd> cmds;
    if (!s.acks.empty()) cmds.push_back({outbox_statement(OutboxStatement::ack).name, true, {name_, array_literal(s.acks)}});
    for (const Batch::Entry* e : s.nacks) {
        std::optional<std::string> ra;
        if (e->retry_after) ra = pg_interval(*e->retry_after);
        cmds.push_back({outbox_statement(OutboxStatement::nack).name, true, {name_, e->msg.id, valid_utf8(e->error), ra}});
    }
    for (const Batch::Entry* e : s.deads) cmds.push_back({outbox_statement(OutboxStatement::dead).name, true, {name_, e->msg.id, valid_utf8(e->error)}});
    cmds.push_back({"COMMIT", false, {}});
    settle_stmts_.clear();
    for (const Cmd& c : cmds) settle_stmts_.emplace_back(c.stmt);
    settle_acks_ = s.acks.size();
    settle_nacks_ = s.nacks.size();
    settle_failed_ = nullptr;
    try {
        start_async(cmds);
    } catch (...) {
        settle_failed_ = std::current_exception();
    }
}

bool PgLockedTx::settle_ready() {
    if (settle_failed_) return true;
    try {
        return async_ready();
    } catch (...) {
        settle_failed_ = std::current_exception();
        return true;
    }
}

SettleReport PgLockedTx::finish_settle() {
    if (settle_failed_) std::rethrow_exception(std::exchange(settle_failed_, nullptr));
    std::vector<Answer> a = take_async();
    if (a.size() != settle_stmts_.size()) lost("unexpected answers to a settlement");
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].ok) continue;
        rollback();   // the transaction failed: every message of the batch is back
        throw TxFailed((i + 1 == a.size() ? std::string("COMMIT") : settle_stmts_[i]) + " failed" +
                       (a[i].sqlstate.empty() ? "" : " (SQLSTATE " + a[i].sqlstate + ")") + ": " + a[i].error);
    }
    // COMMIT of a transaction that failed earlier answers ROLLBACK; with the checks above it
    // cannot happen, but a commit is only believed when it says so.
    const char* tag = PQcmdStatus(a.back().r.get());
    if (!tag || std::strcmp(tag, "COMMIT") != 0) throw TxFailed(std::string("COMMIT answered ") + (tag ? tag : "nothing"));
    SettleReport rep;
    size_t i = 0;
    if (settle_acks_ > 0) {
        PGresult* r = a[i++].r.get();
        rep.acked = static_cast<int64_t>(settle_acks_);
        if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) rep.acked = std::atoll(PQgetvalue(r, 0, 0));
    }
    for (size_t k = 0; k < settle_nacks_; ++k) {
        PGresult* r = a[i++].r.get();
        rep.nack_verdicts.push_back(PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "retry");
    }
    return rep;
}

void PgLockedTx::rollback() noexcept {
    if (!conn_) return;
    try {
        // A flight still out: its answers would be read as the ROLLBACK's; closing the
        // connection rolls back what it took.
        if (!connected() || (async_out_ && !async_done_)) { disconnect(); return; }
        async_out_ = false;
        async_answers_.clear();
        read_pending();
        if (PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
        start_async({{"ROLLBACK", false, {}}});
        wait_async();
        take_async();
        if (PQtransactionStatus(conn_) != PQTRANS_IDLE) disconnect();
    } catch (...) {
        disconnect();   // the server rolls back what a closed connection held
    }
}

}  // namespace once::relay
