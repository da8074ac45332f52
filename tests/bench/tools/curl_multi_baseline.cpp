// Benchmark baseline: the fastest hand-written webhook sender we can write with libcurl's
// multi interface — COUNT POSTs of a small JSON body with an Idempotency-Key, at most
// CONNECTIONS at once over kept-alive connections, the same options as the relay's HTTP sink.
// Build: c++ -O2 -o curl_multi_baseline curl_multi_baseline.cpp -lcurl
// Usage: curl_multi_baseline URL COUNT CONNECTIONS  -> prints requests/s (2xx only counted)
#include <curl/curl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static size_t discard(char*, size_t size, size_t nmemb, void*) { return size * nmemb; }

int main(int argc, char** argv) {
    if (argc != 4) { std::fprintf(stderr, "usage: %s URL COUNT CONNECTIONS\n", argv[0]); return 2; }
    const char* url = argv[1];
    long count = std::atol(argv[2]);
    long conns = std::atol(argv[3]);
    const std::string body = R"({"n": 12345, "item": "latte"})";
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM* multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, conns);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, conns);
    std::vector<CURL*> idle;
    std::vector<curl_slist*> headers(static_cast<size_t>(conns), nullptr);
    long started = 0, ok = 0;
    int running = 0;
    auto start_one = [&]() {
        CURL* e;
        if (!idle.empty()) { e = idle.back(); idle.pop_back(); }
        else e = curl_easy_init();
        curl_slist* h = nullptr;
        h = curl_slist_append(h, "Content-Type: application/json");
        h = curl_slist_append(h, ("Idempotency-Key: baseline-" + std::to_string(started)).c_str());
        h = curl_slist_append(h, "Expect:");
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(e, CURLOPT_PRIVATE, h);
        curl_multi_add_handle(multi, e);
        ++started;
    };
    auto t0 = std::chrono::steady_clock::now();
    while (started < count && started < conns) start_one();
    do {
        curl_multi_perform(multi, &running);
        int left = 0;
        while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
            if (m->msg != CURLMSG_DONE) continue;
            long status = 0;
            curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            if (m->data.result == CURLE_OK && status / 100 == 2) ++ok;
            char* h = nullptr;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &h);
            curl_slist_free_all(reinterpret_cast<curl_slist*>(h));
            curl_multi_remove_handle(multi, m->easy_handle);
            idle.push_back(m->easy_handle);
            if (started < count) start_one();
        }
        if (started < count || running) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    } while (running || started < count);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (ok != count) std::fprintf(stderr, "%ld of %ld answered 2xx\n", ok, count);
    std::printf("%.0f\n", ok / secs);
    for (CURL* e : idle) curl_easy_cleanup(e);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
}
