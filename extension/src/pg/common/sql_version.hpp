// The library serves exactly one version of pg_once's SQL objects: the one it was built with.
#pragma once

namespace once::pg {

// Throws ON001 unless the database's pg_once is this library's version. After a package
// upgrade the new library is loaded while the database still has the old SQL objects until
// ALTER EXTENSION pg_once UPDATE; rather than run internal statements written for other
// tables and functions, every entry point refuses with a message that says what to run.
// Cheap when nothing changed: the answer is cached per backend and forgotten when the
// catalogs of functions or relations change (an update always changes one of them).
void require_current_sql_version();

}  // namespace once::pg
