// The frame around every page after login (navigation, the user, the flash message, the
// timing footer) and the login page. Pure render functions.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace once::console {

extern const char* const kStyle;   // the one style sheet, inline (pages fetch nothing)

constexpr int kRefreshSeconds = 30;   // the overview and the lists reload themselves this often

// Auto-refresh of a page: a meta refresh (no script) unless paused with refresh=off in the URL.
struct RefreshState {
    bool on = false;          // the page refreshes itself
    bool offered = false;     // the page can: show the toggle
    std::string toggle_href;  // the same page with refresh=off (to pause) or without it (to resume)
};

// The refresh of the page at `path` with this query: paused by refresh=off.
RefreshState refresh_state(const std::string& path, const std::map<std::string, std::vector<std::string>>& query);

struct LayoutModel {
    std::string title;
    std::string active;   // the navigation entry shown as current ("/dead"), or ""
    std::string user, role, csrf;
    std::string flash;    // "" = none
    double total_ms = 0, db_ms = 0;
    RefreshState refresh;   // off and not offered unless the page sets it
    std::vector<std::string> databases;   // several: the selector links each one's overview
    std::string database;                 // the page's database
};

std::string render_layout(const LayoutModel& m, const std::string& body);

// `token`: the login form's CSRF token; `error`: "" = none.
std::string render_login(const std::string& token, const std::string& error);

}  // namespace once::console
