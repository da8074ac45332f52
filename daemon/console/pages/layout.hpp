// The frame around every page after login (navigation, the user, the flash message, the
// timing footer) and the login page. Pure render functions.
#pragma once

#include <string>

namespace once::console {

extern const char* const kStyle;   // the one style sheet, inline (pages fetch nothing)

struct LayoutModel {
    std::string title;
    std::string active;   // the navigation entry shown as current ("/dead"), or ""
    std::string user, role, csrf;
    std::string flash;    // "" = none
    double total_ms = 0, db_ms = 0;
};

std::string render_layout(const LayoutModel& m, const std::string& body);

// `token`: the login form's CSRF token; `error`: "" = none.
std::string render_login(const std::string& token, const std::string& error);

}  // namespace once::console
