// The loadable module: magic block and load-time initialisation.
#include "postgres_headers.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);
void _PG_init(void) {}
}
