#include "core/error.hpp"
#include "core/saga_machine.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace once::saga;

namespace {

const char* kCafe = R"({"steps": [
  {"name": "reserve_stock",   "action": {"topic": "stock.reserve"},   "compensation": {"topic": "stock.release", "max_attempts": 3},  "timeout": "30 seconds", "max_attempts": 3},
  {"name": "capture_payment", "action": {"topic": "payment.capture"}, "compensation": {"topic": "payment.refund"}, "timeout": "30 seconds", "kind": "pivot"},
  {"name": "notify",          "action": {"topic": "notify.send"}, "kind": "retriable", "timeout": "10 seconds"}
]})";

Event ev(Event::Type t) {
    Event e;
    e.type = t;
    return e;
}

struct Saga {
    Definition d = parse_definition("cafe", kCafe);
    State s;
    int64_t now = 1000000;
    std::vector<Command> sent;
    Decision last;

    Decision apply(Event e) {
        e.now_ms = now;
        last = decide(d, s, e);
        s = last.state;
        for (auto& c : last.commands) sent.push_back(c);
        // Round trip through JSON like the database does.
        s = state_from_json(Json::parse(to_json(s, d).dump()), d);
        return last;
    }
    Decision start() { return apply(ev(Event::Type::start)); }
    Decision reply(const std::string& step, Outcome o, const std::string& reason = {}) {
        Event e = ev(Event::Type::reply);
        e.step = step;
        e.outcome = o;
        e.reason = reason;
        return apply(e);
    }
    Decision tick() {
        now = s.deadline_ms > now ? s.deadline_ms : now;
        return apply(ev(Event::Type::deadline));
    }
    std::string last_sent() const {
        if (sent.empty()) return "";
        const auto& c = sent.back();
        return d.steps[c.step].name + (c.compensate ? ":compensate" : "") + "#" + std::to_string(c.attempt);
    }
};

}  // namespace

TEST(SagaMachine, HappyPath) {
    Saga g;
    g.start();
    EXPECT_EQ(g.last_sent(), "reserve_stock#1");
    EXPECT_EQ(g.s.deadline_ms, g.now + 30000);
    EXPECT_TRUE(g.reply("reserve_stock", Outcome::succeeded).merge_output);
    EXPECT_EQ(g.last_sent(), "capture_payment#1");
    g.reply("capture_payment", Outcome::succeeded);
    EXPECT_EQ(g.last_sent(), "notify#1");
    g.reply("notify", Outcome::succeeded);
    EXPECT_EQ(g.s.status, Status::completed);
    EXPECT_EQ(g.s.deadline_ms, 0);
    EXPECT_EQ(g.sent.size(), 3u);
}

TEST(SagaMachine, ScenarioA_PaymentFailsStockReleased) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.reply("capture_payment", Outcome::failed, "card declined");
    EXPECT_EQ(g.s.status, Status::compensating);
    EXPECT_EQ(g.last_sent(), "reserve_stock:compensate#1");
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
    EXPECT_NE(g.s.reason.find("card declined"), std::string::npos);
}

TEST(SagaMachine, FailureBeforeAnyCompletedStepNothingToUndo) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::failed, "sold out");
    EXPECT_EQ(g.s.status, Status::compensated);
    EXPECT_EQ(g.sent.size(), 1u);
}

TEST(SagaMachine, ScenarioB_NotificationRetriedNeverCompensated) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.reply("capture_payment", Outcome::succeeded);
    for (int i = 1; i <= 6; ++i) {
        g.reply("notify", Outcome::failed, "smtp down");
        EXPECT_EQ(g.s.status, Status::running);
        EXPECT_EQ(g.s.waiting, Waiting::retry);
        EXPECT_LE(g.s.deadline_ms, g.now + 300000);
        g.tick();
        EXPECT_EQ(g.last_sent(), "notify#" + std::to_string(i + 1));
    }
    g.reply("notify", Outcome::succeeded);
    EXPECT_EQ(g.s.status, Status::completed);
    for (auto& c : g.sent) EXPECT_FALSE(c.compensate);
}

