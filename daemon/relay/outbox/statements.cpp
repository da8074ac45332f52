#include "outbox/statements.hpp"

#include "outbox/claimed_rows.hpp"

namespace once::relay {

const PreparedStatement& outbox_statement(OutboxStatement which) {
    static const PreparedStatement claim_leased{
        "once_claim", std::string("SELECT ") + kClaimedColumns + " FROM once.claim($1, $2::integer, $3::interval, $4::text[])", 4};
    static const PreparedStatement claim_locked{
        "once_claim_locked", std::string("SELECT ") + kClaimedColumns + " FROM once.claim_locked($1, $2::integer, $3::text[])", 3};
    static const PreparedStatement ack{"once_ack", "SELECT once.ack($1, $2::uuid[])", 2};
    static const PreparedStatement nack{"once_nack", "SELECT once.nack($1, $2::uuid, $3, $4::interval)", 4};
    static const PreparedStatement dead{"once_dead", "SELECT once.dead($1, $2::uuid, $3)", 3};
    static const PreparedStatement extend{"once_extend", "SELECT once.extend($1, $2::uuid[], $3::interval)", 3};
    static const PreparedStatement purge{"once_purge", "SELECT once.purge()", 0};
    static const PreparedStatement saga_tick{"once_saga_tick", "SELECT once.saga_tick()", 0};
    switch (which) {
        case OutboxStatement::claim_leased: return claim_leased;
        case OutboxStatement::claim_locked: return claim_locked;
        case OutboxStatement::ack: return ack;
        case OutboxStatement::nack: return nack;
        case OutboxStatement::dead: return dead;
        case OutboxStatement::extend: return extend;
        case OutboxStatement::purge: return purge;
        case OutboxStatement::saga_tick: return saga_tick;
    }
    return ack;   // (unreachable: every enumerator is handled above)
}

}  // namespace once::relay
