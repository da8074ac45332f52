// How the daemons open every libpq connection: once-relay's source database (source_db), each
// locked batch's transaction (locked_tx) and a PostgreSQL sink's target (sinks/postgres_sink);
// once-console's connection of each request thread (db.cpp).
#pragma once

#include "duration.hpp"

#include <libpq-fe.h>

#include <string>

namespace once::relay {

// PQconnectdbParams with the daemons' defaults: connect_timeout (libpq counts whole seconds: at
// least 1), application_name (shows the daemon in pg_stat_activity), and TCP keepalives, so a
// peer that vanished without closing the connection (a powered-off host, a dropped route) is
// noticed in about 25 s instead of the kernel's two hours. Anything `conninfo` sets wins.
// Returns the connection in whatever state libpq left it (check PQstatus).
PGconn* relay_connect(const std::string& conninfo, const std::string& application_name, Millis connect_timeout);

// The same, as a logical replication connection (replication=database) for the WAL
// transport's stream (wal/replication_stream). `replication` is set after conninfo, so a
// conninfo that asks for a physical or no replication connection cannot override it.
PGconn* relay_connect_replication(const std::string& conninfo, const std::string& application_name,
                                  Millis connect_timeout);

}  // namespace once::relay