TEST(SagaMachine, ScenarioC_DuplicateRepliesChangeNothing) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    size_t sent = g.sent.size();
    EXPECT_EQ(g.reply("reserve_stock", Outcome::succeeded).result, ReplyResult::duplicate);
    EXPECT_EQ(g.sent.size(), sent);
    g.reply("capture_payment", Outcome::succeeded);
    EXPECT_EQ(g.reply("capture_payment", Outcome::succeeded).result, ReplyResult::duplicate);
    EXPECT_EQ(g.last_sent(), "notify#1");  // not notified twice
    EXPECT_EQ(g.s.status, Status::running);
}

TEST(SagaMachine, ScenarioD_OutOfOrderReplyFails) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    Decision d = g.reply("notify", Outcome::succeeded);
    EXPECT_EQ(d.result, ReplyResult::rejected);
    EXPECT_EQ(g.s.status, Status::failed);
    EXPECT_NE(g.s.reason.find("capture_payment is pending"), std::string::npos);
    // A person resumes it: the pending command is sent again with the same step.
    g.apply(ev(Event::Type::retry));
    EXPECT_EQ(g.s.status, Status::running);
    EXPECT_EQ(g.last_sent(), "capture_payment#1");
}

TEST(SagaMachine, TimeoutResendsThenCompensates) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.tick();
    EXPECT_EQ(g.last_sent(), "capture_payment#2");
    g.tick();
    EXPECT_EQ(g.last_sent(), "capture_payment#3");
    g.tick();  // third timeout: outcome unknown, compensate it and everything before
    EXPECT_EQ(g.s.status, Status::compensating);
    EXPECT_EQ(g.last_sent(), "capture_payment:compensate#1");
    g.reply("capture_payment", Outcome::compensated);
    EXPECT_EQ(g.last_sent(), "reserve_stock:compensate#1");
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
}

TEST(SagaMachine, LateSuccessAfterCompensationBeganIsCompensated) {
    // Payment fails explicitly... then a success for it arrives anyway (a resend was processed).
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.reply("capture_payment", Outcome::failed, "gateway timeout");
    EXPECT_EQ(g.last_sent(), "reserve_stock:compensate#1");
    Decision d = g.reply("capture_payment", Outcome::succeeded);
    EXPECT_EQ(d.result, ReplyResult::late);
    EXPECT_TRUE(d.merge_output);
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.last_sent(), "capture_payment:compensate#1");  // refunded too
    g.reply("capture_payment", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
}

TEST(SagaMachine, LateSuccessAfterCompensatedReopens) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::failed);
    EXPECT_EQ(g.s.status, Status::compensated);
    g.reply("reserve_stock", Outcome::succeeded);
    EXPECT_EQ(g.s.status, Status::compensating);
    EXPECT_EQ(g.last_sent(), "reserve_stock:compensate#1");
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
}

TEST(SagaMachine, LateReplyForTimedOutStepWhoseCompensationWasSent) {
    Saga g;
    g.start();
    g.tick(); g.tick(); g.tick();
    EXPECT_EQ(g.last_sent(), "reserve_stock:compensate#1");
    EXPECT_EQ(g.reply("reserve_stock", Outcome::succeeded).result, ReplyResult::late);
    EXPECT_EQ(g.s.status, Status::compensating);
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
}

// The reason counts attempts in words that read right for one.
TEST(SagaMachine, ACompensationAllowedOneAttemptFailsSayingOneAttempt) {
    Saga g;
    g.d = parse_definition("cafe", R"({"steps": [
      {"name": "reserve_stock", "action": {"topic": "stock.reserve"}, "compensation": {"topic": "stock.release", "max_attempts": 1}, "timeout": "30 seconds"},
      {"name": "capture_payment", "action": {"topic": "payment.capture"}, "compensation": {"topic": "payment.refund"}, "timeout": "30 seconds", "kind": "pivot"}]})");
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.reply("capture_payment", Outcome::failed);
    g.reply("reserve_stock", Outcome::compensation_failed, "stock service timeout");
    EXPECT_EQ(g.s.status, Status::failed);
    EXPECT_NE(g.s.reason.find("kept failing (1 attempt); last: stock service timeout"), std::string::npos) << g.s.reason;
}

