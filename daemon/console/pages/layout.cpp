#include "pages/layout.hpp"

#include "html.hpp"
#include "percent_encoding.hpp"

#include <cstdio>
#include <utility>

namespace once::console {

const char* const kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:8px 16px;display:flex;flex-wrap:wrap;align-items:center;gap:8px 18px}
header a{color:#cfd6e4;text-decoration:none;white-space:nowrap}header a.on{color:#fff;font-weight:600;border-bottom:2px solid #ffd24d}
header .who{margin-left:auto;color:#cfd6e4}header .dbs{color:#cfd6e4;border-right:1px solid #4a5468;padding-right:14px}header form{display:inline}
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

RefreshState refresh_state(const std::string& path, const std::map<std::string, std::vector<std::string>>& query) {
    RefreshState r;
    r.offered = true;
    std::string rest;   // the query without refresh, in a stable order
    bool paused = false;
    for (auto& [k, values] : query) {
        if (k == "refresh") {
            for (auto& v : values) paused = paused || v == "off";
            continue;
        }
        for (auto& v : values) rest += (rest.empty() ? "" : "&") + relay::percent_encode(k) + "=" + relay::percent_encode(v);
    }
    r.on = !paused;
    std::string base = path + (rest.empty() ? "" : "?" + rest);
    r.toggle_href = paused ? base : base + (rest.empty() ? "?" : "&") + "refresh=off";
    return r;
}

std::string render_layout(const LayoutModel& m, const std::string& body) {
    std::string nav;
    const std::pair<const char*, const char*> items[] = {{"/", "Overview"}, {"/dead", "Dead letters"},
                                                         {"/blocked", "Blocked keys"}, {"/relays", "Relays"}, {"/sagas", "Sagas"},
                                                         {"/retrying", "Retrying"}, {"/wal", "WAL"},
                                                         {"/inbox", "Inbox"}, {"/keys", "Keys"},
                                                         {"/find", "Find"}, {"/actions", "Actions"}};
    for (auto& [href, label] : items)
        nav += std::string("<a href=\"") + href + "\"" + (m.active == href ? " class=on" : "") + ">" + label + "</a>";
    char timing[96];
    std::snprintf(timing, sizeof timing, "%.1f ms (database %.1f ms)", m.total_ms, m.db_ms);
    // Several databases: a selector (the current one marked); the prefix of each link of the page
    // is the server's (prefix_links), these already have theirs.
    std::string selector;
    if (m.databases.size() > 1) {
        selector = "<span class=dbs id=databases>database:";
        for (auto& d : m.databases)
            selector += " <a href=\"/db/" + esc(d) + "/\"" + (d == m.database ? " class=on" : "") + ">" + esc(d) + "</a>";
        selector += "</span>";
    }
    std::string refresh_meta, refresh_toggle;
    if (m.refresh.on) refresh_meta = "<meta http-equiv=refresh content=\"" + std::to_string(kRefreshSeconds) + "\">";
    if (m.refresh.offered)
        refresh_toggle = std::string("<a id=refresh-toggle href=\"") + esc(m.refresh.toggle_href) + "\">" +
                         (m.refresh.on ? "Pause auto-refresh" : "Resume auto-refresh") + "</a>";
    return "<!doctype html><html lang=en><head><meta charset=utf-8>" + refresh_meta + "<title>" + esc(m.title) +
           " · once-console</title><style>" + kStyle + "</style></head><body><header><strong>once-console</strong>" +
           selector + nav + refresh_toggle + "<span class=who>" + esc(m.user) + " (" + m.role +
           ")</span><form method=post action=\"/logout\"><input type=hidden name=csrf value=\"" + m.csrf +
           "\"><button type=submit id=logout>Log out</button></form></header><main>" +
           (m.flash.empty() ? "" : "<div class=flash id=flash>" + esc(m.flash) + "</div>") + "<h1>" + esc(m.title) + "</h1>" +
           body + "</main><footer id=timing>page " + timing + "</footer></body></html>";
}

std::string render_login(const std::string& token, const std::string& error) {
    return std::string("<!doctype html><html lang=en><head><meta charset=utf-8><title>Log in · once-console</title><style>") +
           kStyle + "</style></head><body><header><strong>once-console</strong></header><main><h1>Log in</h1>" +
           (error.empty() ? "" : "<div class=error id=error>" + esc(error) + "</div>") +
           "<form method=post action=\"/login\"><input type=hidden name=csrf value=\"" + token +
           "\"><p><label>User <input name=user id=user autocomplete=username required></label></p>"
           "<p><label>Password or token <input type=password name=secret id=secret autocomplete=current-password required></label></p>"
           "<p><button type=submit class=primary id=login>Log in</button></p></form></main></body></html>";
}

}  // namespace once::console
