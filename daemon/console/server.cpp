#include "server.hpp"

#include "html.hpp"
#include "http_listener.hpp"
#include "operator_actions.hpp"
#include "pages/actions.hpp"
#include "pages/blocked_keys.hpp"
#include "pages/relays.hpp"
#include "pages/dead_letter_bulk.hpp"
#include "pages/dead_letters.hpp"
#include "pages/find_message.hpp"
#include "pages/format.hpp"
#include "pages/inbox.hpp"
#include "pages/keys.hpp"
#include "pages/database_prefix.hpp"
#include "pages/layout.hpp"
#include "pages/overview.hpp"
#include "pages/retrying.hpp"
#include "pages/row_action_confirm.hpp"
#include "pages/sagas.hpp"
#include "percent_encoding.hpp"
#include "pages/wal_slots.hpp"

#include <microhttpd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace once::console {

namespace {

constexpr size_t kMaxBody = 256 * 1024;
const char* kCookie = "once_console_session";
const char* kLoginCookie = "once_console_login";
// Logins hashing a password at once (PBKDF2, tens of milliseconds each); further logins are
// answered 503 at once. Two of the request threads at most, so pages keep the others.
constexpr unsigned kHashingSlots = 2;

std::string first(const std::map<std::string, std::vector<std::string>>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() || it->second.empty() ? std::string() : it->second.front();
}

Response redirect(const std::string& to) {
    Response r;
    r.status = 303;
    r.headers.emplace_back("Location", to);
    r.body = "<a href=\"" + esc(to) + "\">continue</a>";
    return r;
}

}  // namespace

std::string Request::arg(const std::string& name) const { return first(query, name); }
std::string Request::field(const std::string& name) const { return first(form, name); }

struct Console::Ctx {
    std::string session_id;
    Session session;
    const DbConfig* db = nullptr;   // the database the request is for
    std::string db_name;
    RateHistory* rates = nullptr;
    double db_ms = 0;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

namespace {

std::vector<std::unique_ptr<Console::Database>> make_databases(const Options& o) {
    std::vector<std::unique_ptr<Console::Database>> dbs;
    for (auto& d : o.databases)
        dbs.push_back(std::unique_ptr<Console::Database>(
            new Console::Database{d.name, DbConfig{d.conninfo, o.connect_timeout, o.statement_timeout}, RateHistory()}));
    return dbs;
}

}  // namespace

Console::Console(const Options& o, std::map<std::string, User> users)
    : opts_(o), dbs_(make_databases(o)), users_(std::move(users)), sessions_(o.session_ttl),
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
        for (auto& db : dbs_) {
            try {
                Tx tx(db->cfg, Role::viewer, true);
                auto r = tx.query("SELECT extract(epoch FROM c.at), c.inserted, c.deleted FROM once.console_outbox_counters() c");
                tx.commit();
                if (r.size() == 1 && !r.null(0, 1))
                    db->rates.add({std::stod(r.get(0, 0)), std::stoll(r.get(0, 1)), std::stoll(r.get(0, 2))});
            } catch (const std::exception& e) {
                spdlog::debug("rate sample of database {}: {}", db->name, e.what());
                reset_thread_connection();
            }
        }
        lock.lock();
        stop_cv_.wait_for(lock, opts_.rate_interval, [this] { return stopping_; });
    }
}

LayoutModel Console::layout(Ctx& c, const std::string& title, const std::string& active) {
    LayoutModel m;
    if (dbs_.size() > 1)
        for (auto& d : dbs_) m.databases.push_back(d->name);
    m.database = c.db_name;
    m.title = title;
    m.active = active;
    m.user = c.session.user;
    m.role = role_name(c.session.role);
    m.csrf = c.session.csrf;
    m.flash = sessions_.take_flash(c.session_id);
    m.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c.start).count();
    m.db_ms = c.db_ms;
    return m;
}

std::string Console::page(Ctx& c, const std::string& title, const std::string& active, const std::string& body) {
    return render_layout(layout(c, title, active), body);
}

