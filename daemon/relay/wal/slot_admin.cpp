#include "wal/slot_admin.hpp"

#include "pq_connect.hpp"
#include "pq_text.hpp"
#include "wal/start_replication_command.hpp"

#include <memory>

namespace once::relay::wal {

namespace {

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;
using Conn = std::unique_ptr<PGconn, decltype(&PQfinish)>;

Conn connect(const std::string& conninfo, Millis timeout) {
    Conn c(relay_connect(conninfo, "once-relay slot admin", timeout), PQfinish);
    if (!c || PQstatus(c.get()) != CONNECTION_OK)
        throw SlotAdminError("database connection failed: " + one_line(c ? PQerrorMessage(c.get()) : "out of memory"));
    return c;
}

Result query(PGconn* c, const char* sql, std::initializer_list<const char*> params, const std::string& what) {
    std::vector<const char*> v(params);
    Result r(PQexecParams(c, sql, static_cast<int>(v.size()), nullptr, v.data(), nullptr, nullptr, 0), PQclear);
    auto st = PQresultStatus(r.get());
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) throw SlotAdminError(what + ": " + one_line(PQerrorMessage(c)));
    return r;
}

void check_name(const std::string& name, const char* option) {
    if (!is_valid_replication_name(name))
        throw SlotAdminError(std::string("--") + option + " \"" + name +
                             "\": use 1-63 lower-case letters, digits and underscores");
}

bool slot_exists(PGconn* c, const std::string& slot) {
    auto r = query(c, "SELECT 1 FROM pg_catalog.pg_replication_slots WHERE slot_name = $1", {slot.c_str()},
                   "reading pg_replication_slots failed");
    return PQntuples(r.get()) > 0;
}

}  // namespace

std::string create_wal_slot(const std::string& conninfo, const std::string& slot, const std::string& publication,
                            Millis connect_timeout) {
    check_name(slot, "wal-slot");
    check_name(publication, "wal-publication");
    Conn c = connect(conninfo, connect_timeout);
    auto level = query(c.get(), "SELECT current_setting('wal_level')", {}, "reading wal_level failed");
    if (std::string(PQgetvalue(level.get(), 0, 0)) != "logical")
        throw SlotAdminError("wal_level is " + std::string(PQgetvalue(level.get(), 0, 0)) +
                             ": the WAL transport needs wal_level = logical (postgresql.conf, then a restart)");
    if (slot_exists(c.get(), slot))
        throw SlotAdminError("the replication slot " + slot + " exists already (drop it first with --drop-wal-slot, "
                             "or choose another --wal-slot)");
    std::string done;
    auto pub = query(c.get(), "SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = $1", {publication.c_str()},
                     "reading pg_publication failed");
    if (PQntuples(pub.get()) == 0) {
        // A checked name (lower-case letters, digits, underscores): no quoting needed.
        query(c.get(), ("CREATE PUBLICATION " + publication).c_str(), {}, "CREATE PUBLICATION " + publication + " failed");
        done = "created publication " + publication + " (no tables); ";
    } else {
        done = "publication " + publication + " exists; ";
    }
    bool failover = PQserverVersion(c.get()) >= 170000;
    const char* sql = failover ? "SELECT pg_catalog.pg_create_logical_replication_slot($1, 'pgoutput', false, false, true)"
                               : "SELECT pg_catalog.pg_create_logical_replication_slot($1, 'pgoutput')";
    query(c.get(), sql, {slot.c_str()}, "creating the replication slot " + slot + " failed");
    return done + "created logical replication slot " + slot + " (pgoutput" + (failover ? ", failover" : "") + ")";
}

std::string drop_wal_slot(const std::string& conninfo, const std::string& slot, Millis connect_timeout) {
    check_name(slot, "wal-slot");
    Conn c = connect(conninfo, connect_timeout);
    if (!slot_exists(c.get(), slot)) throw SlotAdminError("there is no replication slot " + slot);
    query(c.get(), "SELECT pg_catalog.pg_drop_replication_slot($1)", {slot.c_str()},
          "dropping the replication slot " + slot + " failed");
    return "dropped replication slot " + slot;
}

}  // namespace once::relay::wal
