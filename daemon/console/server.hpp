// once-console's HTTP server (libmicrohttpd, a pool of request threads) and its pages.
#pragma once

#include "auth.hpp"
#include "concurrency_limit.hpp"
#include "console_options.hpp"
#include "db.hpp"
#include "login_limiter.hpp"
#include "pages/layout.hpp"
#include "rates.hpp"

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace once::relay {
class HttpListener;
}

namespace once::console {

struct Request {
    std::string method, path, body;
    std::string client;   // the client's numeric address
    std::map<std::string, std::vector<std::string>> query, form;
    std::map<std::string, std::string> cookies;
    std::string arg(const std::string& name) const;    // first query value or ""
    std::string field(const std::string& name) const;  // first form value or ""
};

struct Response {
    unsigned status = 200;
    std::string body;
    std::string content_type = "text/html; charset=utf-8";
    std::vector<std::pair<std::string, std::string>> headers;
};

class Console {
public:
    Console(const Options& o, std::map<std::string, User> users);
    ~Console();   // stops the rate sampler
    Console(const Console&) = delete;
    Console& operator=(const Console&) = delete;
    Response handle(const Request& req);

    // The databases served, in the order of the options (the first is the one "/" shows); a
    // request names one with the prefix /db/NAME/ when there are several.
    struct Database {
        std::string name;
        DbConfig cfg;
        RateHistory rates;
    };

private:
    struct Ctx;   // one request: session, transaction helpers, timings
    Response route(Ctx& c, const Request& req);
    Response handle_session(const Request& req, Database& db);   // a logged-in user's request, for `db`
    Response login_page(const Request& req, const std::string& error, unsigned status = 200);
    Response login_post(const Request& req);
    Response overview(Ctx& c, const Request& req);
    Response dead_list(Ctx& c, const Request& req);
    Response dead_detail(Ctx& c, const std::string& id);
    Response dead_confirm(Ctx& c, const Request& req);
    Response dead_act(Ctx& c, const Request& req);
    Response blocked(Ctx& c, const Request& req);
    Response relays(Ctx& c, const Request& req);
    Response sagas(Ctx& c, const Request& req);
    Response saga_detail(Ctx& c, const std::string& name, const std::string& id);   // a saga is (name, saga_id)
    Response saga_confirm(Ctx& c, const Request& req);
    Response saga_act(Ctx& c, const Request& req);
    Response actions(Ctx& c, const Request& req);
    Response inbox(Ctx& c, const Request& req);
    Response keys(Ctx& c, const Request& req);
    Response small_confirm(Ctx& c, const Request& req);   // inbox retry, key release (of one owner's row)
    Response small_act(Ctx& c, const Request& req);
    Response wal(Ctx& c, const Request& req);
    Response retrying(Ctx& c, const Request& req);
    Response find(Ctx& c, const Request& req);
    Response bulk_page(Ctx& c, const Request& req);      // dead letters by filter: count
    Response bulk_confirm(Ctx& c, const Request& req);   // how many the action will touch
    Response bulk_act(Ctx& c, const Request& req);
    // The layout of a page: the user, the databases, the flash, the timings.
    LayoutModel layout(Ctx& c, const std::string& title, const std::string& active);
    std::string page(Ctx& c, const std::string& title, const std::string& active, const std::string& body);
    // A page that reloads itself every kRefreshSeconds unless the request says refresh=off.
    std::string refreshing_page(Ctx& c, const Request& req, const std::string& title, const std::string& active,
                                const std::string& body);

    Options opts_;
    std::vector<std::unique_ptr<Database>> dbs_;
    std::map<std::string, User> users_;
    Sessions sessions_;
    // Logins: failed ones are budgeted per client address and per user name before any
    // hashing, and at most a few hash at once, so logins cannot occupy every request thread.
    LoginLimiter failed_by_address_;
    LoginLimiter failed_by_user_;
    ConcurrencyLimit hashing_;
    // The overview's send / ack rates: a thread samples once.console_outbox_counters() of each
    // database every --rate-interval on connections of its own.
    void sample_rates();
    std::mutex stop_mu_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;
    std::thread sampler_;
};

class HttpServer {
public:
    HttpServer(const Options& o, Console& console);   // binds; throws std::runtime_error
    ~HttpServer();
    int port() const;

private:
    std::unique_ptr<relay::HttpListener> listener_;
};

}  // namespace once::console
