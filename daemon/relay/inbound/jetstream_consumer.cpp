#include "inbound/jetstream_consumer.hpp"

#include <nats/nats.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace once::relay {

namespace {

std::string status_text(natsStatus s) {
    natsStatus ls = s;
    const char* text = nats_GetLastError(&ls);
    std::string out = natsStatus_GetText(s);
    if (text && *text && std::strcmp(text, out.c_str()) != 0) out += std::string(": ") + text;
    return out;
}

// A failure that may pass: no server reachable, none answering in time, none responding yet.
bool transient_status(natsStatus s) {
    return s == NATS_TIMEOUT || s == NATS_NO_SERVER || s == NATS_NO_RESPONDERS || s == NATS_CONNECTION_CLOSED ||
           s == NATS_CONNECTION_DISCONNECTED || s == NATS_NOT_YET_CONNECTED || s == NATS_IO_ERROR ||
           s == NATS_STALE_CONNECTION;
}

constexpr int64_t kNanosPerMilli = 1000000;

}  // namespace

struct JetStreamConsumer::Impl {
    natsOptions* opts = nullptr;
    natsConnection* conn = nullptr;
    jsCtx* js = nullptr;
    natsSubscription* sub = nullptr;
    int efd = -1;
    size_t max_held = 256;
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    bool fenced = false;
    size_t outstanding = 0;                 // fetched and not released
    std::vector<FetchedMessage> fetched;
    ConsumerState state;
    std::string error;

    ~Impl() {
        for (auto& f : fetched) natsMsg_Destroy(f.msg);
        if (sub) natsSubscription_Destroy(sub);
        if (js) jsCtx_Destroy(js);
        if (conn) natsConnection_Destroy(conn);
        if (opts) natsOptions_Destroy(opts);
        if (efd >= 0) ::close(efd);
    }
};

JetStreamConsumer::JetStreamConsumer(InboundSource source, Millis connect_timeout, Millis request_timeout)
    : source_(std::move(source)), connect_timeout_(connect_timeout), request_timeout_(request_timeout),
      impl_(std::make_unique<Impl>()) {
    impl_->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (impl_->efd < 0) throw SourceError("inbound: cannot create an eventfd");
}

JetStreamConsumer::~JetStreamConsumer() { stop(); }

void JetStreamConsumer::stop() {
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->stop = true;
    }
    impl_->cv.notify_all();
    if (impl_->thread.joinable()) impl_->thread.join();
}

std::string JetStreamConsumer::check() {
    check_only_ = true;
    check_note_.clear();
    try {
        open(0);
    } catch (...) {
        check_only_ = false;
        throw;
    }
    check_only_ = false;
    return check_note_;
}

