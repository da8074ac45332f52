#include "inbound/inbox_uri.hpp"

#include "percent_encoding.hpp"
#include "uri.hpp"

#include <libpq-fe.h>

#include <stdexcept>

namespace once::relay {

std::string inbox_database_uri(const std::string& conninfo) {
    if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0) return conninfo;
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (!opts) {
        std::string e = err ? err : "invalid";
        PQfreemem(err);
        while (!e.empty() && e.back() == '\n') e.pop_back();
        throw std::invalid_argument("--db: " + e);
    }
    std::string out = "postgresql://";
    char sep = '?';
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        if (!o->val) continue;
        out += sep;
        out += percent_encode(o->keyword) + "=" + percent_encode(o->val);
        sep = '&';
    }
    PQconninfoFree(opts);
    return out;
}

}  // namespace once::relay
