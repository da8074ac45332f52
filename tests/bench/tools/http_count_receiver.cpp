// Benchmark HTTP receiver: answers every POST with 200 and counts it; GET /count returns the
// count. libmicrohttpd with a thread pool, so the receiver is not what limits the HTTP sink.
// Build: c++ -O2 -o http_count_receiver http_count_receiver.cpp -lmicrohttpd
// Usage: http_count_receiver PORT_FILE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

static std::atomic<unsigned long> g_count{0};   // test tool: one process, one counter

static MHD_Result handle(void*, MHD_Connection* c, const char* url, const char* method, const char*,
                         const char*, size_t* size, void** state) {
    if (std::strcmp(method, "POST") == 0) {
        if (*state == nullptr) { *state = c; return MHD_YES; }
        if (*size) { *size = 0; return MHD_YES; }
        g_count++;
        static const char ok[] = "ok";
        MHD_Response* r = MHD_create_response_from_buffer(2, (void*)ok, MHD_RESPMEM_PERSISTENT);
        MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ret;
    }
    std::string body = std::to_string(g_count.load()) + "\n";
    MHD_Response* r = MHD_create_response_from_buffer(body.size(), (void*)body.data(), MHD_RESPMEM_MUST_COPY);
    MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

int main(int argc, char** argv) {
    if (argc != 2) { std::fprintf(stderr, "usage: %s PORT_FILE\n", argv[0]); return 2; }
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    MHD_Daemon* d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, nullptr, nullptr, &handle, nullptr,
                                     MHD_OPTION_SOCK_ADDR, &sin, MHD_OPTION_THREAD_POOL_SIZE, 2u,
                                     MHD_OPTION_CONNECTION_LIMIT, 1000u, MHD_OPTION_END);
    if (!d) { std::perror("MHD_start_daemon"); return 1; }
    const MHD_DaemonInfo* info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    std::string tmp = std::string(argv[1]) + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    std::fprintf(f, "%u", info->port);
    std::fclose(f);
    std::rename(tmp.c_str(), argv[1]);
    pause();
    MHD_stop_daemon(d);
}
