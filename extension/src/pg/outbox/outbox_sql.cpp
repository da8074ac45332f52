// Shared outbox SQL fragments; why: outbox_sql.hpp.
#include "pg/outbox/outbox_sql.hpp"

#include "core/outbox_policy.hpp"

namespace once::pg::outbox_sql {

std::string dead_letter_assignments(const std::string& error) {
    return "dead_at = pg_catalog.now(), visible_at = 'infinity', pos = " ONCE_SQL_DEAD_POSITION
           ", relay = NULL, last_error = " + error;
}

std::string delivered_history_cte(const std::string& relay) {
    return R"(
 h AS (
  INSERT INTO once.outbox_delivered
         (id, topic, key, payload, headers, attempt, created_at, relay, expires_at)
  SELECT d.id, d.topic, d.key, d.payload, d.headers, d.attempt, d.created_at, )" + relay + R"(,
         pg_catalog.now() OPERATOR(pg_catalog.+) p.retention
    FROM d JOIN once.outbox_topic_policies p ON p.topic OPERATOR(pg_catalog.=) d.topic
   WHERE p.retention IS NOT NULL))";
}

}  // namespace once::pg::outbox_sql
