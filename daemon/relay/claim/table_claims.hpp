// The outbox table as one claim source: the locked lanes (claim/locked_lanes.hpp) in the locked
// mode, the leased claims (claim/leased_claims.hpp) in the leased mode, and the fallback
// between them, so that the relay drives the table like any other source.
//
// When to claim: the table is claimed on a wake-up (a NOTIFY on the LISTEN connection, a
// reconnect, a settlement: wake()) or when the poll interval has passed without one. A claim
// answered with messages claims again at once: an outbox that hands out one message per key
// per claim returns short batches while a backlog remains. The next empty answer ends the
// drain, unless a wake-up came while that claim was out (its snapshot may predate the commit
// that woke us).
//
// The fallback: after a locked settlement failed on a healthy connection, claims are leased
// (on the LISTEN connection) for kLeasedAfterFailure. A rolled-back batch comes back with no
// attempt counted, so a message whose settlement always fails would come back forever;
// leased, its attempts are counted and it ends as a dead letter like any other. A database
// with no once.claim_locked (pg_once SQL before 0.2) is claimed leased for the rest of the run.
//
// Unit-tested with a fake LeaseStore and fake transactions (tests/unit/daemon/table_claims_test).
#pragma once

#include "claim/claim_source.hpp"
#include "claim/lease_store.hpp"
#include "claim/leased_claims.hpp"
#include "claim/locked_lanes.hpp"
#include "metrics.hpp"
#include "outbox/locked_tx.hpp"

#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pollfd;

namespace once::relay {

class TableClaims final : public ClaimSource {
public:
    // Claimed batches open at the same time: one publishing, the next claimed behind it.
    static constexpr size_t kOpenBatches = 2;
    // How long claims are leased after a locked settlement failed on a healthy connection.
    static constexpr std::chrono::seconds kLeasedAfterFailure{60};
    // The lane of a leased claim's answer (the locked lanes are numbered from 0).
    static constexpr size_t kLeasedLane = std::numeric_limits<size_t>::max();

    using ClaimConnectionFactory = std::function<std::unique_ptr<PgLockedTx>()>;
    using Now = std::function<Clock::time_point()>;

    struct Config {
        ClaimMode mode = ClaimMode::leased;    // locked or leased (resolved: claim/claim_mode.hpp)
        // The leased mode's claim connection; null: leased claims go to the LISTEN connection.
        ClaimConnectionFactory leased_claim_connection;
        LockedLanes::TxFactory locked_tx;      // one locked lane's transaction
        Millis locked_publish_limit{0};        // outbox/locked_hold_bound.hpp
    };

    // `store`: the LISTEN connection (leased settlements, and claims without a claim
    // connection). `now`: the clock (tests pass their own).
    TableClaims(LeaseStore& store, Metrics& metrics, Config config, Now now = Clock::now);

    // The configured mode (locked or leased); the locked mode stays locked while it leases
    // after a failed settlement.
    ClaimMode mode() const override { return mode_; }
    // Claims go out leased now: the leased mode, or the locked mode's fallback.
    bool claims_leased() const;

    // (Re)connects the locked lanes or the leased claim connection, after the LISTEN
    // connection. The locked mode without once.claim_locked turns leased here. Throws DbLost.
    void connect();
    // Acks kept while the database was away (the relay's last act). Throws DbLost.
    void flush_pending_acks() { leased_->flush_pending_acks(); }

    // Something may be claimable: claim again soon.
    void wake() override;
    // The LISTEN connection is up, fewer than kOpenBatches batches and claims are out, the
    // source that claims now has room, and a wake-up came or the poll interval passed.
    bool may_claim() const override;
    // On the locked lanes, or on the leased claims while they are the ones claiming.
    void start_claim(const ClaimRequest& request) override;
    std::optional<Clock::time_point> claim_due() const override;
    // Answers of both; each one marked refused while the LISTEN connection is away.
    std::vector<ClaimAnswer> collect_claims() override;
    bool give_back_unopened(size_t lane, std::vector<Message>& messages) override;
    void open_batch(size_t lane, Batch batch) override;
    void keep_claims(Clock::time_point now) override;
    // The leased batches (acks, nacks, dead letters on the LISTEN connection), then the locked
    // ones (with their COMMITs). Every batch settled is a wake-up; a locked batch given back on
    // a healthy connection starts the fallback before `on_settled` hears of it.
    void settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) override;
    void stop(const std::string& why) override;
    size_t abandon(const std::string& why) override;
    size_t database_lost(const std::string& why) override;

    void open_batches(std::vector<Batch*>& out) override;
    size_t open_count() const override;
    bool settlement_due() const override;
    void poll_fds(std::vector<pollfd>& fds) const override;

private:
    void lease_after_failure();

    LeaseStore& store_;
    Metrics& metrics_;
    Config config_;
    Now now_;
    ClaimMode mode_;
    bool mode_logged_ = false;              // the locked mode's first connect was logged
    std::unique_ptr<LockedLanes> locked_;   // the locked mode: kOpenBatches transaction connections
    // The leased mode, and the locked mode for kLeasedAfterFailure after a failed settlement
    // (then on the LISTEN connection, with no claim connection of their own).
    std::unique_ptr<LeasedClaims> leased_;
    Clock::time_point leased_until_{};      // see kLeasedAfterFailure
    bool need_claim_ = true;
    uint64_t wakes_ = 0;                    // counts wake(): a wake-up during a claim survives it
    Clock::time_point next_poll_{};
};

}  // namespace once::relay