TEST(SagaMachine, CompensationKeepsFailingThenRetryByHand) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.reply("capture_payment", Outcome::failed);
    g.reply("reserve_stock", Outcome::compensation_failed, "db down");
    EXPECT_EQ(g.reply("reserve_stock", Outcome::compensation_failed, "db down").result, ReplyResult::duplicate);
    g.tick();
    EXPECT_EQ(g.last_sent(), "reserve_stock:compensate#2");
    g.reply("reserve_stock", Outcome::compensation_failed, "db down");
    g.tick();
    g.reply("reserve_stock", Outcome::compensation_failed, "db down");
    EXPECT_EQ(g.s.status, Status::failed);
    EXPECT_EQ(g.s.deadline_ms, 0);
    EXPECT_NE(g.s.reason.find("kept failing (3 attempts); last: db down"), std::string::npos);
    size_t sent = g.sent.size();
    g.tick();  // a failed saga is not driven by the clock: it waits for a person
    EXPECT_EQ(g.s.status, Status::failed);
    EXPECT_EQ(g.sent.size(), sent);
}

TEST(SagaMachine, RetryAfterCompensationFailure) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.reply("capture_payment", Outcome::failed);
    for (int i = 0; i < 3; ++i) {
        g.reply("reserve_stock", Outcome::compensation_failed, "db down");
        if (i < 2) g.tick();
    }
    ASSERT_EQ(g.s.status, Status::failed);
    g.apply(ev(Event::Type::retry));
    EXPECT_EQ(g.s.status, Status::compensating);
    EXPECT_EQ(g.last_sent(), "reserve_stock:compensate#1");
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
    EXPECT_THROW(g.apply(ev(Event::Type::retry)), once::Error);  // not failed any more
}

TEST(SagaMachine, AbortCompensatesInFlightStep) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    Event e = ev(Event::Type::abort);
    e.reason = "customer cancelled";
    g.apply(e);
    EXPECT_EQ(g.last_sent(), "capture_payment:compensate#1");
    g.reply("capture_payment", Outcome::compensated);
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
    EXPECT_THROW(g.apply(e), once::Error);
}

TEST(SagaMachine, UnknownStepAndBadOutcome) {
    Saga g;
    g.start();
    try {
        g.reply("ship", Outcome::succeeded);
        FAIL();
    } catch (const once::Error& e) {
        EXPECT_EQ(e.code(), once::ErrorCode::saga_unknown_step);
    }
    EXPECT_THROW(parse_outcome("ok"), once::Error);
}

TEST(SagaMachine, LocalFunctionStepsAreDueAtOnce) {
    Saga g;
    g.d = parse_definition("x", R"({"steps": [{"name": "a", "action": {"function": "app.do_a"}, "compensation": {"function": "app.undo_a"}},
                                              {"name": "b", "action": {"topic": "b.do"}}]})");
    g.start();
    EXPECT_TRUE(g.sent.empty());
    EXPECT_EQ(g.s.waiting, Waiting::local);
    EXPECT_EQ(g.s.deadline_ms, g.now);
    Json j = to_json(g.s, g.d);
    EXPECT_EQ(j.find("local")->find("function")->as_string(), "app.do_a");
    g.reply("a", Outcome::succeeded);
    g.reply("b", Outcome::failed);
    EXPECT_EQ(g.s.waiting, Waiting::local);
    EXPECT_EQ(to_json(g.s, g.d).find("local")->find("function")->as_string(), "app.undo_a");
}

