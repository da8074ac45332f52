#include "core/error.hpp"
#include "core/inbox.hpp"

#include <gtest/gtest.h>

using once::ErrorCode;
using once::Subscription;

namespace {

ErrorCode code_of(void (*validate)(std::string_view), const std::string& value) {
    try {
        validate(value);
    } catch (const once::Error& e) {
        return e.code();
    }
    return ErrorCode::internal;  // "did not throw"
}

}  // namespace

TEST(InboxValidation, AcceptsTextIdsFromOtherSystems) {
    EXPECT_NO_THROW(once::validate_message_id("evt_1NqX2k2eZvKYlo2C0vD3"));          // Stripe
    EXPECT_NO_THROW(once::validate_message_id("orders-3:184467"));                   // offset
    EXPECT_NO_THROW(once::validate_message_id("0190f1e2-7a3b-7c4d-8e5f-1a2b3c4d5e6f"));
    EXPECT_NO_THROW(once::validate_message_id(std::string(255, 'x')));
    EXPECT_NO_THROW(once::validate_inbox_source("stripe"));
}

TEST(InboxValidation, BadIdsAndSourcesHaveTheirOwnCodes) {
    for (const std::string& bad : {std::string(), std::string(256, 'x'), std::string("a\nb")}) {
        EXPECT_EQ(code_of(once::validate_message_id, bad), ErrorCode::invalid_message_id) << bad;
        EXPECT_EQ(code_of(once::validate_inbox_source, bad), ErrorCode::invalid_inbox_source) << bad;
    }
}

TEST(InboxValidation, MessageNamesTheValue) {
    try {
        once::validate_message_id(std::string(300, 'x'));
        FAIL();
    } catch (const once::Error& e) {
        EXPECT_NE(std::string(e.what()).find("message id"), std::string::npos);
        EXPECT_NE(e.detail().find("300"), std::string::npos);
    }
}

namespace {
// The handlers of the subscriptions chosen for topic, in their order.
std::vector<uint32_t> handlers_for(const std::vector<Subscription>& subscriptions, std::string_view topic) {
    std::vector<uint32_t> handlers;
    for (const Subscription& s : once::subscriptions_for(subscriptions, topic)) handlers.push_back(s.handler);
    return handlers;
}
}  // namespace

TEST(InboxHandlers, MatchInSubscriptionOrderWithoutDuplicates) {
    std::vector<Subscription> subs{{"order.*", 10}, {"payment.>", 20}, {"order.>", 10},
                                   {"order.created", 30}, {">", 40}};
    EXPECT_EQ(handlers_for(subs, "order.created"), (std::vector<uint32_t>{10, 30, 40}));
    EXPECT_EQ(handlers_for(subs, "order.created.v2"), (std::vector<uint32_t>{10, 40}));
    EXPECT_EQ(handlers_for(subs, "payment.captured"), (std::vector<uint32_t>{20, 40}));
    EXPECT_EQ(handlers_for({{"order.*", 1}}, "order"), std::vector<uint32_t>{});
    EXPECT_TRUE(handlers_for({}, "order.created").empty());
}

TEST(InboxHandlers, FirstMatchingSubscriptionDecidesTheRunAsRole) {
    std::vector<Subscription> subs{{"order.>", 10, 7}, {"order.*", 10, 8}, {"order.created", 20, 0}};
    std::vector<Subscription> chosen = once::subscriptions_for(subs, "order.created");
    ASSERT_EQ(chosen.size(), 2u);
    EXPECT_EQ(chosen[0].handler, 10u);
    EXPECT_EQ(chosen[0].run_as, 7u);  // order.> came first: its role, not order.*'s
    EXPECT_EQ(chosen[1].handler, 20u);
    EXPECT_EQ(chosen[1].run_as, 0u);
}
