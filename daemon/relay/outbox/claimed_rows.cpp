#include "outbox/claimed_rows.hpp"

#include <libpq-fe.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace once::relay {

const char* const kClaimedColumns =
    "id::text AS id, topic, key, payload::text AS payload, headers::text AS headers, attempt, "
    "created_at::text AS created_at, content_type";

namespace {

int column(const PGresult* rows, const char* name) {
    int c = PQfnumber(rows, name);
    if (c < 0) throw std::runtime_error(std::string("a claim's answer has no column \"") + name + "\"");
    return c;
}

}  // namespace

std::vector<Message> decode_claimed_rows(const PGresult* rows) {
    const int id = column(rows, "id"), topic = column(rows, "topic"), key = column(rows, "key"),
              payload = column(rows, "payload"), headers = column(rows, "headers"), attempt = column(rows, "attempt"),
              created_at = column(rows, "created_at");
    // (optional: an answer without it, as before 0.3, labels every payload application/json)
    const int content_type = PQfnumber(rows, "content_type");
    int n = PQntuples(rows);
    std::vector<Message> out;
    out.reserve(n);
    for (int i = 0; i < n; ++i) {
        Message m;
        m.id = PQgetvalue(rows, i, id);
        m.topic = PQgetvalue(rows, i, topic);
        m.has_key = !PQgetisnull(rows, i, key);
        if (m.has_key) m.key = PQgetvalue(rows, i, key);
        m.payload = PQgetvalue(rows, i, payload);
        if (!PQgetisnull(rows, i, headers)) m.headers = PQgetvalue(rows, i, headers);
        m.attempt = std::atoi(PQgetvalue(rows, i, attempt));
        m.created_at = PQgetvalue(rows, i, created_at);
        if (content_type >= 0 && !PQgetisnull(rows, i, content_type)) m.content_type = PQgetvalue(rows, i, content_type);
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace once::relay
