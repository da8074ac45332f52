/* Commit -> wake-up latency of the outbox notifier (used by tests/bench/outbox.sh).
 * One connection LISTENs on once_outbox like a relay; another sends one message per
 * transaction (autocommit). For each send: time from the statement's start and from its
 * return (the commit is done) until the listener has the notification.
 * Usage: outbox_wakeup CONNINFO ITERATIONS */
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

static void drain(PGconn* c) {
    PGnotify* n;
    PQconsumeInput(c);
    while ((n = PQnotifies(c)) != NULL) PQfreemem(n);
}

int main(int argc, char** argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s CONNINFO ITERATIONS\n", argv[0]); return 2; }
    PGconn* listener = PQconnectdb(argv[1]);
    PGconn* producer = PQconnectdb(argv[1]);
    if (PQstatus(listener) != CONNECTION_OK || PQstatus(producer) != CONNECTION_OK) {
        fprintf(stderr, "connect: %s", PQerrorMessage(listener));
        return 1;
    }
    PQclear(PQexec(listener, "LISTEN once_outbox"));
    int n = atoi(argv[2]), lost = 0, got = 0;
    double* from_commit = calloc(n, sizeof(double));
    double* from_start = calloc(n, sizeof(double));
    for (int i = 0; i < n; ++i) {
        usleep(20000);  /* let the notifier go idle-waiting, like a quiet system */
        drain(listener);
        double t0 = now_ms();
        PGresult* r = PQexec(producer, "SELECT once.send('bench.wake', '{}')");
        if (PQresultStatus(r) != PGRES_TUPLES_OK) { fprintf(stderr, "send: %s", PQerrorMessage(producer)); return 1; }
        PQclear(r);
        double t1 = now_ms();
        int woke = 0;
        while (!woke) {
            PGnotify* note;
            PQconsumeInput(listener);
            if ((note = PQnotifies(listener)) != NULL) { PQfreemem(note); woke = 1; break; }
            struct pollfd pfd = {PQsocket(listener), POLLIN, 0};
            if (poll(&pfd, 1, 2000) == 0) break;
        }
        double t2 = now_ms();
        if (!woke) { ++lost; continue; }
        from_commit[got] = t2 - t1;
        from_start[got] = t2 - t0;
        ++got;
    }
    qsort(from_commit, got, sizeof(double), cmp);
    qsort(from_start, got, sizeof(double), cmp);
    if (got == 0) { printf("no wake-ups received (%d lost)\n", lost); return 1; }
    printf("wakeups=%d lost=%d commit_to_wakeup_ms p50=%.3f p90=%.3f p99=%.3f max=%.3f "
           "send_start_to_wakeup_ms p50=%.3f p99=%.3f\n",
           got, lost, from_commit[got / 2], from_commit[got * 9 / 10], from_commit[got * 99 / 100],
           from_commit[got - 1], from_start[got / 2], from_start[got * 99 / 100]);
    PQfinish(listener);
    PQfinish(producer);
    return 0;
}