void JetStreamConsumer::open(size_t max_held) {
    Impl& im = *impl_;
    im.max_held = max_held;
    natsStatus s = natsOptions_Create(&im.opts);
    std::vector<const char*> servers;
    for (auto& srv : source_.servers) servers.push_back(srv.c_str());
    if (s == NATS_OK) s = natsOptions_SetServers(im.opts, servers.data(), static_cast<int>(servers.size()));
    if (s == NATS_OK && !source_.user.empty()) s = natsOptions_SetUserInfo(im.opts, source_.user.c_str(), source_.password.c_str());
    if (s == NATS_OK && !source_.token.empty()) s = natsOptions_SetToken(im.opts, source_.token.c_str());
    if (s == NATS_OK) s = natsOptions_SetTimeout(im.opts, connect_timeout_.count());
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(im.opts, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(im.opts, 250);
    if (s == NATS_OK) s = natsOptions_SetName(im.opts, "once-relay inbound");
    if (s != NATS_OK) throw SourceError("inbound: bad NATS options: " + status_text(s));
    s = natsConnection_Connect(&im.conn, im.opts);
    if (s != NATS_OK)
        throw SourceError("cannot reach the NATS server(s) " + source_.description + ": " + status_text(s), transient_status(s));
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = request_timeout_.count();
    s = natsConnection_JetStream(&im.js, im.conn, &jo);
    if (s != NATS_OK) throw SourceError("inbound: JetStream context: " + status_text(s));

    jsErrCode jerr = static_cast<jsErrCode>(0);
    jsConsumerInfo* ci = nullptr;
    s = js_GetConsumerInfo(&ci, im.js, source_.stream.c_str(), source_.consumer.c_str(), nullptr, &jerr);
    if (s == NATS_OK) {
        std::string filter = ci->Config && ci->Config->FilterSubject ? ci->Config->FilterSubject : "";
        bool explicit_ack = ci->Config && ci->Config->AckPolicy == js_AckExplicit;
        bool pull = !(ci->Config && ci->Config->DeliverSubject && *ci->Config->DeliverSubject);
        jsConsumerInfo_Destroy(ci);
        if (filter != source_.filter)
            throw SourceError("inbound: consumer \"" + source_.consumer + "\" of stream " + source_.stream + " filters \"" +
                              filter + "\", the --source URI asks for \"" + source_.filter +
                              "\": use another consumer name, or delete the consumer (nats consumer rm) to change its filter");
        if (!explicit_ack || !pull)
            throw SourceError("inbound: consumer \"" + source_.consumer + "\" of stream " + source_.stream +
                              " is not a pull consumer with explicit acks; the inbound relay needs one (use another name)");
        spdlog::info("inbound: consumer {} of stream {} found", source_.consumer, source_.stream);
        if (check_only_) return;
    } else if (jerr == JSStreamNotFoundErr) {
        throw SourceError("inbound: JetStream stream \"" + source_.stream + "\" does not exist");
    } else if (s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) {
        if (check_only_) {
            check_note_ = "JetStream consumer \"" + source_.consumer + "\" of stream " + source_.stream +
                          " does not exist; once-relay will create it at start";
            return;
        }
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = source_.consumer.c_str();
        cc.AckPolicy = js_AckExplicit;
        cc.DeliverPolicy = js_DeliverAll;
        cc.AckWait = source_.ack_wait.count() * kNanosPerMilli;
        cc.MaxDeliver = -1;   // the inbox decides poison (once.inbox_configure max_attempts), never JetStream
        cc.MaxAckPending = static_cast<int64_t>(std::max<size_t>(1000, 4 * max_held));
        if (!source_.filter.empty()) cc.FilterSubject = source_.filter.c_str();
        s = js_AddConsumer(&ci, im.js, source_.stream.c_str(), &cc, nullptr, &jerr);
        if (s != NATS_OK)
            throw SourceError("inbound: cannot create consumer " + source_.consumer + " on stream " + source_.stream + ": " +
                              status_text(s), transient_status(s));
        jsConsumerInfo_Destroy(ci);
        spdlog::info("inbound: created durable consumer {} on stream {} (filter {}, AckWait {}ms, MaxDeliver unlimited)",
                     source_.consumer, source_.stream, source_.filter.empty() ? "none" : source_.filter,
                     source_.ack_wait.count());
    } else {
        throw SourceError("inbound: cannot look up consumer " + source_.consumer + " of stream " + source_.stream + ": " +
                              status_text(s) + " (is JetStream enabled? nats-server -js)",
                          transient_status(s));
    }
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = source_.stream.c_str();
    so.Consumer = source_.consumer.c_str();
    s = js_PullSubscribe(&im.sub, im.js, source_.filter.empty() ? ">" : source_.filter.c_str(), source_.consumer.c_str(),
                         nullptr, &so, &jerr);
    if (s != NATS_OK)
        throw SourceError("inbound: cannot bind to consumer " + source_.consumer + ": " + status_text(s), transient_status(s));
}

ConsumerState JetStreamConsumer::state() {
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetConsumerInfo(&ci, impl_->js, source_.stream.c_str(), source_.consumer.c_str(), nullptr, &jerr);
    if (s != NATS_OK) throw SourceError("inbound: consumer info: " + status_text(s));
    ConsumerState st;
    st.delivered_consumer_seq = ci->Delivered.Consumer;
    st.delivered_stream_seq = ci->Delivered.Stream;
    st.ack_floor_stream_seq = ci->AckFloor.Stream;
    st.ack_pending = ci->NumAckPending;
    st.num_pending = ci->NumPending;
    jsConsumerInfo_Destroy(ci);
    return st;
}

void JetStreamConsumer::set_fenced(bool fenced) {
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->fenced = fenced;
    }
    impl_->cv.notify_all();
}

