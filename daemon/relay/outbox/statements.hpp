// Every statement the relay prepares on the outbox's database, in one table: the SQL, the
// name it is prepared under, and its parameter count. The LISTEN connection (source_db) and
// the pipelined claim connections (locked_tx) each prepare the ones they use.
#pragma once

#include <string>

namespace once::relay {

enum class OutboxStatement { claim_leased, claim_locked, ack, nack, dead, extend, purge, saga_tick };

struct PreparedStatement {
    const char* name;   // the prepared statement's name (what PQsendQueryPrepared is given)
    std::string sql;
    int params;
};

const PreparedStatement& outbox_statement(OutboxStatement which);

}  // namespace once::relay
