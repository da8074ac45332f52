#include "pg/outbox/publish_grants.hpp"

#include "core/error.hpp"
#include "core/topic.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/table_cache.hpp"
#include "pg/common/text_args.hpp"

extern "C" {
#include "utils/acl.h"
}

#include <string>
#include <vector>

namespace once::pg {
namespace {

struct PublishGrant {
    Oid grantee;
    std::string pattern;
};

SavedPlan grants_plan("SELECT g.grantee, g.topic_pattern FROM once.publish_grants g", {});

SavedPlan insert_plan(
    "INSERT INTO once.publish_grants (grantee, topic_pattern, granted_by) VALUES ($1, $2, $3)"
    " ON CONFLICT DO NOTHING",
    {OIDOID, TEXTOID, OIDOID});

// SPI must be connected.
const std::vector<PublishGrant>& publish_grants() {
    static CachedTable table("publish_grants");
    static std::vector<PublishGrant> cached;
    return table.rows(cached, [] {
        std::vector<PublishGrant> loaded;
        AsExtensionOwner owner;
        uint64 n = grants_plan.execute(nullptr, nullptr);
        for (uint64 row = 0; row < n; ++row) {
            Datum grantee, pattern;
            spi_value(row, 1, &grantee);
            spi_value(row, 2, &pattern);
            loaded.push_back({DatumGetObjectId(grantee), std::string(text_view(DatumGetTextPP(pattern)))});
        }
        return loaded;
    });
}

}  // namespace

void check_may_publish(std::string_view topic) {
    const std::vector<PublishGrant>& grants = publish_grants();
    if (grants.empty()) return;  // no grant at all: topics are open, as in 0.2
    const Oid user = GetUserId();
    if (pg_call([&] { return superuser_arg(user); })) return;  // like every privilege check
    for (const PublishGrant& g : grants)
        if (topic_matches(g.pattern, topic) &&
            (g.grantee == user || pg_call([&] { return has_privs_of_role(user, g.grantee); })))
            return;
    const std::string role = pg_call([&] { return std::string(GetUserNameFromId(user, false)); });
    throw Error(ErrorCode::publish_denied,
                "role \"" + role + "\" may not publish on topic \"" + std::string(topic) + "\"",
                "Publishing is granted per topic pattern (once.publish_grants), and no grant of this role "
                "or of a role whose privileges it has matches the topic.",
                "An admin grants it with once.grant_publish('" + role + "', '<topic pattern>').");
}

}  // namespace once::pg

// once.grant_publish(role, topic_pattern): true when the grant is new.
ONCE_SQL_FUNCTION(once_grant_publish) {
    using namespace once;
    using namespace once::pg;
    if (PG_ARGISNULL(0)) throw Error(ErrorCode::invalid_argument, "role must not be NULL");
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::invalid_topic_pattern, "topic_pattern must not be NULL", {},
                    "Pass a pattern such as 'orders.*' or 'billing.>'.");
    text* pattern = PG_GETARG_TEXT_PP(1);
    validate_topic_pattern(text_view(pattern));
    Datum values[] = {PG_GETARG_DATUM(0), PointerGetDatum(pattern), ObjectIdGetDatum(GetUserId())};
    SpiSession spi;
    AsExtensionOwner owner;
    PG_RETURN_BOOL(insert_plan.execute(values, nullptr) == 1);
}

// Statement trigger on once.publish_grants: every backend drops its cached grants.
ONCE_SQL_FUNCTION(once_publish_grants_changed) {
    return once::pg::invalidate_cached_table(fcinfo, "once._publish_grants_changed");
}