void JetStreamConsumer::start(Millis first_fetch_after) {
    Impl* im = impl_.get();
    try {
        im->state = state();
    } catch (const SourceError&) {
    }
    im->thread = std::thread([this, im, first_fetch_after]() {
        using Clock = std::chrono::steady_clock;
        Clock::time_point next_info = Clock::now() + std::chrono::seconds(1);
        Clock::time_point first_fetch = Clock::now() + first_fetch_after;
        for (;;) {
            size_t room;
            {
                std::unique_lock<std::mutex> lock(im->mu);
                if (im->stop) return;
                size_t max = im->max_held + (im->fenced ? std::max<size_t>(1000, 4 * im->max_held) : 0);
                room = max > im->outstanding ? max - im->outstanding : 0;
                if (Clock::now() < first_fetch) room = 0;
                if (room == 0) {
                    im->cv.wait_for(lock, std::chrono::milliseconds(500));
                }
            }
            if (Clock::now() >= next_info) {
                next_info = Clock::now() + std::chrono::seconds(1);
                try {
                    ConsumerState st = state();
                    std::lock_guard<std::mutex> lock(im->mu);
                    im->state = st;
                } catch (const SourceError& e) {
                    std::lock_guard<std::mutex> lock(im->mu);
                    im->error = e.what();
                }
                uint64_t one = 1;
                (void)!::write(im->efd, &one, sizeof one);
            }
            if (room == 0) continue;
            natsMsgList list{};
            jsErrCode jerr = static_cast<jsErrCode>(0);
            natsStatus s = natsSubscription_Fetch(&list, im->sub, static_cast<int>(std::min<size_t>(room, source_.fetch)),
                                                  1000, &jerr);
            if (s == NATS_TIMEOUT) continue;
            if (s != NATS_OK) {
                std::unique_lock<std::mutex> lock(im->mu);
                im->error = "JetStream fetch: " + status_text(s);
                im->cv.wait_for(lock, std::chrono::milliseconds(500));
                continue;
            }
            std::vector<FetchedMessage> got;
            for (int i = 0; i < list.Count; ++i) {
                natsMsg* m = list.Msgs[i];
                list.Msgs[i] = nullptr;
                FetchedMessage f;
                f.msg = m;
                jsMsgMetaData* meta = nullptr;
                if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
                    f.consumer_seq = meta->Sequence.Consumer;
                    f.stream_message.stream_seq = meta->Sequence.Stream;
                    f.num_delivered = meta->NumDelivered;
                    if (meta->Stream) f.stream_message.stream = meta->Stream;
                    jsMsgMetaData_Destroy(meta);
                } else {
                    natsMsg_Destroy(m);   // not a JetStream message (a status): nothing to ack
                    continue;
                }
                if (const char* subj = natsMsg_GetSubject(m)) f.stream_message.subject = subj;
                const char** keys = nullptr;
                int count = 0;
                if (natsMsgHeader_Keys(m, &keys, &count) == NATS_OK) {
                    for (int k = 0; k < count; ++k) {
                        const char* v = nullptr;
                        if (natsMsgHeader_Get(m, keys[k], &v) == NATS_OK && v)
                            f.stream_message.headers.emplace_back(keys[k], v);
                    }
                    std::free(static_cast<void*>(keys));
                }
                if (const char* d = natsMsg_GetData(m)) f.stream_message.data.assign(d, natsMsg_GetDataLength(m));
                got.push_back(std::move(f));
            }
            natsMsgList_Destroy(&list);
            if (got.empty()) continue;
            {
                std::lock_guard<std::mutex> lock(im->mu);
                im->outstanding += got.size();
                for (auto& f : got) im->fetched.push_back(std::move(f));
                im->error.clear();
            }
            uint64_t one = 1;
            (void)!::write(im->efd, &one, sizeof one);
        }
    });
}

int JetStreamConsumer::event_fd() const { return impl_->efd; }

std::vector<FetchedMessage> JetStreamConsumer::take() {
    uint64_t n;
    while (::read(impl_->efd, &n, sizeof n) > 0) {}
    std::vector<FetchedMessage> out;
    std::lock_guard<std::mutex> lock(impl_->mu);
    out.swap(impl_->fetched);
    return out;
}

void JetStreamConsumer::released(size_t n) {
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->outstanding -= std::min(n, impl_->outstanding);
    }
    impl_->cv.notify_all();
}

void JetStreamConsumer::ack(natsMsg* m) { natsMsg_Ack(m, nullptr); }

void JetStreamConsumer::in_progress(natsMsg* m) { natsMsg_InProgress(m, nullptr); }

bool JetStreamConsumer::connected() const {
    return impl_->conn && natsConnection_Status(impl_->conn) == NATS_CONN_STATUS_CONNECTED;
}

ConsumerState JetStreamConsumer::last_state() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->state;
}

std::string JetStreamConsumer::last_error() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->error;
}

}  // namespace once::relay
