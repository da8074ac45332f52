#include "message_route.hpp"

#include <algorithm>

namespace once {

Route route_message(const RouteFacts& f) {
    if (f.transport == Transport::table || f.has_deliver_at) return Route::table_row;
    if (!f.has_key) return Route::wal_now;
    if (f.explicit_id || !f.preloaded) return Route::table_row;
    if (!f.at_commit) return Route::wal_at_commit;
    if (f.at_commit->key_in_table || f.at_commit->preparing) return Route::table_row;
    return Route::wal_now;
}

std::vector<Route> route_batch(const std::vector<RouteFacts>& messages) {
    std::vector<Route> routes;
    routes.reserve(messages.size());
    for (const RouteFacts& m : messages) routes.push_back(route_message(m));
    if (std::find(routes.begin(), routes.end(), Route::table_row) != routes.end())
        std::fill(routes.begin(), routes.end(), Route::table_row);
    return routes;
}

}  // namespace once