std::string Console::refreshing_page(Ctx& c, const Request& req, const std::string& title, const std::string& active,
                                     const std::string& body) {
    LayoutModel m = layout(c, title, active);
    m.refresh = refresh_state(req.path, req.query);
    return render_layout(m, body);
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
        // The database: /db/NAME/… names one; a path without the prefix is for the first.
        Request rq = req;
        Database* db = dbs_.front().get();
        if (auto p = split_database_prefix(req.path)) {
            db = nullptr;
            for (auto& d : dbs_)
                if (d->name == p->db) db = d.get();
            if (!db) {
                r.status = 404;
                r.content_type = "text/plain";
                r.body = "no such database\n";
                return r;
            }
            rq.path = p->path;
        }
        Response out = handle_session(rq, *db);
        if (dbs_.size() > 1) {
            // Every link, form and redirect of the answer stays in this database.
            std::string prefix = database_prefix(db->name);
            if (out.content_type.rfind("text/html", 0) == 0) out.body = prefix_links(out.body, prefix);
            for (auto& [k, v] : out.headers)
                if (k == "Location") v = prefix_location(v, prefix);
        }
        return out;
    } catch (const std::exception& e) {
        spdlog::error("{} {}: {}", req.method, req.path, e.what());
        r.status = 500;
        r.content_type = "text/plain";
        r.body = "internal error\n";
        return r;
    }
}

