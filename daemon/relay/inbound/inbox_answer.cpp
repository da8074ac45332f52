#include "inbound/inbox_answer.hpp"

#include "core/json.hpp"

#include <algorithm>

namespace once::relay {

// The wait suggested after a failure when the sink gave none (a handler error, no handler).
constexpr int kDefaultRetryAfterSeconds = 5;

InboundAnswer answer_for(const Outcome& outcome) {
    InboundAnswer a;
    switch (outcome.verdict) {
    case Verdict::delivered:
        a.status = 200;
        a.body = R"({"status":"delivered"})";
        break;
    case Verdict::dead:
        a.status = 422;
        a.body = R"({"status":"poison","error":"the message failed too often and is kept as poison; it will not be processed until an operator retries it"})";
        break;
    case Verdict::retry:
        a.status = 503;
        a.body = R"({"status":"retry","error":"not processed; send it again later"})";
        a.retry_after_s = kDefaultRetryAfterSeconds;
        if (outcome.retry_after)
            a.retry_after_s = static_cast<int>(std::clamp<long long>((outcome.retry_after->count() + 999) / 1000, 1, 3600));
        break;
    }
    return a;
}

InboundAnswer refusal(int status, const std::string& reason, int retry_after_s) {
    InboundAnswer a;
    a.status = status;
    Json body = Json::object();
    body.set("error", Json::string(reason));
    a.body = body.dump();
    a.retry_after_s = retry_after_s;
    return a;
}

}  // namespace once::relay
