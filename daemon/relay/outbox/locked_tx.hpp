// The locked claim mode's transactions (--claim-mode locked): one open batch is one
// transaction on a connection of its own, BEGIN + once.claim_locked in one flight, then
// once.ack / nack / dead + COMMIT in one flight. The lock is the lease: whenever a
// transaction fails, the database has every message back untouched, so the relay treats its
// in-memory batch as given back (Batch::give_back) and never acks it later (docs/design.md,
// "The loop in detail").
//
// LockedTx is the interface the relay drives (faked in the unit tests); PgLockedTx is the
// libpq one. start_settle_locked() / finish_settle_locked() are the one place that settles a
// locked batch: exactly once, and only when the Batch says it is finished.
#pragma once

#include "batch.hpp"
#include "duration.hpp"
#include "message.hpp"
#include "outbox/statements.hpp"

#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

namespace once::relay {

// The transaction rolled back on a healthy connection (a failed COMMIT, an error in one of
// the settle calls): every message of the batch is back in the outbox.
class TxFailed : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What the database answered to a committed settlement.
struct SettleReport {
    int64_t acked = 0;                        // once.ack's count
    std::vector<std::string> nack_verdicts;   // per Settlement::nacks, in order: "retry" or "dead"
};

class LockedTx {
public:
    virtual ~LockedTx() = default;
    // Connects. Returns false when the database has no once.claim_locked (pg_once SQL before
    // 0.2): the relay then leases. Throws DbLost.
    virtual bool connect() = 0;
    // BEGIN + once.claim_locked, without waiting for it, so the relay's two connections claim
    // side by side (each claim is a scan on one server core): start_claim() sends it,
    // claim_ready() reads what has arrived without blocking, finish_claim() returns the answer
    // once ready. An empty claim ends the transaction; a non-empty one stays open until the
    // settlement or rollback(). finish_claim throws DbLost (connection gone) or
    // std::runtime_error (the server refused; nothing is held).
    virtual void start_claim(int batch, const std::vector<std::string>& topics) = 0;
    virtual bool claim_ready() = 0;
    virtual std::vector<Message> finish_claim() = 0;
    virtual int socket() const = 0;   // to poll while a flight is out; -1: none
    // ack + nacks + deads + COMMIT of the open transaction, without waiting, like start_claim:
    // start_settle() sends it and never throws, settle_ready() is true once the answer (or the
    // failure) is in, finish_settle() returns the report or throws TxFailed or DbLost: the
    // transaction rolled back, the outbox has every message of the batch back.
    virtual void start_settle(const Batch::Settlement& s) = 0;
    virtual bool settle_ready() = 0;
    virtual SettleReport finish_settle() = 0;
    // Ends the open transaction without settling: every message goes back untouched.
    // Never throws (on a broken connection the server rolls back by itself).
    virtual void rollback() noexcept = 0;
    virtual bool connected() const = 0;
    virtual void disconnect() = 0;
};

// What finish_settle_locked did with a batch.
struct LockedSettle {
    enum class Result { not_finished, committed, given_back } result = Result::not_finished;
    Batch::Settlement settlement;   // committed: what was settled (pointers into the batch)
    SettleReport report;            // committed: the database's answers
    std::string error;              // given_back: why
    bool connection_lost = false;   // given_back because the connection broke: reconnect
};

// When `b` is finished: its settlement and COMMIT, exactly once, in two halves for the relay's
// loop. start_settle_locked takes the settlement of a finished batch and sends it (not
// finished, already settled or given back: nothing, std::nullopt); finish_settle_locked reads
// the answer once tx.settle_ready(). A failed transaction gives the batch back
// (b.given_back() afterwards).
std::optional<Batch::Settlement> start_settle_locked(Batch& b, LockedTx& tx);
LockedSettle finish_settle_locked(Batch& b, LockedTx& tx, Batch::Settlement s);

// `text` with every byte that is not part of a valid UTF-8 sequence replaced by '?'. Sink
// errors (an HTTP body cut at 200 bytes) go into once.nack / once.dead; an invalid one would
// fail the whole settlement, and in the locked mode that rolls the batch back to be published
// and refused again, with no attempt ever counted.
std::string valid_utf8(const std::string& text);

// A libpq connection in pipeline mode for one locked transaction at a time. In the leased
// mode the relay uses one as well, for its claims only (connect_for_leased_claims): each
// start_leased_claim is one autocommitted once.claim sent without waiting, so the loop goes
// on publishing and settling (on the LISTEN connection) while the database leases the next
// batch.
class PgLockedTx final : public LockedTx {
public:
    // `session_settings`: SET statements run on every (re)connect, after synchronous_commit
    // (outbox/locked_hold_bound.hpp: the bound on how long a frozen relay holds a batch).
    PgLockedTx(std::string conninfo, std::string relay_name, Millis connect_timeout, std::string synchronous_commit,
               std::vector<std::string> session_settings = {});
    ~PgLockedTx() override;
    PgLockedTx(const PgLockedTx&) = delete;
    PgLockedTx& operator=(const PgLockedTx&) = delete;

    // Connects and prepares. Returns false when the database has no once.claim_locked (pg_once
    // SQL before 0.2): the caller falls back to the leased mode. Throws DbLost.
    bool connect() override;
    // For leased claims only: prepares once.claim (every pg_once version has it). Throws DbLost.
    void connect_for_leased_claims();
    void start_leased_claim(int batch, Millis lease, const std::vector<std::string>& topics);
    void disconnect() override;
    bool connected() const override;

    void start_claim(int batch, const std::vector<std::string>& topics) override;
    bool claim_ready() override;
    std::vector<Message> finish_claim() override;
    int socket() const override;
    void start_settle(const Batch::Settlement& s) override;
    bool settle_ready() override;
    SettleReport finish_settle() override;
    void rollback() noexcept override;

private:
    struct Cmd;
    struct Answer;
    void send_flight(const std::vector<Cmd>& cmds);
    void start_async(const std::vector<Cmd>& cmds);   // send_flight, answers read by async_ready
    bool async_ready();                     // reads what has arrived; true at the flight's Sync
    void wait_async();
    std::vector<Answer> take_async();
    bool take_result(PGresult* r);          // one result of the flight out; true at its Sync
    void read_pending();
    [[noreturn]] void lost(const std::string& what);
    void open_connection();                 // connect, refuse a standby, set synchronous_commit
    void prepare(OutboxStatement which);

    std::string conninfo_;
    std::string name_;
    Millis connect_timeout_;
    std::string synchronous_commit_;
    std::vector<std::string> session_settings_;
    PGconn* conn_ = nullptr;
    int pending_syncs_ = 0;   // flights sent whose answers are not read yet (a ROLLBACK)
    // The flight sent without waiting (a claim, or a settlement), until its answers are taken.
    bool leased_claim_ = false;             // the claim out is a leased once.claim (one answer, no BEGIN)
    bool async_out_ = false;
    bool async_done_ = false;
    std::vector<Answer> async_answers_;
    // The settlement out: what its answers are, and a failure to send it (thrown by finish_settle).
    std::vector<std::string> settle_stmts_;
    size_t settle_acks_ = 0;
    size_t settle_nacks_ = 0;
    std::exception_ptr settle_failed_;
};

}  // namespace once::relay
