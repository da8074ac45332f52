#include "claim/table_claims.hpp"

#include <spdlog/spdlog.h>

#include <utility>

namespace once::relay {

namespace {
int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

TableClaims::TableClaims(LeaseStore& store, Metrics& metrics, Config config, Now now)
    : store_(store), metrics_(metrics), config_(std::move(config)), now_(std::move(now)), mode_(config_.mode) {
    std::unique_ptr<PgLockedTx> claim_connection;
    if (mode_ == ClaimMode::leased && config_.leased_claim_connection) claim_connection = config_.leased_claim_connection();
    leased_ = std::make_unique<LeasedClaims>(store_, metrics_, std::move(claim_connection));
    if (mode_ == ClaimMode::locked)
        locked_ = std::make_unique<LockedLanes>(kOpenBatches, config_.locked_tx, config_.locked_publish_limit, metrics_);
}

bool TableClaims::claims_leased() const { return mode_ != ClaimMode::locked || now_() < leased_until_; }

void TableClaims::connect() {
    if (mode_ == ClaimMode::locked) {
        if (!locked_->connect()) {
            // pg_once SQL before 0.2: no once.claim_locked (each lane's connect looks for it):
            // the leased mode for the rest of this run.
            spdlog::warn("the database has no once.claim_locked(text,integer,text[]) (pg_once SQL before 0.2: run ALTER "
                         "EXTENSION pg_once UPDATE); using the leased claim mode");
            mode_ = ClaimMode::leased;
            locked_.reset();
        } else if (!mode_logged_) {
            spdlog::info("claim mode locked: {} transaction connection(s)", locked_->size());
        }
    }
    if (mode_ == ClaimMode::leased) {
        if (!leased_->has_claim_connection() && config_.leased_claim_connection)   // (after a fallback from locked)
            leased_->use_claim_connection(config_.leased_claim_connection());
        leased_->connect();
    }
    mode_logged_ = true;
}

void TableClaims::wake() {
    need_claim_ = true;
    ++wakes_;
}

bool TableClaims::may_claim() const {
    if (!store_.connected() || open_count() >= kOpenBatches) return false;
    if (!leased_->may_claim()) return false;   // a leased claim out, or the sink has work queued
    // (a second claim beside one still out only while a backlog drains: see LockedLanes)
    if (!claims_leased() && !locked_->may_claim()) return false;
    return need_claim_ || now_() >= next_poll_;
}

void TableClaims::start_claim(const ClaimRequest& request) {
    next_poll_ = now_() + request.poll_interval;
    ClaimRequest counted = request;
    counted.claim_wants = wakes_;
    if (claims_leased())
        leased_->start_claim(counted);   // DbLost: the relay backs off
    else
        locked_->start_claim(counted);
    need_claim_ = false;   // until the answer, or a wake-up, says otherwise
    // (A claim made on the LISTEN connection is answered already: settlement_due() makes the
    // relay's next poll() return at once, and its next turn opens the batch before dispatching.)
}

std::optional<ClaimSource::Clock::time_point> TableClaims::claim_due() const {
    if (!store_.connected()) return std::nullopt;
    return next_poll_;
}

std::vector<ClaimAnswer> TableClaims::collect_claims() {
    std::vector<ClaimAnswer> answers = leased_->collect_claims();   // DbLost / server error: the relay backs off
    for (ClaimAnswer& a : answers) a.lane = kLeasedLane;
    if (locked_)
        for (ClaimAnswer& a : locked_->collect_claims()) answers.push_back(std::move(a));
    for (ClaimAnswer& a : answers) {
        metrics_.last_claim_unix_ms = unix_ms();
        // Claim again at once after any non-empty batch, not only after a full one; an empty
        // one ends the drain unless a wake-up came while it was out.
        if (!a.messages.empty() || wakes_ != a.claim_wants) need_claim_ = true;
        if (!store_.connected()) a.refused = "database connection lost";
    }
    return answers;
}

bool TableClaims::give_back_unopened(size_t lane, std::vector<Message>& messages) {
    if (lane == kLeasedLane) return leased_->give_back_unopened(0, messages);   // (false: opened stopped, nacked)
    return locked_->give_back_unopened(lane, messages);                          // (rolled back untouched)
}

void TableClaims::open_batch(size_t lane, Batch batch) {
    if (lane == kLeasedLane)
        leased_->open_batch(0, std::move(batch));
    else
        locked_->open_batch(lane, std::move(batch));
}

void TableClaims::keep_claims(Clock::time_point now) {
    if (locked_) locked_->keep_claims(now);
    if (store_.connected()) leased_->keep_claims(now);
}

void TableClaims::settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) {
    // Every batch settled is a wake-up: a claim made while it was open could not have the
    // next message of its keys, so an empty answer then did not mean the outbox was drained.
    leased_->settle_finished([&](const SettleOutcome& o) {
        wake();
        on_settled(o);
    });
    if (!locked_) return;
    locked_->settle_finished([&](const SettleOutcome& o) {
        wake();
        if (o.given_back && !o.connection_lost) lease_after_failure();
        on_settled(o);
    });
}

void TableClaims::lease_after_failure() {
    leased_until_ = now_() + kLeasedAfterFailure;
    spdlog::warn("claims are leased for the next {}s, so that attempts are counted while settling fails",
                 kLeasedAfterFailure.count());
}

void TableClaims::stop(const std::string& why) {
    leased_->stop(why);
    if (locked_) locked_->stop(why);   // (locked batches go on: they commit or roll back whole)
}

size_t TableClaims::abandon(const std::string& why) {
    size_t n = leased_->abandon(why);
    if (locked_) n += locked_->abandon(why);
    return n;
}

size_t TableClaims::database_lost(const std::string& why) {
    size_t n = leased_->database_lost(why);
    if (locked_) n += locked_->database_lost(why);
    return n;
}

void TableClaims::open_batches(std::vector<Batch*>& out) {
    leased_->open_batches(out);
    if (locked_) locked_->open_batches(out);
}

size_t TableClaims::open_count() const {
    return leased_->open_count() + (locked_ ? locked_->open_count() : 0);
}

bool TableClaims::settlement_due() const { return leased_->settlement_due() || (locked_ && locked_->settlement_due()); }

void TableClaims::poll_fds(std::vector<pollfd>& fds) const {
    leased_->poll_fds(fds);
    if (locked_) locked_->poll_fds(fds);
}

}  // namespace once::relay
