// Several databases in one console: every page of a database is under /db/NAME/ (the prefix is
// stripped before routing and put back on every link, form and redirect of the answer), and
// the layout's selector links each database's overview. A path without the prefix is for the
// first database. Pure functions.
#pragma once

#include <optional>
#include <string>

namespace once::console {

struct DatabasePath {
    std::string db;     // the name in /db/NAME/…
    std::string path;   // the rest, from its "/"
};

// "/db/orders/dead" -> {orders, /dead}; "/db/orders" -> {orders, /}; other paths: none.
std::optional<DatabasePath> split_database_prefix(const std::string& path);
// "/db/NAME"
std::string database_prefix(const std::string& name);
// Every href="/…" and action="/…" of the page (but /db/… ones, the selector's) gets the prefix.
std::string prefix_links(const std::string& html, const std::string& prefix);
// A redirect's target: a local path gets the prefix, /login does not (it serves every database).
std::string prefix_location(const std::string& location, const std::string& prefix);

}  // namespace once::console
