// Benchmark baseline: the fastest hand-written JetStream publisher we can write with libnats —
// async publish with Nats-Msg-Id, a bounded window of outstanding PubAcks, wait for all.
// Build: c++ -O2 -o nats_pub_baseline nats_pub_baseline.cpp -lnats
// Usage: nats_pub_baseline URL STREAM SUBJECT COUNT WINDOW [ID_PREFIX]  -> prints messages/s
// (ID_PREFIX, default "baseline-": give each run its own, or JetStream's duplicate window
// acks a repeated run's messages as duplicates without storing them)
#include <nats/nats.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    if (argc != 6 && argc != 7) {
        std::fprintf(stderr, "usage: %s URL STREAM SUBJECT COUNT WINDOW [ID_PREFIX]\n", argv[0]);
        return 2;
    }
    const std::string id_prefix = argc == 7 ? argv[6] : "baseline-";
    const char* url = argv[1];
    const char* subject = argv[3];
    long count = std::atol(argv[4]);
    long window = std::atol(argv[5]);
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    if (natsConnection_ConnectTo(&nc, url) != NATS_OK) { std::fprintf(stderr, "connect failed\n"); return 1; }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = window;
    if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK) return 1;
    std::string payload = R"({"n": 12345, "k": "k123", "item": "latte"})";
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < count; ++i) {
        natsMsg* m = nullptr;
        natsMsg_Create(&m, subject, nullptr, payload.data(), static_cast<int>(payload.size()));
        std::string id = id_prefix + std::to_string(i);
        natsMsgHeader_Set(m, "Nats-Msg-Id", id.c_str());
        if (js_PublishMsgAsync(js, &m, nullptr) != NATS_OK) { std::fprintf(stderr, "publish failed\n"); return 1; }
        natsMsg_Destroy(m);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    if (js_PublishAsyncComplete(js, &po) != NATS_OK) { std::fprintf(stderr, "not all acked\n"); return 1; }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.0f\n", count / secs);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}
