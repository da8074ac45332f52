#include "sinks/nats_sink.hpp"

#include "core/content_type.hpp"
#include "sinks/cloudevents.hpp"
#include "sinks/http_status.hpp"
#include "sinks/jetstream_errors.hpp"
#include "sinks/producer_headers.hpp"
#include "uri.hpp"

#include <nats/nats.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <memory>

namespace once::relay {

static_assert(kJetStreamMessageTooLarge == JSStreamMessageExceedsMaximumErr, "libnats names the code");

struct NatsAckQueue {
    struct Result {
        std::string id;
        bool ok;
        std::string error;
        int err_code = 0;         // JetStream's API error code of a refusal (0: none given)
        std::string stream;       // of the PubAck: where JetStream says it stored the message
        uint64_t sequence = 0;
        bool duplicate = false;   // JetStream had this Nats-Msg-Id already (its dedupe window)
    };
    std::mutex mu;
    std::vector<Result> results;
    // The relay's thread only: the results it took, swapped with `results` so that both keep
    // their capacity (a vector of a thousand results allocated anew per batch kept the
    // allocator consolidating).
    std::vector<Result> taken;
    int efd = -1;
    NatsAckQueue() { efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
    ~NatsAckQueue() { if (efd >= 0) ::close(efd); }
    // Only the result that makes the queue non-empty wakes the relay's loop: it takes all of
    // them at once (process), so a write per PubAck was a syscall, and a wake-up of the loop,
    // per message for nothing.
    void push(Result r) {
        bool was_empty;
        {
            std::lock_guard<std::mutex> lock(mu);
            was_empty = results.empty();
            results.push_back(std::move(r));
        }
        if (!was_empty) return;
        uint64_t one = 1;
        (void)!::write(efd, &one, sizeof one);
    }
};

struct NatsSink::Impl {
    natsOptions* opts = nullptr;
    natsConnection* conn = nullptr;
    jsCtx* js = nullptr;
};

namespace {

void pub_ack_cb(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
    // With an AckHandler set, libnats gives the published message back here and leaves
    // destroying it to us (nats.h, jsPubAckHandler; it frees the message itself only without a
    // handler). Not destroying it leaks every publish, retries and PubAck timeouts included:
    // ~0.8 KiB plus the payload per message (tests/integration/relay_reconnect_memory.sh).
    // The guard covers every return; the id is copied before it runs.
    std::unique_ptr<natsMsg, void (*)(natsMsg*)> owned(msg, natsMsg_Destroy);
    auto* q = static_cast<NatsAckQueue*>(closure);
    const char* id = nullptr;
    if (msg == nullptr || natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) != NATS_OK || id == nullptr) return;
    NatsAckQueue::Result r;
    r.id = id;
    if (pae != nullptr) {
        r.ok = false;
        r.error = std::string("JetStream publish failed: ") + natsStatus_GetText(pae->Err);
        if (pae->ErrText && *pae->ErrText) r.error += std::string(" (") + pae->ErrText + ")";
        if (pae->ErrCode) r.error += " [err_code " + std::to_string(static_cast<int>(pae->ErrCode)) + "]";
        r.err_code = static_cast<int>(pae->ErrCode);
    } else {
        r.ok = pa != nullptr;
        if (!r.ok) r.error = "JetStream publish: no PubAck";
        else {
            if (pa->Stream) r.stream = pa->Stream;
            r.sequence = pa->Sequence;
            r.duplicate = pa->Duplicate;
        }
    }
    q->push(std::move(r));
}

std::string last_error(natsStatus s) {
    natsStatus ls = s;
    const char* text = nats_GetLastError(&ls);
    std::string out = natsStatus_GetText(s);
    if (text && *text && std::strcmp(text, out.c_str()) != 0) out += std::string(": ") + text;
    return out;
}

}  // namespace

NatsSink::NatsSink(const Uri& uri, Millis timeout, Millis connect_timeout, size_t window)
    : timeout_(timeout), connect_timeout_(connect_timeout), window_(window),
      impl_(std::make_unique<Impl>()), queue_(std::make_shared<NatsAckQueue>()) {
    description_ = uri.redacted();
    if (uri.hosts.empty()) throw SinkError("nats sink: the URI names no server (nats://host:4222?stream=NAME)");
    std::string host;
    std::string hosts = uri.hosts + ",";
    for (size_t pos = 0, comma; (comma = hosts.find(',', pos)) != std::string::npos; pos = comma + 1) {
        std::string h = hosts.substr(pos, comma - pos);
        if (h.empty()) continue;
        if (h.find(':') == std::string::npos) h += ":4222";
        servers_.push_back("nats://" + h);
    }
    // nats://TOKEN@host is token authentication, as in the NATS clients' own URLs;
    // nats://user:password@host is user and password.
    if (uri.has_password) {
        user_ = uri.user;
        password_ = uri.password;
    } else {
        token_ = uri.user;
    }
    stream_ = uri.param("stream");
    subject_prefix_ = uri.param("subject_prefix");
    std::string cs = uri.param("create_stream", "0");
    create_stream_ = (cs == "1" || cs == "true" || cs == "on" || cs == "yes");
    for (const auto& [k, v] : uri.query)
        if (k != "stream" && k != "subject_prefix" && k != "create_stream")
            throw SinkError("nats sink: unknown URI parameter \"" + k + "\" (known: stream, subject_prefix, create_stream)");
    if (stream_.empty())
        throw SinkError("nats sink: the URI needs ?stream=NAME (the JetStream stream that must store the messages)");
    if (!subject_prefix_.empty() && subject_prefix_.back() != '.')
        throw SinkError("nats sink: subject_prefix \"" + subject_prefix_ + "\" must end with '.' (e.g. subject_prefix=once.)");
    if (!queue_ || queue_->efd < 0) throw SinkError("nats sink: cannot create an eventfd");
}

NatsSink::~NatsSink() { close(); }

void NatsSink::close() {
    if (impl_->js) { jsCtx_Destroy(impl_->js); impl_->js = nullptr; }
    if (impl_->conn) { natsConnection_Destroy(impl_->conn); impl_->conn = nullptr; }
    if (impl_->opts) { natsOptions_Destroy(impl_->opts); impl_->opts = nullptr; }
}

void NatsSink::open() {
    close();
    natsStatus s = natsOptions_Create(&impl_->opts);
    std::vector<const char*> servers;
    for (auto& srv : servers_) servers.push_back(srv.c_str());
    if (s == NATS_OK) s = natsOptions_SetServers(impl_->opts, servers.data(), static_cast<int>(servers.size()));
    if (s == NATS_OK && !user_.empty()) s = natsOptions_SetUserInfo(impl_->opts, user_.c_str(), password_.c_str());
    if (s == NATS_OK && !token_.empty()) s = natsOptions_SetToken(impl_->opts, token_.c_str());
    if (s == NATS_OK) s = natsOptions_SetTimeout(impl_->opts, connect_timeout_.count());
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(impl_->opts, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(impl_->opts, 250);
    if (s == NATS_OK) s = natsOptions_SetReconnectBufSize(impl_->opts, 64 * 1024 * 1024);
    if (s == NATS_OK) s = natsOptions_SetName(impl_->opts, "once-relay");
    if (s != NATS_OK) throw SinkError("nats sink: bad options: " + last_error(s));
    s = natsConnection_Connect(&impl_->conn, impl_->opts);
    if (s != NATS_OK) {
        close();
        throw SinkError("cannot reach the NATS server(s) " + description_ + ": " + last_error(s));
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = timeout_.count();
    jo.PublishAsync.MaxPending = static_cast<int64_t>(window_) + 16;
    jo.PublishAsync.AckHandler = pub_ack_cb;
    jo.PublishAsync.AckHandlerClosure = queue_.get();
    pending_.reserve(window_ + 16);
    s = natsConnection_JetStream(&impl_->js, impl_->conn, &jo);
    if (s != NATS_OK) { close(); throw SinkError("nats sink: JetStream context: " + last_error(s)); }

    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    s = js_GetStreamInfo(&si, impl_->js, stream_.c_str(), nullptr, &jerr);
    if (s == NATS_OK) {
        spdlog::info("nats sink: stream {} found (duplicate window {}s)", stream_,
                     si->Config ? si->Config->Duplicates / 1000000000 : 0);
        jsStreamInfo_Destroy(si);
        return;
    }
    if (s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
        std::string e = last_error(s);
        close();
        throw SinkError("nats sink: cannot look up stream " + stream_ + ": " + e +
                        " (is JetStream enabled? nats-server -js)");
    }
    if (!create_stream_) {
        close();
        throw SinkError("nats sink: JetStream stream \"" + stream_ + "\" does not exist; create it (nats stream add " +
                        stream_ + " --subjects '" + (subject_prefix_.empty() ? std::string("<topics>") : subject_prefix_ + ">") +
                        "') or add create_stream=1 to the sink URI");
    }
    if (subject_prefix_.empty()) {
        close();
        throw SinkError("nats sink: create_stream=1 needs a subject_prefix (e.g. subject_prefix=once.) so the new stream "
                        "captures prefix.> instead of every subject");
    }
    std::string subject = subject_prefix_ + ">";
    if (check_only_) {
        check_note_ = "JetStream stream \"" + stream_ + "\" does not exist; once-relay will create it at start "
                      "(create_stream=1) for subjects " + subject;
        close();
        return;
    }
    const char* subjects[] = {subject.c_str()};
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = stream_.c_str();
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Duplicates = int64_t(2) * 60 * 1000000000;   // 2 minutes, JetStream's default
    s = js_AddStream(&si, impl_->js, &cfg, nullptr, &jerr);
    if (s != NATS_OK) {
        std::string e = last_error(s);
        close();
        throw SinkError("nats sink: cannot create stream " + stream_ + ": " + e);
    }
    jsStreamInfo_Destroy(si);
    spdlog::info("nats sink: created stream {} for subjects {}", stream_, subject);
}

std::string NatsSink::check() {
    check_only_ = true;
    check_note_.clear();
    open();
    check_only_ = false;
    return check_note_;
}

bool NatsSink::ready() {
    return impl_->conn && natsConnection_Status(impl_->conn) == NATS_CONN_STATUS_CONNECTED;
}

void NatsSink::submit(uint64_t token, const Message& m) {
    auto fail = [&](const std::string& why) {
        Outcome o;
        o.token = token;
        o.verdict = Verdict::retry;
        o.error = why;
        immediate_.push_back(std::move(o));
    };
    if (!impl_->js) { fail("nats sink: not connected"); return; }
    // Per message, the relay's own allocations were a large share of its CPU: the subject's
    // buffer is reused, and a JSON payload (the usual case) goes as it is, without a copy.
    subject_.assign(subject_prefix_).append(m.topic);
    natsMsg* msg = nullptr;
    std::string converted;
    const bool as_is = m.content_type.empty() || once::is_json_content_type(m.content_type);
    if (!as_is) converted = once::delivered_body(m.payload, m.content_type);
    const std::string& body = as_is ? m.payload : converted;
    natsStatus s = natsMsg_Create(&msg, subject_.c_str(), nullptr, body.data(), static_cast<int>(body.size()));
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", m.id.c_str());
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Once-Topic", m.topic.c_str());
    if (s == NATS_OK && m.has_key) s = natsMsgHeader_Set(msg, "Once-Key", m.key.c_str());
    // (with CloudEvents, ce-datacontenttype says it: a Content-Type header would mean structured mode)
    if (s == NATS_OK && !m.content_type.empty() && ce_source_.empty())
        s = natsMsgHeader_Set(msg, "Content-Type", m.content_type.c_str());
    if (s == NATS_OK && !ce_source_.empty())
        for (const auto& [k, v] : cloudevents_headers(m, ce_source_, CloudEventsBinding::nats))
            if (s == NATS_OK) s = natsMsgHeader_Set(msg, k.c_str(), v.c_str());
    // The shared rule refuses every Nats-* name (Nats-Msg-Id would replace the dedupe id,
    // Nats-Expected-* fail the publish, Nats-Rollup purge the subject) and the relay's Once-*.
    if (s == NATS_OK && !m.headers.empty())
        for (const auto& [k, v] : producer_headers(m)) natsMsgHeader_Add(msg, k.c_str(), v.c_str());
    if (s != NATS_OK) { natsMsg_Destroy(msg); fail("nats sink: cannot build message: " + last_error(s)); return; }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = timeout_.count();
    po.ExpectStream = stream_.c_str();
    pending_[m.id] = Pending{token, std::chrono::steady_clock::now()};
    s = js_PublishMsgAsync(impl_->js, &msg, &po);
    if (s != NATS_OK) {
        pending_.erase(m.id);
        natsMsg_Destroy(msg);
        fail("JetStream publish failed: " + last_error(s));
    }
}

void NatsSink::poll_fds(std::vector<pollfd>& fds) { fds.push_back(pollfd{queue_->efd, POLLIN, 0}); }

int NatsSink::poll_timeout_ms() { return immediate_.empty() ? (pending_.empty() ? -1 : 1000) : 0; }

void NatsSink::process(const pollfd*, size_t, std::vector<Outcome>& out) {
    uint64_t n;
    while (::read(queue_->efd, &n, sizeof n) > 0) {}
    std::vector<NatsAckQueue::Result>& results = queue_->taken;
    {
        std::lock_guard<std::mutex> lock(queue_->mu);
        results.swap(queue_->results);
    }
    for (auto& r : results) {
        auto it = pending_.find(r.id);
        if (it == pending_.end()) continue;   // abandoned earlier
        Outcome o;
        o.token = it->second.token;
        o.verdict = r.ok ? Verdict::delivered : jetstream_publish_error_verdict(r.err_code);
        // Which stream sequence JetStream named for each message: the one record that ties a
        // deleted outbox row to a place in the stream when a message goes missing there.
        if (r.ok)
            spdlog::debug("nats sink: PubAck for {}: stream {} seq {}{}", r.id, r.stream, r.sequence,
                          r.duplicate ? " (duplicate: stored earlier)" : "");
        o.error = std::move(r.error);
        pending_.erase(it);
        out.push_back(std::move(o));
    }
    results.clear();
    for (auto& o : immediate_) out.push_back(std::move(o));
    immediate_.clear();
}

void NatsSink::abandon(std::vector<Outcome>& out) {
    process(nullptr, 0, out);
    if (impl_->js) {
        natsMsgList list;
        if (js_PublishAsyncGetPendingList(&list, impl_->js) == NATS_OK) natsMsgList_Destroy(&list);
    }
    for (auto& [id, p] : pending_) {
        Outcome o;
        o.token = p.token;
        o.verdict = Verdict::retry;
        o.error = "JetStream PubAck not received (relay stopping or database lost)";
        out.push_back(std::move(o));
    }
    pending_.clear();
}

}  // namespace once::relay