// Random event sequences: every decision keeps the invariants the guarantees rest on.
TEST(SagaMachine, RandomisedInvariants) {
    std::mt19937 rng(4242);
    const char* steps[] = {"reserve_stock", "capture_payment", "notify"};
    const Outcome outcomes[] = {Outcome::succeeded, Outcome::failed, Outcome::compensated, Outcome::compensation_failed};
    int finals = 0;
    for (int run = 0; run < 3000; ++run) {
        Saga g;
        g.start();
        for (int k = 0; k < 40 && !g.s.final(); ++k) {
            g.now += rng() % 20000;
            try {
                switch (rng() % 6) {
                    case 0: case 1: case 2: {
                        // mostly replies to the pending command, sometimes anything
                        int i = (rng() % 3 == 0) ? static_cast<int>(rng() % 3) : g.s.cursor;
                        Outcome o = g.s.status == Status::compensating ? (rng() % 3 ? Outcome::compensated : Outcome::compensation_failed)
                                                                       : (rng() % 3 ? Outcome::succeeded : Outcome::failed);
                        if (rng() % 8 == 0) o = outcomes[rng() % 4];
                        g.reply(steps[i], o);
                        break;
                    }
                    case 3: case 4: g.tick(); break;
                    case 5:
                        if (g.s.status == Status::failed) g.apply(ev(Event::Type::retry));
                        else if (rng() % 4 == 0) g.apply(ev(Event::Type::abort));
                        break;
                }
            } catch (const once::Error& e) {
                EXPECT_EQ(e.code(), once::ErrorCode::saga_invalid_state);
            }
            const State& s = g.s;
            // Every saga that is still moving has a deadline; final and failed ones do not.
            if (s.status == Status::running || s.status == Status::compensating) EXPECT_GT(s.deadline_ms, 0);
            else EXPECT_EQ(s.deadline_ms, 0);
            if (s.status == Status::failed) {
                EXPECT_FALSE(s.reason.empty());
            }
            if (s.status == Status::completed) {
                for (auto st : s.steps) EXPECT_EQ(st, StepStatus::succeeded);
            }
            if (s.status == Status::compensated) {
                for (size_t i = 0; i < s.steps.size(); ++i) {
                    if (!g.d.steps[i].compensation) continue;
                    EXPECT_TRUE(s.steps[i] != StepStatus::succeeded && s.steps[i] != StepStatus::timed_out &&
                                s.steps[i] != StepStatus::compensating);
                }
            }
        }
        // The retriable step is never compensated.
        for (auto& c : g.sent) EXPECT_FALSE(c.compensate && c.step == 2);
        // A compensation is only ever sent for a step whose action was sent before.
        for (size_t n = 0; n < g.sent.size(); ++n) {
            if (!g.sent[n].compensate) continue;
            bool action_before = false;
            for (size_t m = 0; m < n; ++m) action_before |= !g.sent[m].compensate && g.sent[m].step == g.sent[n].step;
            EXPECT_TRUE(action_before);
        }
        finals += g.s.final();
    }
    EXPECT_GT(finals, 100);
}

// Corrupt stored definitions and states (what a superuser could write into the tables) are
// errors, never crashes.
TEST(SagaMachine, CorruptStoredDataIsAnError) {
    for (const char* def : {R"({"steps": []})", R"({})", R"({"steps": [{"name": 1}]})", R"({"steps": [1]})"}) {
        EXPECT_THROW(from_normalized(Json::parse(def)), once::Error) << def;
    }
    Definition d = parse_definition("x", R"({"steps": [{"name": "a", "action": {"topic": "t"}}]})");
    for (const char* st : {R"({})", R"({"steps": ["running"], "cursor": 5})",
                           R"({"status": "compensating", "steps": ["compensating"], "cursor": 0})",
                           R"({"status": "failed", "failed_in": "compensating", "steps": ["compensating"], "cursor": 0})"}) {
        EXPECT_THROW(state_from_json(Json::parse(st), d), once::Error) << st;
    }
    std::mt19937 rng(7);
    const char* statuses[] = {"running", "compensating", "completed", "compensated", "failed", "x"};
    const char* steps[] = {"pending", "running", "succeeded", "failed", "timed_out", "compensating", "compensated"};
    const char* waits[] = {"none", "reply", "retry", "local"};
    Definition cafe = parse_definition("cafe", kCafe);
    for (int i = 0; i < 20000; ++i) {
        Json s = Json::object();
        s.set("status", Json::string(statuses[rng() % 6]));
        s.set("failed_in", Json::string(statuses[rng() % 6]));
        s.set("cursor", Json::number(static_cast<int>(rng() % 4) - 1));
        s.set("attempts", Json::number(rng() % 5));
        s.set("waiting", Json::string(waits[rng() % 4]));
        s.set("deadline_ms", Json::number(rng() % 3));
        Json arr = Json::array();
        for (int k = 0; k < 3; ++k) arr.push(Json::string(steps[rng() % 7]));
        s.set("steps", arr);
        Event e = ev(static_cast<Event::Type>(1 + rng() % 4));
        e.step = std::string("reserve_stock capture_payment notify x").substr(0, rng() % 40);
        e.outcome = static_cast<Outcome>(rng() % 4);
        e.now_ms = 10;
        try {
            State st = state_from_json(s, cafe);
            decide(cafe, st, e);
        } catch (const once::Error&) {
        }
    }
}

