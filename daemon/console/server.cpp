#include "server.hpp"

#include "diagram.hpp"
#include "html.hpp"
#include "http_listener.hpp"

#include <microhttpd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace once::console {

namespace {

constexpr int kPage = 50;          // rows per list page
constexpr int kCap = 1000;         // counts stop here ("1000+"), as in once.console_*()
constexpr size_t kMaxBody = 256 * 1024;
constexpr size_t kMaxIds = 500;    // dead letters per action
const char* kCookie = "once_console_session";
const char* kLoginCookie = "once_console_login";
// Logins hashing a password at once (PBKDF2, tens of milliseconds each); further logins are
// answered 503 at once. Two of the request threads at most, so pages keep the others.
constexpr unsigned kHashingSlots = 2;

std::string first(const std::map<std::string, std::vector<std::string>>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() || it->second.empty() ? std::string() : it->second.front();
}

std::optional<std::string> opt(const std::string& s) {
    if (s.empty()) return std::nullopt;
    return s;
}

Response redirect(const std::string& to) {
    Response r;
    r.status = 303;
    r.headers.emplace_back("Location", to);
    r.body = "<a href=\"" + esc(to) + "\">continue</a>";
    return r;
}

std::string count_cell(const std::string& v) {
    if (v.empty()) return "<td class=num>0</td>";
    long n = std::stol(v);
    return "<td class=num>" + (n >= kCap ? std::to_string(kCap) + "+" : v) + "</td>";
}

// "2026-11-26 04:01:02.123456+00" -> "2026-11-26 04:01:02"
std::string ts(const std::string& t) { return t.size() > 19 ? t.substr(0, 19) : t; }

std::string age_text(double seconds) {
    if (seconds < 0) seconds = 0;
    if (seconds < 120) return std::to_string(static_cast<long>(seconds)) + " s";
    if (seconds < 7200) return std::to_string(static_cast<long>(seconds / 60)) + " min";
    if (seconds < 172800) return std::to_string(static_cast<long>(seconds / 3600)) + " h";
    return std::to_string(static_cast<long>(seconds / 86400)) + " d";
}

std::string status_badge(const std::string& st) {
    return "<span class=\"badge st-" + esc(st) + "\">" + esc(st) + "</span>";
}

const char* kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:8px 16px;display:flex;align-items:center;gap:18px}
header a{color:#cfd6e4;text-decoration:none}header a.on{color:#fff;font-weight:600;border-bottom:2px solid #ffd24d}
header .who{margin-left:auto;color:#cfd6e4}header form{display:inline}
main{padding:16px;max-width:1300px}h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:20px 0 8px}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:8px}
th,td{border-bottom:1px solid #e3e6eb;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef0f4;font-weight:600;font-size:12px;text-transform:uppercase;color:#4a5468}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.attn td{background:#fff1f0}
tr.attn td:first-child{border-left:4px solid #d93025}
.badge{padding:1px 6px;border-radius:8px;font-size:12px;background:#e3e6eb}
.st-failed{background:#d93025;color:#fff}.st-running{background:#2b6cb0;color:#fff}
.st-compensating{background:#b35900;color:#fff}.st-completed{background:#1e7e34;color:#fff}
.st-compensated{background:#6c757d;color:#fff}
.flash{background:#e6f4ea;border:1px solid #1e7e34;padding:8px;margin-bottom:12px}
.error{background:#fff1f0;border:1px solid #d93025;padding:8px;margin-bottom:12px}
pre{background:#fff;border:1px solid #e3e6eb;padding:8px;overflow:auto;max-height:400px}
button{padding:4px 12px;border:1px solid #8a94a6;border-radius:4px;background:#fff;cursor:pointer}
button.danger{border-color:#d93025;color:#d93025}button.primary{background:#2b6cb0;border-color:#2b6cb0;color:#fff}
form.filters input,form.filters select{margin-right:8px}dl{display:grid;grid-template-columns:180px 1fr;gap:4px 12px}
dt{color:#4a5468}dd{margin:0}.diagram{background:#fff;border:1px solid #e3e6eb;padding:8px;overflow:auto}.diagram svg{max-height:520px}
footer{color:#8a94a6;font-size:12px;padding:8px 16px}.muted{color:#8a94a6}
)";

}  // namespace

std::string Request::arg(const std::string& name) const { return first(query, name); }
std::string Request::field(const std::string& name) const { return first(form, name); }

struct Console::Ctx {
    std::string session_id;
    Session session;
    double db_ms = 0;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

Console::Console(const Options& o, std::map<std::string, User> users)
    : opts_(o), db_{o.db, o.connect_timeout, o.statement_timeout}, users_(std::move(users)), sessions_(o.session_ttl),
      failed_by_address_(static_cast<unsigned>(o.login_failures), o.login_failure_window),
      failed_by_user_(static_cast<unsigned>(o.login_failures), o.login_failure_window),
      hashing_(kHashingSlots), sampler_([this] { sample_rates(); }) {}

Console::~Console() {
    {
        std::lock_guard<std::mutex> lock(stop_mu_);
        stopping_ = true;
    }
    stop_cv_.notify_all();
    sampler_.join();
}

void Console::sample_rates() {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stopping_) {
        lock.unlock();
        try {
            Tx tx(db_, Role::viewer, true);
            auto r = tx.query("SELECT extract(epoch FROM c.at), c.inserted, c.deleted FROM once.console_outbox_counters() c");
            tx.commit();
            if (r.size() == 1 && !r.null(0, 1))
                rates_.add({std::stod(r.get(0, 0)), std::stoll(r.get(0, 1)), std::stoll(r.get(0, 2))});
        } catch (const std::exception& e) {
            spdlog::debug("rate sample: {}", e.what());
            reset_thread_connection();
        }
        lock.lock();
        stop_cv_.wait_for(lock, opts_.rate_interval, [this] { return stopping_; });
    }
}

std::string Console::page(Ctx& c, const std::string& title, const std::string& active, const std::string& body) {
    std::string nav;
    const std::pair<const char*, const char*> items[] = {{"/", "Overview"}, {"/dead", "Dead letters"},
                                                         {"/blocked", "Blocked keys"}, {"/sagas", "Sagas"},
                                                         {"/inbox", "Inbox"}, {"/keys", "Keys"},
                                                         {"/actions", "Actions"}};
    for (auto& [href, label] : items)
        nav += std::string("<a href=\"") + href + "\"" + (active == href ? " class=on" : "") + ">" + label + "</a>";
    std::string flash = sessions_.take_flash(c.session_id);
    double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c.start).count();
    char timing[96];
    std::snprintf(timing, sizeof timing, "%.1f ms (database %.1f ms)", total, c.db_ms);
    return "<!doctype html><html lang=en><head><meta charset=utf-8><title>" + esc(title) +
           " · once-console</title><style>" + kStyle + "</style></head><body><header><strong>once-console</strong>" +
           nav + "<span class=who>" + esc(c.session.user) + " (" + role_name(c.session.role) +
           ")</span><form method=post action=\"/logout\"><input type=hidden name=csrf value=\"" + c.session.csrf +
           "\"><button type=submit id=logout>Log out</button></form></header><main>" +
           (flash.empty() ? "" : "<div class=flash id=flash>" + esc(flash) + "</div>") + "<h1>" + esc(title) + "</h1>" +
           body + "</main><footer id=timing>page " + timing + "</footer></body></html>";
}

Response Console::handle(const Request& req) {
    Response r;
    try {
        if (req.path == "/healthz") {
            r.content_type = "text/plain";
            r.body = "ok\n";
            return r;
        }
        if (req.path == "/favicon.ico") {
            r.status = 404;
            r.content_type = "text/plain";
            return r;
        }
        if (req.path == "/login") return req.method == "POST" ? login_post(req) : login_page(req, "");
        Ctx c;
        auto it = req.cookies.find(kCookie);
        std::optional<Session> s;
        if (it != req.cookies.end()) s = sessions_.find(it->second);
        if (!s) {
            if (req.method == "GET") return redirect("/login");
            r.status = 403;
            r.body = "not logged in";
            r.content_type = "text/plain";
            return r;
        }
        c.session_id = it->second;
        c.session = *s;
        if (req.method == "POST") {
            // Every form carries the session's CSRF token.
            if (!constant_time_equal(req.field("csrf"), c.session.csrf)) {
                spdlog::warn("{} {}: refused, missing or wrong CSRF token (user {})", req.method, req.path, c.session.user);
                r.status = 403;
                r.content_type = "text/plain";
                r.body = "refused: the form's CSRF token is missing or wrong (reload the page and try again)\n";
                return r;
            }
            if (req.path == "/logout") {
                sessions_.erase(c.session_id);
                Response out = redirect("/login");
                out.headers.emplace_back("Set-Cookie", std::string(kCookie) + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
                return out;
            }
        }
        try {
            return route(c, req);
        } catch (const DbError& e) {
            r.status = e.sqlstate == "42501" ? 403 : 500;
            r.body = page(c, "Error", "", "<div class=error id=error>" + esc(e.what()) + (e.sqlstate.empty() ? "" : " (SQLSTATE " + esc(e.sqlstate) + ")") + "</div>");
            spdlog::warn("{} {}: {} ({})", req.method, req.path, e.what(), e.sqlstate);
            return r;
        }
    } catch (const std::exception& e) {
        spdlog::error("{} {}: {}", req.method, req.path, e.what());
        r.status = 500;
        r.content_type = "text/plain";
        r.body = "internal error\n";
        return r;
    }
}

Response Console::route(Ctx& c, const Request& req) {
    const std::string& p = req.path;
    if (req.method == "GET") {
        if (p == "/") return overview(c);
        if (p == "/dead") return dead_list(c, req);
        if (p.rfind("/dead/", 0) == 0) return dead_detail(c, p.substr(6));
        if (p == "/blocked") return blocked(c);
        if (p == "/sagas") return sagas(c, req);
        if (p == "/saga") return saga_detail(c, req.arg("name"), req.arg("id"));
        // A link of a console before sagas were (name, saga_id): the search by id opens the
        // saga, or lists the definitions that have the id. MHD decoded the path.
        if (p.rfind("/sagas/", 0) == 0) return redirect("/sagas?q=" + url_encode(p.substr(7)));
        if (p == "/actions") return actions(c, req);
        if (p == "/inbox") return inbox(c, req);
        if (p == "/keys") return keys(c, req);
    } else if (req.method == "POST") {
        if (p == "/other/confirm") return small_confirm(c, req);
        if (p == "/other/act") return small_act(c, req);
        if (p == "/dead/confirm") return dead_confirm(c, req);
        if (p == "/dead/act") return dead_act(c, req);
        if (p == "/sagas/confirm") return saga_confirm(c, req);
        if (p == "/sagas/act") return saga_act(c, req);
    }
    Response r;
    r.status = 404;
    r.body = page(c, "Not found", "", "<p>No such page.</p>");
    return r;
}

// ----------------------------------------------------------------------------- login

Response Console::login_page(const Request& req, const std::string& error, unsigned status) {
    // Login CSRF: a random token in a cookie and in the form must match (double submit). An
    // existing token is kept, so a second tab (or the browser's own request for /favicon.ico)
    // does not invalidate the form already shown.
    auto have = req.cookies.find(kLoginCookie);
    std::string token = have != req.cookies.end() && have->second.size() == 64 &&
                                have->second.find_first_not_of("0123456789abcdef") == std::string::npos
                            ? have->second
                            : random_token();
    Response r;
    r.status = status;
    r.headers.emplace_back("Set-Cookie", std::string(kLoginCookie) + "=" + token +
                                             "; Path=/login; HttpOnly; SameSite=Strict" + (opts_.secure_cookie ? "; Secure" : ""));
    r.body = std::string("<!doctype html><html lang=en><head><meta charset=utf-8><title>Log in · once-console</title><style>") +
             kStyle + "</style></head><body><header><strong>once-console</strong></header><main><h1>Log in</h1>" +
             (error.empty() ? "" : "<div class=error id=error>" + esc(error) + "</div>") +
             "<form method=post action=\"/login\"><input type=hidden name=csrf value=\"" + token +
             "\"><p><label>User <input name=user id=user autocomplete=username required></label></p>"
             "<p><label>Password or token <input type=password name=secret id=secret autocomplete=current-password required></label></p>"
             "<p><button type=submit class=primary id=login>Log in</button></p></form></main></body></html>";
    return r;
}

namespace {

// "Retry-After" in whole seconds, at least 1.
std::string retry_after(std::chrono::milliseconds wait) { return std::to_string(std::max<long long>(1, (wait.count() + 999) / 1000)); }

}  // namespace

Response Console::login_post(const Request& req) {
    auto cookie = req.cookies.find(kLoginCookie);
    if (cookie == req.cookies.end() || !constant_time_equal(cookie->second, req.field("csrf")))
        return login_page(req, "The login form expired; try again.", 403);
    std::string name = req.field("user");
    auto it = users_.find(name);
    // The budgets of failed logins come first, so a guesser over them costs no hashing. Only
    // existing users have a budget of their own: unknown names cannot fill the table.
    auto now = LoginLimiter::Clock::now();
    auto wait = failed_by_address_.take(req.client, now);
    if (!wait && it != users_.end()) wait = failed_by_user_.take(name, now);
    if (wait) {
        spdlog::debug("login for user \"{}\" from {} refused: too many failed logins", name.substr(0, 63), req.client);
        Response r = login_page(req, "Too many failed logins; try again later.", 429);
        r.headers.emplace_back("Retry-After", retry_after(*wait));
        return r;
    }
    bool ok = false;
    {
        auto slot = hashing_.try_enter();
        if (!slot) {
            failed_by_address_.give_back(req.client, now);   // not tried: not a failure
            if (it != users_.end()) failed_by_user_.give_back(name, now);
            Response r = login_page(req, "The console is busy with other logins; try again in a moment.", 503);
            r.headers.emplace_back("Retry-After", "1");
            return r;
        }
        // Verify against a dummy hash for unknown users, so timing does not tell who exists.
        static const std::string dummy = hash_secret("dummy");
        ok = verify_secret(req.field("secret"), it == users_.end() ? dummy : it->second.hash) && it != users_.end();
    }
    if (!ok) {
        // Answered at once: slowing guesses is the budgets' job, not a request thread's.
        spdlog::warn("login failed for user \"{}\" from {}", name.substr(0, 63), req.client);
        return login_page(req, "Wrong user or password.", 401);
    }
    failed_by_address_.give_back(req.client, now);
    failed_by_user_.give_back(name, now);
    spdlog::info("login: {} ({})", name, role_name(it->second.role));
    std::string id = sessions_.create(name, it->second.role);
    Response r = redirect("/");
    r.headers.emplace_back("Set-Cookie", std::string(kCookie) + "=" + id + "; Path=/; HttpOnly; SameSite=Strict" +
                                             (opts_.secure_cookie ? "; Secure" : ""));
    r.headers.emplace_back("Set-Cookie", std::string(kLoginCookie) + "=; Path=/login; Max-Age=0; HttpOnly; SameSite=Strict");
    return r;
}

// ----------------------------------------------------------------------------- overview

Response Console::overview(Ctx& c) {
    Tx tx(db_, c.session.role, true);
    auto topics = tx.query("SELECT t.*, extract(epoch FROM now() - t.oldest_ready) AS age FROM once.console_topics() t");
    auto counts = tx.query("SELECT status, n FROM once.console_saga_counts()");
    auto relays = tx.query("SELECT r.*, extract(epoch FROM now() - r.last_activity) AS idle FROM once.console_relays() r");
    c.db_ms = tx.db_ms();
    std::ostringstream b;
    int attention = 0;
    {
        // Rates between the samples of the last minutes (pg_stat_all_tables: rows in, rows out).
        Rates rates = rates_.rates();
        b << "<h2>Send and ack rates</h2><table id=rates><tr><th>sent (rows into once.outbox)</th><td>"
          << sparkline_svg("rate-sent", rates.sent, "msg/s") << "</td></tr><tr><th>acked (rows out of once.outbox)</th><td>"
          << sparkline_svg("rate-acked", rates.acked, "msg/s") << "</td></tr></table><p class=muted>Per second, one bar per "
          << opts_.rate_interval.count() / 1000 << " s (the last " << rates_.capacity() - 1
          << " intervals), from PostgreSQL's table statistics: a discard counts as an ack, a locked relay's nack as both.</p>";
    }
    b << "<h2>Outbox per topic</h2><table id=topics><tr><th>topic</th><th>ready</th><th>delayed</th><th>in flight</th>"
         "<th>blocked</th><th>dead</th><th>oldest ready</th><th>needs attention</th></tr>";
    for (int i = 0; i < topics.size(); ++i) {
        long dead = std::stol(topics(i, "dead")), blocked = std::stol(topics(i, "blocked"));
        double age = topics.is_null(i, "age") ? 0 : std::stod(topics(i, "age"));
        std::string why;
        if (dead) why += "dead letters; ";
        if (blocked) why += "blocked keys; ";
        if (age > 300) why += "oldest ready message waits " + age_text(age) + "; ";
        if (!why.empty()) { ++attention; why.resize(why.size() - 2); }
        std::string topic = topics(i, "topic");
        b << "<tr" << (why.empty() ? "" : " class=attn") << "><td><a href=\"/dead?topic=" << url_encode(topic) << "\">"
          << esc(topic) << "</a></td>" << count_cell(topics(i, "ready")) << count_cell(topics(i, "delayed"))
          << count_cell(topics(i, "in_flight")) << count_cell(topics(i, "blocked")) << count_cell(topics(i, "dead"))
          << "<td>" << (topics.is_null(i, "age") ? "" : age_text(age)) << "</td><td>" << esc(why) << "</td></tr>";
    }
    if (topics.size() == 0) b << "<tr><td colspan=8 class=muted>The outbox is empty.</td></tr>";
    b << "</table><p class=muted>Counts stop at " << kCap << " per topic and kind (shown as " << kCap
      << "+), so this page costs the same with a million messages waiting. Ready, delayed and in flight are counted "
         "over the first " << kCap << " pending messages in claim order.</p>";
    long pending = 0;
    for (int i = 0; i < topics.size(); ++i) pending += std::stol(topics(i, "ready"));
    b << "<h2>Relays connected</h2><table id=relays><tr><th>relay</th><th>connections</th><th>from</th>"
         "<th>connected since</th><th>last activity</th></tr>";
    for (int i = 0; i < relays.size(); ++i) {
        double idle = relays.is_null(i, "idle") ? 0 : std::stod(relays(i, "idle"));
        bool stale = idle > 120;
        if (stale) ++attention;
        b << "<tr" << (stale ? " class=attn" : "") << "><td>" << esc(relays(i, "relay")) << "</td><td class=num>"
          << relays(i, "connections") << "</td><td>" << esc(relays(i, "client")) << "</td><td>"
          << ts(relays(i, "connected_since")) << "</td><td>" << age_text(idle) << " ago" << (stale ? " (stalled?)" : "")
          << "</td></tr>";
    }
    if (relays.size() == 0) {
        if (pending > 0) ++attention;
        b << "<tr" << (pending > 0 ? " class=attn" : "") << "><td colspan=5>No relay is connected to this database"
          << (pending > 0 ? ": ready messages wait for one" : "") << ".</td></tr>";
    }
    b << "</table>";
    b << "<h2>Sagas</h2><table id=saga-counts><tr>";
    std::map<std::string, std::string> by_status;
    for (int i = 0; i < counts.size(); ++i) by_status[counts.get(i, 0)] = counts.get(i, 1);
    static const char* statuses[] = {"running", "compensating", "failed", "completed", "compensated"};
    for (auto* st : statuses) b << "<th>" << st << "</th>";
    bool failed = by_status["failed"] != "0" && !by_status["failed"].empty();
    if (failed) ++attention;
    b << "</tr><tr" << (failed ? " class=attn" : "") << ">";
    for (auto* st : statuses)
        b << "<td class=num><a href=\"/sagas?status=" << st << "\">"
          << (std::stol(by_status[st].empty() ? "0" : by_status[st]) >= kCap ? std::to_string(kCap) + "+" : by_status[st])
          << "</a></td>";
    b << "</tr></table>";
    std::string head = attention ? "<div class=error id=attention>" + std::to_string(attention) +
                                       " row(s) need attention (marked red).</div>"
                                 : "<div class=flash id=attention>Nothing needs attention.</div>";
    Response r;
    r.body = page(c, "Overview", "/", head + b.str());
    return r;
}

// ----------------------------------------------------------------------------- dead letters

Response Console::dead_list(Ctx& c, const Request& req) {
    std::string topic = req.arg("topic"), key = req.arg("key"), error = req.arg("error"), before = req.arg("before"),
                until = req.arg("until");
    if (until.size() > 40 || until.find_first_not_of("0123456789-: T.+") != std::string::npos) until.clear();
    std::optional<std::string> before_dead, before_id;
    auto bar = before.find('|');
    if (bar != std::string::npos && is_uuid(before.substr(bar + 1))) {
        before_dead = before.substr(0, bar);
        before_id = before.substr(bar + 1);
    } else if (!until.empty()) {   // dead before this time (the age filter)
        before_dead = until;
        before_id = "ffffffff-ffff-ffff-ffff-ffffffffffff";
    }
    Tx tx(db_, c.session.role, true);
    auto rows = tx.query("SELECT * FROM once.console_dead_letters($1, $2, $3, $4::timestamptz, $5::uuid, $6)",
                         {opt(topic), opt(key), opt(error), before_dead, before_id, std::to_string(kPage)});
    c.db_ms = tx.db_ms();
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/dead\">Topic <input name=topic id=f-topic value=\"" << esc(topic)
      << "\"> Key <input name=key id=f-key value=\"" << esc(key) << "\"> Error contains <input name=error id=f-error value=\""
      << esc(error) << "\"> Dead before <input name=until id=f-until placeholder=\"2026-11-26 04:00\" size=16 value=\""
      << esc(until) << "\"> <button type=submit id=filter>Filter</button> <a href=\"/dead\">clear</a></form><br>";
    b << "<form method=post action=\"/dead/confirm\" id=dead-form><input type=hidden name=csrf value=\"" << c.session.csrf
      << "\"><table id=dead><tr><th></th><th>id</th><th>topic</th><th>key</th><th>attempts</th><th>dead since</th><th>last error</th></tr>";
    for (int i = 0; i < rows.size(); ++i) {
        std::string id = rows(i, "id");
        b << "<tr><td><input type=checkbox name=id value=\"" << id << "\" id=\"sel-" << id << "\"></td><td><a href=\"/dead/"
          << id << "\">" << id.substr(0, 8) << "…</a></td><td>" << esc(rows(i, "topic")) << "</td><td>" << esc(rows(i, "key"))
          << "</td><td class=num>" << rows(i, "attempt") << "</td><td>" << ts(rows(i, "dead_at")) << "</td><td>"
          << esc(rows(i, "last_error")) << "</td></tr>";
    }
    if (rows.size() == 0) b << "<tr><td colspan=7 class=muted>No dead letters" << (topic.empty() && key.empty() && error.empty() ? "" : " match") << ".</td></tr>";
    b << "</table><button type=submit name=op value=redrive class=primary id=redrive-selected>Redrive selected…</button> "
         "<button type=submit name=op value=discard class=danger id=discard-selected>Discard selected…</button></form>";
    if (rows.size() == kPage) {
        std::string next = rows(kPage - 1, "dead_at") + "|" + rows(kPage - 1, "id");
        b << "<p><a id=older href=\"/dead?topic=" << url_encode(topic) << "&amp;key=" << url_encode(key) << "&amp;error="
          << url_encode(error) << "&amp;before=" << url_encode(next) << "\">Older dead letters →</a></p>";
    }
    Response r;
    r.body = page(c, "Dead letters", "/dead", b.str());
    return r;
}

Response Console::dead_detail(Ctx& c, const std::string& id) {
    if (!is_uuid(id)) { Response r; r.status = 404; r.body = page(c, "Not found", "/dead", "<p>Not a message id.</p>"); return r; }
    Tx tx(db_, c.session.role, true);
    auto m = tx.query("SELECT m.*, jsonb_pretty(m.payload) AS payload_text, jsonb_pretty(m.headers) AS headers_text "
                      "FROM once.console_message($1::uuid) m", {id});
    c.db_ms = tx.db_ms();
    Response r;
    if (m.size() == 0) {
        r.status = 404;
        r.body = page(c, "Message " + id, "/dead", "<p>No such message: it was delivered, discarded or never existed.</p>");
        return r;
    }
    bool dead = !m.is_null(0, "dead_at");
    std::ostringstream b;
    b << "<dl id=message><dt>id</dt><dd>" << esc(id) << "</dd><dt>topic</dt><dd>" << esc(m(0, "topic")) << "</dd><dt>key</dt><dd>"
      << esc(m(0, "key")) << "</dd><dt>state</dt><dd>" << (dead ? "<span class=\"badge st-failed\">dead</span> since " + ts(m(0, "dead_at")) : "pending")
      << "</dd><dt>attempts</dt><dd>" << m(0, "attempt") << "</dd><dt>created</dt><dd>" << ts(m(0, "created_at"))
      << "</dd><dt>last relay</dt><dd>" << esc(m(0, "relay")) << "</dd>";
    if (!m.is_null(0, "key"))
        b << "<dt>its key</dt><dd>" << (m(0, "is_head") == "t" ? "this message is the key's head" : "behind the key's head")
          << "; " << (std::stol(m(0, "waiting")) >= kCap ? std::to_string(kCap) + "+" : m(0, "waiting"))
          << " later message(s) of the key wait behind it</dd>";
    b << "<dt>error</dt><dd id=last-error>" << esc(m(0, "last_error"))
      << " <span class=muted>(pg_once keeps the last error of each message)</span></dd></dl>"
      << "<h2>Payload</h2><pre id=payload>" << esc(m(0, "payload_text")) << "</pre><h2>Headers</h2><pre id=headers>"
      << esc(m.is_null(0, "headers_text") ? "(none)" : m(0, "headers_text")) << "</pre>";
    if (dead)
        b << "<form method=post action=\"/dead/confirm\"><input type=hidden name=csrf value=\"" << c.session.csrf
          << "\"><input type=hidden name=id value=\"" << id << "\"><button type=submit name=op value=redrive class=primary "
             "id=redrive>Redrive…</button> <button type=submit name=op value=discard class=danger id=discard>Discard…</button></form>";
    r.body = page(c, "Message " + id.substr(0, 8) + "…", "/dead", b.str());
    return r;
}

Response Console::dead_confirm(Ctx& c, const Request& req) {
    std::string op = req.field("op");
    auto it = req.form.find("id");
    std::vector<std::string> ids;
    if (it != req.form.end())
        for (auto& id : it->second) if (is_uuid(id) && ids.size() < kMaxIds) ids.push_back(id);
    std::ostringstream b;
    if (op != "redrive" && op != "discard") return redirect("/dead");
    if (ids.empty()) {
        sessions_.set_flash(c.session_id, "Select at least one dead letter.");
        return redirect("/dead");
    }
    if (c.session.role != Role::admin)
        b << "<div class=error>Your role (viewer) cannot act; ask an admin.</div>";
    b << "<p id=question>" << (op == "redrive" ? "Redrive" : "Discard") << " these " << ids.size() << " dead letter(s)? "
      << (op == "redrive" ? "Their attempts start again from 0 and the relays deliver them."
                          : "They are deleted for good; their keys are released.")
      << "</p><ul>";
    for (auto& id : ids) b << "<li><a href=\"/dead/" << id << "\">" << id << "</a></li>";
    b << "</ul><form method=post action=\"/dead/act\"><input type=hidden name=csrf value=\"" << c.session.csrf
      << "\"><input type=hidden name=op value=\"" << op << "\">";
    for (auto& id : ids) b << "<input type=hidden name=id value=\"" << id << "\">";
    b << "<button type=submit class=" << (op == "redrive" ? "primary" : "danger") << " id=confirm>Yes, " << op
      << "</button> <a href=\"/dead\" id=cancel>Cancel</a></form>";
    Response r;
    r.body = page(c, "Confirm: " + op, "/dead", b.str());
    return r;
}

Response Console::dead_act(Ctx& c, const Request& req) {
    std::string op = req.field("op");
    auto it = req.form.find("id");
    std::vector<std::string> ids;
    if (it != req.form.end())
        for (auto& id : it->second) if (is_uuid(id) && ids.size() < kMaxIds) ids.push_back(id);
    Response r;
    if ((op != "redrive" && op != "discard") || ids.empty()) return redirect("/dead");
    if (c.session.role != Role::admin) {
        spdlog::warn("{} by viewer {} refused", op, c.session.user);
        r.status = 403;
        r.body = page(c, "Not allowed", "/dead", "<div class=error id=error>Your role (viewer) cannot " + op + ".</div>");
        return r;
    }
    std::string arr = "{";
    for (size_t i = 0; i < ids.size(); ++i) arr += (i ? "," : "") + ids[i];
    arr += "}";
    Tx tx(db_, c.session.role, false);
    auto n = tx.query("SELECT once.console_" + op + "($1, $2::uuid[])", {c.session.user, arr});
    tx.commit();
    spdlog::info("{} {}: {} of {} dead letter(s)", c.session.user, op, n.get(0, 0), ids.size());
    sessions_.set_flash(c.session_id, (op == "redrive" ? "Redrove " : "Discarded ") + n.get(0, 0) + " of " +
                                          std::to_string(ids.size()) + " dead letter(s).");
    return redirect("/dead");
}

// ----------------------------------------------------------------------------- blocked keys

Response Console::blocked(Ctx& c) {
    Tx tx(db_, c.session.role, true);
    auto rows = tx.query("SELECT * FROM once.console_blocked_keys(100)");
    c.db_ms = tx.db_ms();
    std::ostringstream b;
    b << "<p class=muted>A key's messages are delivered in order: while its oldest message is dead, or delayed to a "
         "later time, the ones behind it wait.</p><table id=blocked><tr><th>key</th><th>topic</th><th>why</th><th>head message</th>"
         "<th>waiting behind it</th><th>what unblocks it</th></tr>";
    for (int i = 0; i < rows.size(); ++i) {
        std::string id = rows(i, "head_id"), reason = rows(i, "reason");
        b << "<tr class=attn><td>" << esc(rows(i, "key")) << "</td><td>" << esc(rows(i, "topic")) << "</td><td>";
        if (reason == "dead") b << "its head is <b>dead</b>: " << esc(rows(i, "head_error"));
        else b << "its head is <b>delayed</b> until " << ts(rows(i, "held_until"));
        b << "</td><td><a href=\"/dead/" << id << "\">" << id.substr(0, 8) << "…</a></td><td class=num>"
          << (std::stol(rows(i, "waiting")) >= kCap ? std::to_string(kCap) + "+" : rows(i, "waiting")) << "</td><td>";
        if (reason == "dead")
            b << "<form method=post action=\"/dead/confirm\"><input type=hidden name=csrf value=\"" << c.session.csrf
              << "\"><input type=hidden name=id value=\"" << id << "\"><button type=submit name=op value=redrive>Redrive head…</button> "
                 "<button type=submit name=op value=discard class=danger>Discard head…</button></form>";
        else
            b << "waits for its time; nothing to do unless the delay is wrong";
        b << "</td></tr>";
    }
    if (rows.size() == 0) b << "<tr><td colspan=6 class=muted>No key is blocked.</td></tr>";
    b << "</table>";
    Response r;
    r.body = page(c, "Blocked keys", "/blocked", b.str());
    return r;
}

// ----------------------------------------------------------------------------- sagas

namespace {

// A saga's page: a saga is (name, saga_id), ids being unique per definition only.
std::string saga_href(const std::string& name, const std::string& id) {
    return "/saga?name=" + url_encode(name) + "&id=" + url_encode(id);
}

}  // namespace

Response Console::sagas(Ctx& c, const Request& req) {
    std::string name = req.arg("name"), status = req.arg("status"), q = req.arg("q"), before = req.arg("before");
    // q: a saga id (opened when one definition has it, else listed) or key=value of the saga's
    // input, a business key such as order_id=1001 (listed).
    const bool by_id = !q.empty() && q.find('=') == std::string::npos;
    static const char* statuses[] = {"failed", "running", "compensating", "completed", "compensated"};
    bool known = status.empty();
    for (auto* s : statuses) known |= status == s;
    if (!known) status.clear();
    std::optional<std::string> before_created, before_id;
    auto bar = before.find('|');
    if (bar != std::string::npos) { before_created = before.substr(0, bar); before_id = before.substr(bar + 1); }
    Tx tx(db_, c.session.role, true);
    auto names = tx.query("SELECT name FROM once.console_saga_definitions()");
    auto per_def = tx.query("SELECT name, status, n FROM once.console_saga_definition_counts()");
    auto rows = q.empty() ? tx.query("SELECT * FROM once.console_sagas($1, $2, $3::timestamptz, $4, $5)",
                                     {opt(name), opt(status), before_created, before_id, std::to_string(kPage)})
                          : tx.query("SELECT * FROM once.console_saga_search($1, $2)", {q, std::to_string(kPage)});
    c.db_ms = tx.db_ms();
    if (by_id && rows.size() == 1) return redirect(saga_href(rows(0, "name"), rows(0, "saga_id")));
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/sagas\">Definition <select name=name id=f-name><option value=\"\">all</option>";
    for (int i = 0; i < names.size(); ++i)
        b << "<option" << (names.get(i, 0) == name ? " selected" : "") << ">" << esc(names.get(i, 0)) << "</option>";
    b << "</select> Status <select name=status id=f-status><option value=\"\">all</option>";
    for (auto* s : statuses) b << "<option" << (status == s ? " selected" : "") << ">" << s << "</option>";
    b << "</select> <button type=submit id=filter>Show</button></form><form class=filters method=get action=\"/sagas\">"
         "Saga id or business key <input name=q id=q placeholder=\"order-42 or order_id=1001\" value=\"" << esc(q)
      << "\"> <button type=submit id=search>Find</button></form>"
         "<p class=muted>A business key is key=value of the saga's input (order_id=1001); a saga id opens the saga "
         "(or lists the definitions that have the id: saga ids are unique per definition).</p>";
    // Per definition and status, each counted up to kCap.
    static const char* count_order[] = {"running", "compensating", "failed", "completed", "compensated"};
    b << "<table id=definition-counts><tr><th>definition</th>";
    for (auto* s : count_order) b << "<th>" << s << "</th>";
    b << "</tr>";
    for (int i = 0; i < per_def.size();) {
        std::string def = per_def.get(i, 0);
        std::map<std::string, std::string> n;
        for (; i < per_def.size() && per_def.get(i, 0) == def; ++i) n[per_def.get(i, 1)] = per_def.get(i, 2);
        bool failed = !n["failed"].empty() && n["failed"] != "0";
        b << "<tr" << (failed ? " class=attn" : "") << "><td>" << esc(def) << "</td>";
        for (auto* s : count_order) {
            std::string v = n[s].empty() ? "0" : n[s];
            b << "<td class=num><a href=\"/sagas?name=" << url_encode(def) << "&amp;status=" << s << "\">"
              << (std::stol(v) >= kCap ? std::to_string(kCap) + "+" : v) << "</a></td>";
        }
        b << "</tr>";
    }
    if (per_def.size() == 0) b << "<tr><td colspan=6 class=muted>No saga definitions.</td></tr>";
    b << "</table><br>";
    if (by_id) b << "<p id=search-result>Sagas with the id " << esc(q) << ", one per definition:</p>";
    else if (!q.empty()) b << "<p id=search-result>Sagas whose input has " << esc(q) << " (newest first):</p>";
    b << 
         "<table id=sagas><tr><th>saga id</th><th>definition</th><th>status</th><th>step</th><th>attempts</th><th>started</th>"
         "<th>updated</th><th>last error</th></tr>";
    for (int i = 0; i < rows.size(); ++i) {
        std::string id = rows(i, "saga_id"), st = rows(i, "status");
        b << "<tr" << (st == "failed" ? " class=attn" : "") << "><td><a href=\"" << esc(saga_href(rows(i, "name"), id)) << "\">" << esc(id)
          << "</a></td><td>" << esc(rows(i, "name")) << " v" << rows(i, "version") << "</td><td>" << status_badge(st)
          << "</td><td>" << esc(rows(i, "step")) << "</td><td class=num>" << rows(i, "attempts") << "</td><td>"
          << ts(rows(i, "created_at")) << "</td><td>" << ts(rows(i, "updated_at")) << "</td><td>" << esc(rows(i, "last_error"))
          << "</td></tr>";
    }
    if (rows.size() == 0) b << "<tr><td colspan=8 class=muted>No sagas match.</td></tr>";
    b << "</table>";
    if (rows.size() == kPage && q.empty())
        b << "<p><a id=older href=\"/sagas?name=" << url_encode(name) << "&amp;status=" << url_encode(status) << "&amp;before="
          << url_encode(rows(kPage - 1, "created_at") + "|" + rows(kPage - 1, "saga_id")) << "\">Older sagas →</a></p>";
    Response r;
    r.body = page(c, "Sagas", "/sagas", b.str());
    return r;
}

namespace {

// The diagram's path from the saga's history: every step whose action was sent or answered,
// every compensation that ran, and the node the saga is at now.
DiagramPath saga_path(const Rows& hist, const std::string& status, const std::string& step) {
    DiagramPath p;
    std::vector<std::string> seq{"start"};
    auto visit = [&](const std::string& n) {
        if (seq.back() != n) { p.edges.insert({seq.back(), n}); seq.push_back(n); }
        p.nodes.insert(n);
    };
    p.nodes.insert("start");
    for (int i = 0; i < hist.size(); ++i) {
        std::string s = hist(i, "step"), from = hist(i, "from_status"), to = hist(i, "to_status");
        if (s.empty()) continue;
        visit(from == "compensating" || to == "compensating" ? "undo_" + s : s);
        if (to == "completed" || to == "compensated" || to == "failed") visit(to);
    }
    if (status == "running") p.current = step;
    else if (status == "compensating") p.current = "undo_" + step;
    else p.current = status;   // completed, compensated, failed
    return p;
}

}  // namespace

Response Console::saga_detail(Ctx& c, const std::string& name, const std::string& id) {
    Tx tx(db_, c.session.role, true);
    auto s = tx.query("SELECT s.*, jsonb_pretty(s.input) AS input_text, jsonb_pretty(s.data) AS data_text "
                      "FROM once.console_saga($1, $2) s", {name, id});
    Response r;
    if (s.size() == 0) {
        c.db_ms = tx.db_ms();
        r.status = 404;
        r.body = page(c, "Saga not found", "/sagas", "<p id=not-found>No saga of definition <code>" + esc(name) +
                                                         "</code> has the id <code>" + esc(id) + "</code>.</p>");
        return r;
    }
    auto hist = tx.query("SELECT * FROM once.console_saga_history($1, $2, 1000)", {name, id});
    auto steps = tx.query(
        "SELECT e->>'name' AS name, coalesce(e->>'kind', 'compensable') AS kind, "
        "coalesce('topic ' || (e->'action'->>'topic'), 'function ' || (e->'action'->>'function'), '') AS action, "
        "coalesce('topic ' || (e->'compensation'->>'topic'), 'function ' || (e->'compensation'->>'function'), '') AS compensation, "
        "coalesce(e->>'max_attempts', '0') AS max_attempts "
        "FROM jsonb_array_elements($1::jsonb->'steps') WITH ORDINALITY AS x(e, n) ORDER BY n",
        {s(0, "definition")});
    c.db_ms = tx.db_ms();
    std::string status = s(0, "status");
    std::vector<DiagramStep> ds;
    for (int i = 0; i < steps.size(); ++i) {
        DiagramStep d{steps(i, "name"), steps(i, "kind"), steps(i, "action"), steps(i, "compensation"), 0};
        try { d.max_attempts = std::stoi(steps(i, "max_attempts")); } catch (...) {}
        if (d.kind == "retriable") d.compensation.clear();
        ds.push_back(d);
    }
    std::string svg;
    try {
        svg = render_svg(saga_dot(ds, saga_path(hist, status, s(0, "step"))));
    } catch (const std::exception& e) {
        svg = "<div class=error>" + esc(e.what()) + "</div>";
    }
    std::ostringstream b;
    b << "<dl id=saga><dt>saga id</dt><dd>" << esc(id) << "</dd><dt>definition</dt><dd>" << esc(s(0, "name")) << " version "
      << s(0, "version") << "</dd><dt>status</dt><dd id=status>" << status_badge(status) << "</dd><dt>step</dt><dd>"
      << esc(s(0, "step")) << " (attempt " << s(0, "attempts") << ")</dd>";
    if (!s.is_null(0, "cause")) b << "<dt>cause</dt><dd id=cause><b>" << esc(s(0, "cause")) << "</b></dd>";
    if (!s.is_null(0, "last_error")) b << "<dt>last error</dt><dd id=last-error>" << esc(s(0, "last_error")) << "</dd>";
    b << "<dt>started</dt><dd>" << ts(s(0, "created_at")) << "</dd><dt>updated</dt><dd>" << ts(s(0, "updated_at")) << "</dd>";
    if (!s.is_null(0, "deadline")) b << "<dt>next deadline</dt><dd>" << ts(s(0, "deadline")) << "</dd>";
    if (!s.is_null(0, "finished_at")) b << "<dt>finished</dt><dd>" << ts(s(0, "finished_at")) << "</dd>";
    b << "</dl>";
    if (status == "failed" || status == "running") {
        b << "<form method=post action=\"/sagas/confirm\"><input type=hidden name=csrf value=\"" << c.session.csrf
          << "\"><input type=hidden name=name value=\"" << esc(name) << "\"><input type=hidden name=saga_id value=\""
          << esc(id) << "\">";
        if (status == "failed") b << "<button type=submit name=op value=retry class=primary id=retry>Retry…</button> ";
        b << "<button type=submit name=op value=abort class=danger id=abort>Abort…</button></form>";
    }
    b << "<h2>State diagram</h2><div class=diagram id=diagram>" << svg
      << "</div><p class=muted>Yellow: where the saga is now. Blue: the states it has been through.</p>"
      << "<h2>Timeline</h2><table id=history><tr><th>at</th><th>from</th><th>to</th><th>step</th><th>event</th><th>reason</th>"
         "<th>message</th></tr>";
    for (int i = 0; i < hist.size(); ++i)
        b << "<tr" << (hist(i, "to_status") == "failed" ? " class=attn" : "") << "><td>" << esc(hist(i, "at").substr(0, 23))
          << "</td><td>" << esc(hist(i, "from_status")) << "</td><td>" << esc(hist(i, "to_status")) << "</td><td>"
          << esc(hist(i, "step")) << "</td><td>" << esc(hist(i, "event")) << "</td><td>" << esc(hist(i, "reason"))
          << "</td><td>" << esc(hist(i, "message_id")) << "</td></tr>";
    b << "</table><h2>Input</h2><pre id=input>" << esc(s(0, "input_text")) << "</pre><h2>Data</h2><pre id=data>"
      << esc(s(0, "data_text")) << "</pre>";
    r.body = page(c, "Saga " + id + " (" + name + ")", "/sagas", b.str());
    return r;
}

Response Console::saga_confirm(Ctx& c, const Request& req) {
    std::string op = req.field("op"), name = req.field("name"), id = req.field("saga_id");
    if ((op != "retry" && op != "abort") || name.empty() || id.empty()) return redirect("/sagas");
    std::ostringstream b;
    if (c.session.role != Role::admin) b << "<div class=error>Your role (viewer) cannot act; ask an admin.</div>";
    b << "<p id=question>" << (op == "retry" ? "Retry" : "Abort") << " saga <a href=\"" << esc(saga_href(name, id)) << "\">"
      << esc(id) << "</a> of definition <code>" << esc(name) << "</code>? "
      << (op == "retry" ? "It resumes where it stopped: the pending command is sent again with the same key."
                        : "Compensation starts: every step that did or may have taken effect is undone, newest first.")
      << "</p><form method=post action=\"/sagas/act\"><input type=hidden name=csrf value=\"" << c.session.csrf
      << "\"><input type=hidden name=op value=\"" << op << "\"><input type=hidden name=name value=\"" << esc(name)
      << "\"><input type=hidden name=saga_id value=\"" << esc(id) << "\">";
    if (op == "abort") b << "<p><label>Reason <input name=reason id=reason value=\"aborted in once-console\" size=50></label></p>";
    b << "<button type=submit class=" << (op == "retry" ? "primary" : "danger") << " id=confirm>Yes, " << op
      << "</button> <a href=\"" << esc(saga_href(name, id)) << "\" id=cancel>Cancel</a></form>";
    Response r;
    r.body = page(c, "Confirm: " + op, "/sagas", b.str());
    return r;
}

Response Console::saga_act(Ctx& c, const Request& req) {
    std::string op = req.field("op"), name = req.field("name"), id = req.field("saga_id");
    if ((op != "retry" && op != "abort") || name.empty() || id.empty()) return redirect("/sagas");
    Response r;
    if (c.session.role != Role::admin) {
        spdlog::warn("saga {} by viewer {} refused", op, c.session.user);
        r.status = 403;
        r.body = page(c, "Not allowed", "/sagas", "<div class=error id=error>Your role (viewer) cannot " + op + " a saga.</div>");
        return r;
    }
    Tx tx(db_, c.session.role, false);
    auto st = op == "retry" ? tx.query("SELECT once.console_saga_retry($1, $2, $3)", {c.session.user, name, id})
                            : tx.query("SELECT once.console_saga_abort($1, $2, $3, $4)",
                                       {c.session.user, name, id, opt(req.field("reason"))});
    tx.commit();
    spdlog::info("{} saga {} {} ({}): now {}", c.session.user, op, id, name, st.get(0, 0));
    sessions_.set_flash(c.session_id, "Saga " + id + " (" + name + "): " + op + " done, status now " + st.get(0, 0) + ".");
    return redirect(saga_href(name, id));
}

// ----------------------------------------------------------------------------- actions

Response Console::actions(Ctx& c, const Request& req) {
    std::string before = req.arg("before");
    if (before.find_first_not_of("0123456789") != std::string::npos || before.size() > 18) before.clear();
    Tx tx(db_, c.session.role, true);
    auto rows = tx.query("SELECT * FROM once.console_recent_actions($1::bigint, $2)", {opt(before), std::to_string(kPage)});
    c.db_ms = tx.db_ms();
    std::ostringstream b;
    b << "<table id=actions><tr><th>#</th><th>when</th><th>who</th><th>database role</th><th>action</th><th>ids</th>"
         "<th>affected</th><th>result</th></tr>";
    for (int i = 0; i < rows.size(); ++i) {
        std::string ids = rows(i, "ids");
        if (ids.size() > 300) ids = ids.substr(0, 300) + "…";
        b << "<tr><td class=num>" << rows(i, "id") << "</td><td>" << ts(rows(i, "at")) << "</td><td>" << esc(rows(i, "actor"))
          << "</td><td>" << esc(rows(i, "db_role")) << "</td><td>" << esc(rows(i, "action")) << "</td><td><code>" << esc(ids)
          << "</code></td><td class=num>" << rows(i, "affected") << "</td><td>" << esc(rows(i, "result")) << "</td></tr>";
    }
    if (rows.size() == 0) b << "<tr><td colspan=8 class=muted>No actions yet.</td></tr>";
    b << "</table>";
    if (rows.size() == kPage) b << "<p><a id=older href=\"/actions?before=" << rows(kPage - 1, "id") << "\">Older actions →</a></p>";
    Response r;
    r.body = page(c, "Actions", "/actions", b.str());
    return r;
}

// ----------------------------------------------------------------------------- inbox, keys

Response Console::inbox(Ctx& c, const Request& req) {
    std::string after = req.arg("after");
    std::optional<std::string> after_source, after_id;
    auto bar = after.find('|');
    if (bar != std::string::npos) { after_source = after.substr(0, bar); after_id = after.substr(bar + 1); }
    Tx tx(db_, c.session.role, true);
    auto rows = tx.query("SELECT * FROM once.console_inbox_poison($1, $2, $3)", {after_source, after_id, std::to_string(kPage)});
    c.db_ms = tx.db_ms();
    std::ostringstream b;
    b << "<p class=muted>Poison messages failed their source's max attempts; once.deliver refuses them until they are "
         "retried (fix the handler or the data first).</p><table id=poison><tr><th>source</th><th>message id</th><th>topic</th>"
         "<th>attempts</th><th>first failed</th><th>last failed</th><th>last error</th><th></th></tr>";
    for (int i = 0; i < rows.size(); ++i) {
        b << "<tr class=attn><td>" << esc(rows(i, "source")) << "</td><td>" << esc(rows(i, "message_id")) << "</td><td>"
          << esc(rows(i, "topic")) << "</td><td class=num>" << rows(i, "attempts") << "</td><td>" << ts(rows(i, "first_failed_at"))
          << "</td><td>" << ts(rows(i, "last_failed_at")) << "</td><td>" << esc(rows(i, "last_error"))
          << "</td><td><form method=post action=\"/other/confirm\"><input type=hidden name=csrf value=\"" << c.session.csrf
          << "\"><input type=hidden name=op value=inbox_retry><input type=hidden name=a value=\"" << esc(rows(i, "source"))
          << "\"><input type=hidden name=b value=\"" << esc(rows(i, "message_id"))
          << "\"><button type=submit>Retry…</button></form></td></tr>";
    }
    if (rows.size() == 0) b << "<tr><td colspan=8 class=muted>No poison messages.</td></tr>";
    b << "</table>";
    if (rows.size() == kPage)
        b << "<p><a id=older href=\"/inbox?after=" << url_encode(rows(kPage - 1, "source") + "|" + rows(kPage - 1, "message_id"))
          << "\">More →</a></p>";
    // Subscriptions: one whose handler was dropped (while event triggers were off) is marked.
    auto subs = tx.query("SELECT * FROM once.console_subscriptions()", {});
    c.db_ms = tx.db_ms();
    b << "<h2>Subscriptions</h2><table id=subscriptions><tr><th>topic pattern</th><th>handler</th><th>since</th></tr>";
    for (int i = 0; i < subs.size(); ++i) {
        bool gone = subs(i, "handler_exists") != "t";
        b << "<tr" << (gone ? " class=attn" : "") << "><td>" << esc(subs(i, "topic_pattern")) << "</td><td>"
          << esc(subs(i, "handler"))
          << (gone ? " <b class=handler-gone>handler dropped: deliver fails (ON305); once.unsubscribe it</b>" : "")
          << "</td><td>" << ts(subs(i, "subscribed_at")) << "</td></tr>";
    }
    if (subs.size() == 0) b << "<tr><td colspan=3 class=muted>No subscriptions.</td></tr>";
    b << "</table>";
    Response r;
    r.body = page(c, "Inbox: poison messages", "/inbox", b.str());
    return r;
}

Response Console::keys(Ctx& c, const Request& req) {
    std::string scope = req.arg("scope"), key = req.arg("key");
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/keys\">Scope <input name=scope id=k-scope value=\"" << esc(scope)
      << "\"> Key <input name=key id=k-key value=\"" << esc(key) << "\"> <button type=submit id=lookup>Look up</button></form>";
    if (!scope.empty() || !key.empty()) {
        Tx tx(db_, c.session.role, true);
        auto k = tx.query("SELECT * FROM once.console_key($1, $2)", {scope, key});
        c.db_ms = tx.db_ms();
        if (k.size() == 0) {
            b << "<p id=not-found>No key <code>" << esc(key) << "</code> in scope <code>" << esc(scope) << "</code>.</p>";
        } else {
            // A key's identity is (scope, key, owner): each role that stored it has its own row,
            // and a release is of one row.
            b << "<p class=muted id=key-owners>" << k.size() << " role(s) hold this key; each has its own.</p><div id=keys>";
            for (int i = 0; i < k.size(); ++i) {
                bool expired = k(i, "expired") == "t";
                std::string owner_id = k(i, "owner_id");
                std::string owner = k.is_null(i, "owner") ? (owner_id == "0" ? "none (stored by 0.1, shared)" : "dropped role, oid " + owner_id)
                                                          : k(i, "owner");
                b << "<h2>Owner " << esc(owner) << "</h2><dl class=key id=\"key-" << esc(owner_id) << "\"><dt>owner</dt><dd class=owner>"
                  << esc(owner) << "</dd><dt>state</dt><dd>" << esc(k(i, "state")) << (expired ? " (expired: treated as absent)" : "")
                  << "</dd><dt>attempt</dt><dd>" << k(i, "attempt") << "</dd><dt>recovery point</dt><dd>" << esc(k(i, "recovery_point"))
                  << "</dd><dt>leased until</dt><dd>" << ts(k(i, "locked_until"))
                  << "</dd><dt>status</dt><dd>" << esc(k(i, "status")) << "</dd><dt>stored response</dt><dd>"
                  << (k.is_null(i, "response_bytes") ? "none" : k(i, "response_bytes") + " bytes (not shown: it belongs to its owner)")
                  << "</dd><dt>created</dt><dd>" << ts(k(i, "created_at")) << "</dd><dt>expires</dt><dd>" << ts(k(i, "expires_at"))
                  << "</dd></dl>";
                if (k(i, "state") == "in_progress" && !expired)
                    b << "<form method=post action=\"/other/confirm\"><input type=hidden name=csrf value=\"" << c.session.csrf
                      << "\"><input type=hidden name=op value=key_release><input type=hidden name=a value=\"" << esc(scope)
                      << "\"><input type=hidden name=b value=\"" << esc(key) << "\"><input type=hidden name=owner value=\""
                      << esc(owner_id) << "\"><button type=submit class=danger id=\"release-" << esc(owner_id)
                      << "\">Release…</button></form>";
            }
            b << "</div>";
        }
    }
    Response r;
    r.body = page(c, "Idempotency keys", "/keys", b.str());
    return r;
}

namespace {

// The owner of a key's row, as once.keys.owner: an oid in decimal (0: a key stored by 0.1).
bool is_owner_oid(const std::string& s) {
    return !s.empty() && s.size() <= 10 && s.find_first_not_of("0123456789") == std::string::npos &&
           std::stoull(s) <= 4294967295ULL;
}

}  // namespace

Response Console::small_confirm(Ctx& c, const Request& req) {
    std::string op = req.field("op"), a = req.field("a"), bb = req.field("b"), owner = req.field("owner");
    if ((op != "inbox_retry" && op != "key_release") || a.empty() || bb.empty()) return redirect("/");
    if (op == "key_release" && !is_owner_oid(owner)) return redirect("/keys");
    std::string owner_name = owner;   // the role's name when it still exists
    if (op == "key_release") {
        Tx tx(db_, c.session.role, true);
        auto k = tx.query("SELECT owner FROM once.console_key($1, $2) WHERE owner_id = $3::oid", {a, bb, owner});
        c.db_ms = tx.db_ms();
        if (k.size() == 1 && !k.is_null(0, "owner")) owner_name = k(0, "owner");
    }
    std::ostringstream b;
    if (c.session.role != Role::admin) b << "<div class=error>Your role (viewer) cannot act; ask an admin.</div>";
    if (op == "inbox_retry")
        b << "<p id=question>Retry message <code>" << esc(bb) << "</code> from source <code>" << esc(a)
          << "</code>? Its failures are forgotten and the next delivery runs its handlers again.</p>";
    else
        b << "<p id=question>Release key <code>" << esc(bb) << "</code> in scope <code>" << esc(a) << "</code> of owner <code>"
          << esc(owner_name) << "</code>? Its holder loses it; that owner's next call with the key runs the command again. "
             "Other roles' rows of the key stay.</p>";
    b << "<form method=post action=\"/other/act\"><input type=hidden name=csrf value=\"" << c.session.csrf
      << "\"><input type=hidden name=op value=\"" << op << "\"><input type=hidden name=a value=\"" << esc(a)
      << "\"><input type=hidden name=b value=\"" << esc(bb) << "\">"
      << (op == "key_release" ? "<input type=hidden name=owner value=\"" + esc(owner) + "\">" : "")
      << "<button type=submit class=danger id=confirm>Yes</button> "
      << "<a href=\"" << (op == "inbox_retry" ? "/inbox" : "/keys") << "\" id=cancel>Cancel</a></form>";
    Response r;
    r.body = page(c, op == "inbox_retry" ? "Confirm: retry" : "Confirm: release", op == "inbox_retry" ? "/inbox" : "/keys", b.str());
    return r;
}

Response Console::small_act(Ctx& c, const Request& req) {
    std::string op = req.field("op"), a = req.field("a"), bb = req.field("b"), owner = req.field("owner");
    if ((op != "inbox_retry" && op != "key_release") || a.empty() || bb.empty()) return redirect("/");
    if (op == "key_release" && !is_owner_oid(owner)) return redirect("/keys");
    Response r;
    if (c.session.role != Role::admin) {
        r.status = 403;
        r.body = page(c, "Not allowed", "", "<div class=error id=error>Your role (viewer) cannot act.</div>");
        return r;
    }
    Tx tx(db_, c.session.role, false);
    auto done = op == "inbox_retry"
                    ? tx.query("SELECT once.console_inbox_retry($1, $2, $3)", {c.session.user, a, bb})
                    : tx.query("SELECT once.console_key_release($1, $2, $3, $4::oid)", {c.session.user, a, bb, owner});
    tx.commit();
    spdlog::info("{} {} {} {}{}: {}", c.session.user, op, a, bb, op == "key_release" ? " owner " + owner : "", done.get(0, 0));
    sessions_.set_flash(c.session_id, std::string(op == "inbox_retry" ? "Retry" : "Release") + ": " +
                                          (done.get(0, 0) == "t" ? "done." : "nothing to do (already gone)."));
    return redirect(op == "inbox_retry" ? "/inbox" : "/keys?scope=" + url_encode(a) + "&key=" + url_encode(bb));
}

// ----------------------------------------------------------------------------- HTTP

namespace {

using handler_result = relay::MhdResult;

struct Pending {
    std::string body;
    bool too_large = false;
};

handler_result collect(void* cls, MHD_ValueKind, const char* key, const char* value) {
    auto* m = static_cast<std::map<std::string, std::vector<std::string>>*>(cls);
    if (key) (*m)[key].push_back(value ? value : "");
    return MHD_YES;
}

handler_result collect_cookie(void* cls, MHD_ValueKind, const char* key, const char* value) {
    auto* m = static_cast<std::map<std::string, std::string>*>(cls);
    if (key && value) (*m)[key] = value;
    return MHD_YES;
}

handler_result access(void* cls, MHD_Connection* conn, const char* url, const char* method, const char*,
                      const char* upload_data, size_t* upload_data_size, void** con_cls) {
    auto* console = static_cast<Console*>(cls);
    if (*con_cls == nullptr) {
        *con_cls = new Pending;
        return MHD_YES;
    }
    auto* pending = static_cast<Pending*>(*con_cls);
    if (*upload_data_size) {
        if (pending->body.size() + *upload_data_size > kMaxBody) pending->too_large = true;
        else pending->body.append(upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    auto t0 = std::chrono::steady_clock::now();
    Request req;
    req.method = method;
    req.path = url;
    req.client = relay::client_address(conn);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, &collect, &req.query);
    MHD_get_connection_values(conn, MHD_COOKIE_KIND, &collect_cookie, &req.cookies);
    Response res;
    if (pending->too_large) {
        res.status = 413;
        res.content_type = "text/plain";
        res.body = "request too large\n";
    } else {
        if (req.method == "POST") {
            const char* type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
            if (type && std::strncmp(type, "application/x-www-form-urlencoded", 33) == 0) req.form = parse_form(pending->body);
        }
        if (req.method != "GET" && req.method != "HEAD" && req.method != "POST") {
            res.status = 405;
            res.content_type = "text/plain";
            res.body = "method not allowed\n";
        } else {
            res = console->handle(req);
        }
    }
    MHD_Response* r = MHD_create_response_from_buffer(res.body.size(), const_cast<char*>(res.body.data()),
                                                      MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", res.content_type.c_str());
    // Pages carry no script: forbid every script, inline or not, and framing.
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
                            "frame-ancestors 'none'; base-uri 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    for (auto& [k, v] : res.headers) MHD_add_response_header(r, k.c_str(), v.c_str());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::string timing = "total;dur=" + std::to_string(ms);
    MHD_add_response_header(r, "Server-Timing", timing.c_str());
    spdlog::debug("{} {} -> {} in {:.1f} ms", req.method, req.path, res.status, ms);
    handler_result ret = MHD_queue_response(conn, res.status, r);
    MHD_destroy_response(r);
    return ret;
}

void completed(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
    delete static_cast<Pending*>(*con_cls);
    *con_cls = nullptr;
}

}  // namespace

HttpServer::HttpServer(const Options& o, Console& console) {
    relay::ListenerLimits limits;
    limits.max_connections = static_cast<unsigned>(o.max_connections);
    limits.max_per_address = static_cast<unsigned>(o.max_connections_per_address);
    limits.request_timeout = o.request_timeout;
    limits.threads = static_cast<unsigned>(o.threads);
    relay::ListenerHandlers handlers;
    handlers.access = &access;
    handlers.access_cls = &console;
    handlers.completed = &completed;
    listener_ = std::make_unique<relay::HttpListener>(
        "--listen", o.listen, limits, handlers,
        "listening on " + o.listen + ": not a loopback address; serve it through an HTTPS proxy (and set "
        "secure-cookie = on), the console itself speaks plain HTTP");
}

HttpServer::~HttpServer() = default;

int HttpServer::port() const { return listener_->port(); }

}  // namespace once::console