Response Console::handle_session(const Request& req, Database& db) {
    Response r;
    try {
        Ctx c;
        c.db = &db.cfg;
        c.db_name = db.name;
        c.rates = &db.rates;
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
        if (p == "/") return overview(c, req);
        if (p == "/dead") return dead_list(c, req);
        if (p == "/dead/bulk") return bulk_page(c, req);
        if (p.rfind("/dead/", 0) == 0) return dead_detail(c, p.substr(6));
        if (p == "/blocked") return blocked(c, req);
        if (p == "/relays") return relays(c, req);
        if (p == "/sagas") return sagas(c, req);
        if (p == "/saga") return saga_detail(c, req.arg("name"), req.arg("id"));
        // A link of a console before sagas were (name, saga_id): the search by id opens the
        // saga, or lists the definitions that have the id. MHD decoded the path.
        if (p.rfind("/sagas/", 0) == 0) return redirect("/sagas?q=" + relay::percent_encode(p.substr(7)));
        if (p == "/actions") return actions(c, req);
        if (p == "/inbox") return inbox(c, req);
        if (p == "/keys") return keys(c, req);
        if (p == "/wal") return wal(c, req);
        if (p == "/retrying") return retrying(c, req);
        if (p == "/find") return find(c, req);
    } else if (req.method == "POST") {
        // One handler for the two row actions; each posts to its own page's URL.
        if (p == "/inbox/confirm" || p == "/keys/confirm") return small_confirm(c, req);
        if (p == "/inbox/act" || p == "/keys/act") return small_act(c, req);
        if (p == "/dead/bulk/confirm") return bulk_confirm(c, req);
        if (p == "/dead/bulk/act") return bulk_act(c, req);
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
    r.body = render_login(token, error);
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

// ----------------------------------------------------------------------------- pages
// Each page: its view model from the database (pages/*.hpp), rendered in the frame.

Response Console::overview(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    OverviewModel m = load_overview(tx);
    c.db_ms = tx.db_ms();
    m.rates = c.rates->rates();
    m.rate_interval_s = opts_.rate_interval.count() / 1000;
    m.rate_intervals = c.rates->capacity() - 1;
    Response r;
    r.body = refreshing_page(c, req, "Overview", "/", render_overview(m, overview_attention(m)));
    return r;
}

Response Console::dead_list(Ctx& c, const Request& req) {
    DeadLetterFilter f{req.arg("topic"), req.arg("key"), req.arg("error"), req.arg("until")};
    Tx tx(*c.db, c.session.role, true);
    DeadLetterListModel m = load_dead_letter_list(tx, f, req.arg("before"));
    c.db_ms = tx.db_ms();
    m.csrf = c.session.csrf;
    Response r;
    // No auto-refresh: a reload would drop the boxes the user ticked.
    r.body = page(c, "Dead letters", "/dead", render_dead_letter_list(m));
    return r;
}

Response Console::dead_detail(Ctx& c, const std::string& id) {
    if (!is_uuid(id)) { Response r; r.status = 404; r.body = page(c, "Not found", "/dead", "<p>Not a message id.</p>"); return r; }
    Tx tx(*c.db, c.session.role, true);
    auto m = load_dead_letter(tx, id);
    c.db_ms = tx.db_ms();
    Response r;
    if (!m) {
        r.status = 404;
        r.body = page(c, "Message " + id, "/dead", "<p>No such message: it was delivered, discarded or never existed.</p>");
        return r;
    }
    m->csrf = c.session.csrf;
    r.body = page(c, "Message " + id.substr(0, 8) + "…", "/dead", render_dead_letter(*m));
    return r;
}

Response Console::dead_confirm(Ctx& c, const Request& req) {
    DeadLetterConfirmModel m{req.field("op"), selected_dead_letters(req.form), c.session.role == Role::admin, c.session.csrf};
    if (m.op != "redrive" && m.op != "discard") return redirect("/dead");
    if (m.ids.empty()) {
        sessions_.set_flash(c.session_id, "Select at least one dead letter.");
        return redirect("/dead");
    }
    Response r;
    r.body = page(c, "Confirm: " + m.op, "/dead", render_dead_letter_confirm(m));
    return r;
}

Response Console::dead_act(Ctx& c, const Request& req) {
    std::string op = req.field("op");
    std::vector<std::string> ids = selected_dead_letters(req.form);
    Response r;
    if ((op != "redrive" && op != "discard") || ids.empty()) return redirect("/dead");
    if (c.session.role != Role::admin) {
        spdlog::warn("{} by viewer {} refused", op, c.session.user);
        r.status = 403;
        r.body = page(c, "Not allowed", "/dead", "<div class=error id=error>Your role (viewer) cannot " + op + ".</div>");
        return r;
    }
    Tx tx(*c.db, c.session.role, false);
    std::string n = run_dead_letter_action(tx, c.session.user, op, ids);
    tx.commit();
    spdlog::info("{} {}: {} of {} dead letter(s)", c.session.user, op, n, ids.size());
    sessions_.set_flash(c.session_id, (op == "redrive" ? "Redrove " : "Discarded ") + n + " of " +
                                          std::to_string(ids.size()) + " dead letter(s).");
    return redirect("/dead");
}

Response Console::blocked(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    BlockedKeysModel m = load_blocked_keys(tx);
    c.db_ms = tx.db_ms();
    m.csrf = c.session.csrf;
    Response r;
    r.body = refreshing_page(c, req, "Blocked keys", "/blocked", render_blocked_keys(m));
    return r;
}

Response Console::relays(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    RelaysModel m = load_relays(tx);
    c.db_ms = tx.db_ms();
    Response r;
    r.body = refreshing_page(c, req, "Relays", "/relays", render_relays(m));
    return r;
}

Response Console::sagas(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    SagaListModel m = load_saga_list(tx, req.arg("name"), req.arg("status"), req.arg("q"), req.arg("before"));
    c.db_ms = tx.db_ms();
    // A search by id that one definition answers opens that saga.
    if (m.by_id && m.rows.size() == 1) return redirect(saga_href(m.rows[0].name, m.rows[0].saga_id));
    Response r;
    r.body = page(c, "Sagas", "/sagas", render_saga_list(m));
    return r;
}

Response Console::saga_detail(Ctx& c, const std::string& name, const std::string& id) {
    Tx tx(*c.db, c.session.role, true);
    auto m = load_saga(tx, name, id);
    c.db_ms = tx.db_ms();
    Response r;
    if (!m) {
        r.status = 404;
        r.body = page(c, "Saga not found", "/sagas", "<p id=not-found>No saga of definition <code>" + esc(name) +
                                                         "</code> has the id <code>" + esc(id) + "</code>.</p>");
        return r;
    }
    m->csrf = c.session.csrf;
    r.body = page(c, "Saga " + id + " (" + name + ")", "/sagas", render_saga(*m));
    return r;
}

Response Console::saga_confirm(Ctx& c, const Request& req) {
    SagaConfirmModel m{req.field("op"), req.field("name"), req.field("saga_id"), c.session.role == Role::admin, c.session.csrf};
    if ((m.op != "retry" && m.op != "abort") || m.name.empty() || m.id.empty()) return redirect("/sagas");
    Response r;
    r.body = page(c, "Confirm: " + m.op, "/sagas", render_saga_confirm(m));
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
    Tx tx(*c.db, c.session.role, false);
    std::string st = run_saga_action(tx, c.session.user, op, name, id, null_if_empty(req.field("reason")));
    tx.commit();
    spdlog::info("{} saga {} {} ({}): now {}", c.session.user, op, id, name, st);
    sessions_.set_flash(c.session_id, "Saga " + id + " (" + name + "): " + op + " done, status now " + st + ".");
    return redirect(saga_href(name, id));
}

Response Console::actions(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    ActionsModel m = load_actions(tx, req.arg("before"));
    c.db_ms = tx.db_ms();
    Response r;
    r.body = refreshing_page(c, req, "Actions", "/actions", render_actions(m));
    return r;
}

Response Console::inbox(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    InboxModel m = load_inbox(tx, req.arg("after"));
    c.db_ms = tx.db_ms();
    m.csrf = c.session.csrf;
    Response r;
    r.body = refreshing_page(c, req, "Inbox: poison messages", "/inbox", render_inbox(m));
    return r;
}

Response Console::keys(Ctx& c, const Request& req) {
    std::string scope = req.arg("scope"), key = req.arg("key");
    KeysModel m;
    if (!scope.empty() || !key.empty()) {
        Tx tx(*c.db, c.session.role, true);
        m = load_keys(tx, scope, key);
        c.db_ms = tx.db_ms();
    } else {
        m = keys_form(scope, key);
    }
    m.csrf = c.session.csrf;
    Response r;
    r.body = page(c, "Idempotency keys", "/keys", render_keys(m));
    return r;
}

Response Console::small_confirm(Ctx& c, const Request& req) {
    RowActionConfirmModel m{req.field("op"), req.field("a"), req.field("b"), req.field("owner"), "",
                            c.session.role == Role::admin, c.session.csrf};
    if (!valid_row_action(m.op, m.a, m.b) || req.path != row_action_home(m.op) + "/confirm") return redirect("/");
    if (m.op == "key_release" && !is_owner_oid(m.owner)) return redirect("/keys");
    m.owner_name = m.owner;
    if (m.op == "key_release") {
        Tx tx(*c.db, c.session.role, true);
        m.owner_name = load_key_owner_name(tx, m.a, m.b, m.owner);
        c.db_ms = tx.db_ms();
    }
    Response r;
    r.body = page(c, m.op == "inbox_retry" ? "Confirm: retry" : "Confirm: release", row_action_home(m.op),
                  render_row_action_confirm(m));
    return r;
}

Response Console::small_act(Ctx& c, const Request& req) {
    std::string op = req.field("op"), a = req.field("a"), bb = req.field("b"), owner = req.field("owner");
    if (!valid_row_action(op, a, bb) || req.path != row_action_home(op) + "/act") return redirect("/");
    if (op == "key_release" && !is_owner_oid(owner)) return redirect("/keys");
    Response r;
    if (c.session.role != Role::admin) {
        r.status = 403;
        r.body = page(c, "Not allowed", "", "<div class=error id=error>Your role (viewer) cannot act.</div>");
        return r;
    }
    Tx tx(*c.db, c.session.role, false);
    std::string done = run_row_action(tx, c.session.user, op, a, bb, owner);
    tx.commit();
    spdlog::info("{} {} {} {}{}: {}", c.session.user, op, a, bb, op == "key_release" ? " owner " + owner : "", done);
    sessions_.set_flash(c.session_id, std::string(op == "inbox_retry" ? "Retry" : "Release") + ": " +
                                          (done == "t" ? "done." : "nothing to do (already gone)."));
    return redirect(op == "inbox_retry" ? "/inbox" : "/keys?scope=" + relay::percent_encode(a) + "&key=" + relay::percent_encode(bb));
}

Response Console::wal(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    WalModel m = load_wal(tx);
    c.db_ms = tx.db_ms();
    Response r;
    r.body = refreshing_page(c, req, "WAL transport", "/wal", render_wal(m));
    return r;
}

Response Console::retrying(Ctx& c, const Request& req) {
    Tx tx(*c.db, c.session.role, true);
    RetryingModel m = load_retrying(tx, req.arg("topic"), req.arg("after"));
    c.db_ms = tx.db_ms();
    Response r;
    r.body = refreshing_page(c, req, "Retrying messages", "/retrying", render_retrying(m));
    return r;
}

Response Console::find(Ctx& c, const Request& req) {
    std::string id = req.arg("id");
    FindModel m = find_form(id);
    if (!id.empty()) {
        Tx tx(*c.db, c.session.role, true);
        m = load_find(tx, id);
        c.db_ms = tx.db_ms();
    }
    Response r;
    r.body = page(c, "Find a message", "/find", render_find(m));
    return r;
}

Response Console::bulk_page(Ctx& c, const Request& req) {
    BulkModel m;
    m.filter = bulk_filter(req.query);
    m.counted = !req.arg("count").empty() || m.filter.any();
    m.admin = c.session.role == Role::admin;
    m.csrf = c.session.csrf;
    if (m.counted) {
        Tx tx(*c.db, c.session.role, true);
        m.count = count_bulk(tx, m.filter);
        c.db_ms = tx.db_ms();
    }
    Response r;
    r.body = page(c, "Dead letters by filter", "/dead", render_bulk_page(m));
    return r;
}

Response Console::bulk_confirm(Ctx& c, const Request& req) {
    BulkModel m;
    m.filter = bulk_filter(req.form);
    m.counted = true;
    m.op = req.field("op");
    m.admin = c.session.role == Role::admin;
    m.csrf = c.session.csrf;
    if (m.op != "redrive" && m.op != "discard") return redirect("/dead/bulk");
    {
        Tx tx(*c.db, c.session.role, true);
        m.count = count_bulk(tx, m.filter);
        c.db_ms = tx.db_ms();
    }
    Response r;
    r.body = page(c, "Confirm: " + m.op + " by filter", "/dead", render_bulk_confirm(m));
    return r;
}

Response Console::bulk_act(Ctx& c, const Request& req) {
    std::string op = req.field("op"), bound = req.field("bound"), expected = req.field("expected");
    if (expected.empty() || expected.size() > 6 || expected.find_first_not_of("0123456789") != std::string::npos) expected = "?";
    BulkFilter f = bulk_filter(req.form);
    if ((op != "redrive" && op != "discard") || !is_timestamp_text(bound)) return redirect("/dead/bulk");
    Response r;
    if (c.session.role != Role::admin) {
        spdlog::warn("{} by filter by viewer {} refused", op, c.session.user);
        r.status = 403;
        r.body = page(c, "Not allowed", "/dead", "<div class=error id=error>Your role (viewer) cannot " + op + ".</div>");
        return r;
    }
    Tx tx(*c.db, c.session.role, false);
    std::string n = run_bulk_action(tx, c.session.user, op, f, bound);
    tx.commit();
    spdlog::info("{} {} by filter: {} dead letter(s) (confirmed {})", c.session.user, op, n, expected);
    sessions_.set_flash(c.session_id, (op == "redrive" ? "Redrove " : "Discarded ") + n + " dead letter(s) of the " +
                                          expected + " the confirmation counted.");
    return redirect("/dead");
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
