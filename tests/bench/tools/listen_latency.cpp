// Benchmark baseline: commit -> LISTEN notification latency. LISTENs on a channel whose
// payloads are epoch seconds taken in the sending transaction; prints count, p50, p99 and
// p99.9 in ms after
// the given number of seconds.
// Build: c++ -O2 -o listen_latency listen_latency.cpp -lpq -I$(pg_config --includedir)
// Usage: listen_latency CONNINFO CHANNEL SECONDS
#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/time.h>
#include <vector>

static double now_s() {
    timeval tv;
    gettimeofday(&tv, nullptr);
    return tv.tv_sec + tv.tv_usec / 1e6;
}

int main(int argc, char** argv) {
    if (argc != 4) { std::fprintf(stderr, "usage: %s CONNINFO CHANNEL SECONDS\n", argv[0]); return 2; }
    PGconn* c = PQconnectdb(argv[1]);
    if (PQstatus(c) != CONNECTION_OK) { std::fprintf(stderr, "%s", PQerrorMessage(c)); return 1; }
    PQclear(PQexec(c, (std::string("LISTEN ") + argv[2]).c_str()));
    std::printf("listening\n");
    std::fflush(stdout);
    std::vector<double> lat;
    double end = now_s() + std::atof(argv[3]);
    while (now_s() < end) {
        pollfd p{PQsocket(c), POLLIN, 0};
        poll(&p, 1, 100);
        PQconsumeInput(c);
        while (PGnotify* n = PQnotifies(c)) {
            lat.push_back((now_s() - std::atof(n->extra)) * 1000);
            PQfreemem(n);
        }
    }
    if (lat.empty()) { std::printf("0 0 0 0\n"); return 0; }
    std::sort(lat.begin(), lat.end());
    std::printf("%zu %.2f %.2f %.2f\n", lat.size(), lat[lat.size() / 2], lat[lat.size() * 99 / 100],
                lat[lat.size() * 999 / 1000]);
}