TEST(SagaMachine, LateSuccessOfStepWithoutCompensationStopsTheSaga) {
    Saga g;
    g.d = parse_definition("x", R"({"steps": [{"name": "check", "action": {"topic": "a.check"}},
                                              {"name": "pay", "action": {"topic": "a.pay"}, "compensation": {"topic": "a.refund"}}]})");
    g.start();
    g.reply("check", Outcome::failed, "nope");
    EXPECT_EQ(g.s.status, Status::compensated);
    Decision d = g.reply("check", Outcome::succeeded);
    EXPECT_EQ(d.result, ReplyResult::rejected);
    EXPECT_EQ(g.s.status, Status::failed);
    EXPECT_NE(g.s.reason.find("no compensation"), std::string::npos);
}

TEST(SagaMachine, RetriableWithMaxAttemptsStopsInFailed) {
    Saga g;
    g.d = parse_definition("x", R"({"steps": [{"name": "n", "action": {"topic": "a.n"}, "kind": "retriable", "max_attempts": 2}]})");
    g.start();
    g.reply("n", Outcome::failed, "down");
    EXPECT_EQ(g.s.waiting, Waiting::retry);
    g.tick();
    EXPECT_EQ(g.last_sent(), "n#2");
    g.reply("n", Outcome::failed, "down");
    EXPECT_EQ(g.s.status, Status::failed);
    for (auto& c : g.sent) EXPECT_FALSE(c.compensate);
    g.apply(ev(Event::Type::retry));
    EXPECT_EQ(g.last_sent(), "n#1");
}

TEST(SagaMachine, DeadlineNotYetDueChangesNothing) {
    Saga g;
    g.start();
    Event e = ev(Event::Type::deadline);
    Decision d = g.apply(e);  // now < deadline
    EXPECT_EQ(d.commands.size(), 0u);
    EXPECT_EQ(g.s.attempts, 1);
}

TEST(SagaMachine, CauseIsTheFailureThatStartedCompensationNotTheLastOne) {
    Saga g;
    g.start();
    g.reply("reserve_stock", Outcome::succeeded);
    g.reply("capture_payment", Outcome::failed, "card declined");
    EXPECT_EQ(g.s.cause, "step capture_payment failed: card declined");
    for (int i = 0; i < 3; ++i) {
        g.reply("reserve_stock", Outcome::compensation_failed, "db down");
        if (i < 2) g.tick();
    }
    ASSERT_EQ(g.s.status, Status::failed);
    EXPECT_NE(g.s.reason.find("kept failing"), std::string::npos);  // the last failure
    EXPECT_EQ(g.s.cause, "step capture_payment failed: card declined");  // survives the JSON round trip
    g.apply(ev(Event::Type::retry));  // resumes compensating: same cause
    EXPECT_EQ(g.s.cause, "step capture_payment failed: card declined");
    g.reply("reserve_stock", Outcome::compensated);
    EXPECT_EQ(g.s.status, Status::compensated);
    EXPECT_EQ(g.s.cause, "step capture_payment failed: card declined");
}

TEST(SagaMachine, CauseOfTimeoutAbortAndStopInRunning) {
    Saga g;
    g.start();
    EXPECT_EQ(g.s.cause, "");
    g.tick(); g.tick(); g.tick();
    EXPECT_EQ(g.s.cause, "step reserve_stock timed out after 3 attempts");

    Saga a;
    a.start();
    a.reply("reserve_stock", Outcome::succeeded);
    Event e = ev(Event::Type::abort);
    e.reason = "customer cancelled";
    a.apply(e);
    EXPECT_EQ(a.s.cause, "aborted: customer cancelled");

    Saga r;
    r.d = parse_definition("x", R"({"steps": [{"name": "n", "action": {"topic": "a.n"}, "kind": "retriable", "max_attempts": 1}]})");
    r.start();
    r.reply("n", Outcome::failed, "down");
    ASSERT_EQ(r.s.status, Status::failed);
    EXPECT_EQ(r.s.cause, r.s.reason);
    r.apply(ev(Event::Type::retry));  // running again: no cause until it fails again
    EXPECT_EQ(r.s.cause, "");
    r.reply("n", Outcome::succeeded);
    EXPECT_EQ(r.s.status, Status::completed);
    EXPECT_EQ(r.s.cause, "");
}
