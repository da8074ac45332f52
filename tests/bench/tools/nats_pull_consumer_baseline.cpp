// Benchmark baseline for the inbound relay: a hand-written JetStream consumer as a team would
// write it well with libnats and libpq. A durable pull consumer (explicit acks), batches of
// BATCH messages; per batch one transaction: the dedupe insert (INSERT ... ON CONFLICT DO
// NOTHING into a table of seen ids) and the handler's write for the new ones, in one
// statement; after the commit, an ack per message. No per-key order, no retries, no poison
// handling: the fastest correct loop, not a complete consumer.
// Build: c++ -O2 -o nats_pull_consumer_baseline nats_pull_consumer_baseline.cpp -lnats -lpq
// Usage: nats_pull_consumer_baseline NATS_URL STREAM CONSUMER CONNINFO COUNT BATCH -> messages/s
#include <libpq-fe.h>
#include <nats/nats.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// A PostgreSQL array literal of the items, each quoted.
std::string array_literal(const std::string* items, int n) {
    std::string out = "{";
    for (int i = 0; i < n; ++i) {
        if (i) out += ',';
        out += '"';
        for (char c : items[i]) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        out += '"';
    }
    return out + "}";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s NATS_URL STREAM CONSUMER CONNINFO COUNT BATCH\n", argv[0]);
        return 2;
    }
    const char* stream = argv[2];
    const char* consumer = argv[3];
    long count = std::atol(argv[5]);
    int batch = std::atoi(argv[6]);
    PGconn* pg = PQconnectdb(argv[4]);
    if (PQstatus(pg) != CONNECTION_OK) { std::fprintf(stderr, "%s", PQerrorMessage(pg)); return 1; }
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    if (natsConnection_ConnectTo(&nc, argv[1]) != NATS_OK) { std::fprintf(stderr, "connect failed\n"); return 1; }
    if (natsConnection_JetStream(&js, nc, nullptr) != NATS_OK) return 1;
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = consumer;
    cc.AckPolicy = js_AckExplicit;
    cc.MaxAckPending = 20000;
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr;
    if (js_AddConsumer(&ci, js, stream, &cc, nullptr, &jerr) != NATS_OK) { std::fprintf(stderr, "add consumer failed\n"); return 1; }
    jsConsumerInfo_Destroy(ci);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = consumer;
    natsSubscription* sub = nullptr;
    if (js_PullSubscribe(&sub, js, ">", consumer, nullptr, &so, &jerr) != NATS_OK) { std::fprintf(stderr, "subscribe failed\n"); return 1; }
    const char* sql =
        "WITH batch AS (SELECT * FROM unnest($1::text[], $2::jsonb[]) AS b(id, payload)),"
        " fresh AS (INSERT INTO seen (id) SELECT id FROM batch ON CONFLICT DO NOTHING RETURNING id)"
        " INSERT INTO effects_base (id, n) SELECT b.id, (b.payload->>'n')::int FROM batch b JOIN fresh USING (id)";
    auto t0 = std::chrono::steady_clock::now();
    long done = 0;
    std::string* ids = new std::string[batch];
    std::string* payloads = new std::string[batch];
    while (done < count) {
        natsMsgList list{};
        natsStatus s = natsSubscription_Fetch(&list, sub, batch, 5000, &jerr);
        if (s == NATS_TIMEOUT) continue;
        if (s != NATS_OK) { std::fprintf(stderr, "fetch failed: %s\n", natsStatus_GetText(s)); return 1; }
        for (int i = 0; i < list.Count; ++i) {
            const char* id = nullptr;
            natsMsgHeader_Get(list.Msgs[i], "Nats-Msg-Id", &id);
            ids[i] = id ? id : "";
            payloads[i].assign(natsMsg_GetData(list.Msgs[i]), natsMsg_GetDataLength(list.Msgs[i]));
        }
        std::string a = array_literal(ids, list.Count), b = array_literal(payloads, list.Count);
        const char* params[2] = {a.c_str(), b.c_str()};
        PGresult* r = PQexecParams(pg, sql, 2, nullptr, params, nullptr, nullptr, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) { std::fprintf(stderr, "%s", PQresultErrorMessage(r)); return 1; }
        PQclear(r);
        for (int i = 0; i < list.Count; ++i) natsMsg_Ack(list.Msgs[i], nullptr);
        done += list.Count;
        natsMsgList_Destroy(&list);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.0f\n", done / secs);
    natsConnection_Flush(nc);
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    PQfinish(pg);
}
