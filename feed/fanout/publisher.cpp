// The fan-out publisher's NATS side (publisher.hpp): the connection, the
// stream, the publisher thread. Nothing here runs on the engine thread.
#include "tickgate/fanout/publisher.hpp"

#include <nats/nats.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nats_options.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/idle.hpp"

namespace tickgate::fanout {

struct Publisher::Impl {
    Impl(const FanoutConfig& c, std::string_view v, ConflatingRing& r)
        : cfg(c),
          venue(v),
          ring(r),
          session(static_cast<std::uint64_t>(realtime_ns())),
          seq(r.max_instruments(), 0),
          version(r.max_instruments(), 0),
          subject(r.max_instruments()),
          named(r.max_instruments()) {
        heartbeat_subject = cfg.prefix + '.';
        append_subject_token(heartbeat_subject, venue);
        heartbeat_subject += '.';
        heartbeat_subject += kHeartbeatToken;
        natsOptions* o = make_nats_options(cfg.servers, {.credentials_file = cfg.credentials_file,
                                                         .user = cfg.user,
                                                         .password_file = cfg.password_file,
                                                         .reconnect_wait_ms = cfg.reconnect_wait_ms});
        opts.reset(o);
        check(natsOptions_SetRetryOnFailedConnect(o, true, &Impl::on_connected, this), "retry on failed connect");
        check(natsOptions_SetReconnectedCB(o, &Impl::on_connected, this), "reconnected callback");
        check(natsOptions_SetDisconnectedCB(o, &Impl::on_disconnected, this), "disconnected callback");
        check(natsOptions_SetErrorHandler(o, &Impl::on_error, this), "error handler");
        check(natsOptions_SetClosedCB(o, &CallbackFence::done_conn, &fence), "closed callback");
    }
    ~Impl() { close(); }

    static void check(natsStatus s, const char* what) {
        if (s != NATS_OK) throw std::runtime_error(std::string("fanout: ") + what + ": " + natsStatus_GetText(s));
    }

    void connect() {
        natsConnection* c = nullptr;
        const natsStatus s = natsConnection_Connect(&c, opts.get());
        if (s == NATS_OK) {
            nc = c;
            on_connected(c, this);
        } else if (s == NATS_NOT_YET_CONNECTED) {
            nc = c;  // connects in the background; on_connected says when
        } else {
            throw std::runtime_error(std::string("fanout: cannot connect: ") + natsStatus_GetText(s) + " " +
                                     nats_GetLastError(nullptr));
        }
    }

    // Client threads: only flags for the publisher thread.
    static void on_connected(natsConnection*, void* self) {
        auto* me = static_cast<Impl*>(self);
        me->counters.connects.add();
        me->up.store(true, std::memory_order_release);
        me->resync_wanted.store(true, std::memory_order_release);
    }
    static void on_disconnected(natsConnection*, void* self) {
        auto* me = static_cast<Impl*>(self);
        me->up.store(false, std::memory_order_release);
        if (!me->closing.load(std::memory_order_relaxed)) me->counters.disconnects.add();
    }
    static void on_error(natsConnection*, natsSubscription*, natsStatus, void* self) {
        static_cast<Impl*>(self)->counters.async_errors.add();
    }

    // The stream over PREFIX.> keeping one record per subject: created, or
    // brought to this config if it exists. Publisher thread.
    void declare_stream() {
        next_declare = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        if (js == nullptr && natsConnection_JetStream(&js, nc, nullptr) != NATS_OK) {
            js = nullptr;
            counters.stream_errors.add();
            return;
        }
        const std::string subjects = cfg.prefix + ".>";
        const char* list[] = {subjects.c_str()};
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        sc.Name = cfg.stream.c_str();
        sc.Subjects = list;
        sc.SubjectsLen = 1;
        sc.MaxMsgsPerSubject = 1;
        sc.Replicas = cfg.replicas;
        sc.Storage = cfg.memory_storage ? js_MemoryStorage : js_FileStorage;
        sc.Discard = js_DiscardOld;
        jsErrCode jerr = static_cast<jsErrCode>(0);
        jsStreamInfo* si = nullptr;
        natsStatus s = js_AddStream(&si, js, &sc, nullptr, &jerr);
        if (s != NATS_OK && jerr == JSStreamNameExistErr) s = js_UpdateStream(&si, js, &sc, nullptr, &jerr);
        if (si) jsStreamInfo_Destroy(si);
        stream_ok = s == NATS_OK;
        if (s != NATS_OK) {
            counters.stream_errors.add();
            if (!said_stream_error) {  // said once: a live handler's stderr is not a log
                std::fprintf(stderr, "tickgate: fanout: stream %s: %s (JetStream error %d); retrying every second\n",
                             cfg.stream.c_str(), nats_GetLastError(nullptr), static_cast<int>(jerr));
                said_stream_error = true;
            }
        }
    }

    void publish(Record& r, std::uint64_t v, bool resync) {
        const std::uint32_t id = r.instrument;
        if (!resync && v == version[id]) return;  // already sent (queued again after being drained)
        version[id] = v;
        r.session = session;
        r.seq = ++seq[id];
        if (resync) r.flags |= kFlagResync;
        r.publish_ns = realtime_ns();
        auto& key = named[id];
        if (subject[id].empty() || key.channel != r.channel || std::memcmp(key.symbol, r.symbol, sizeof key.symbol) != 0) {
            // Renamed (MDP3: entries before the definition): the old subject's
            // last value would stay in the stream as a phantom instrument.
            if (!subject[id].empty()) purge(subject[id]);
            subject[id] = subject_for(cfg.prefix, venue, r.channel, r.symbol_view(), id);
            key.channel = r.channel;
            std::memcpy(key.symbol, r.symbol, sizeof key.symbol);
        }
        const std::size_t n = write_record(r, buf);
        if (!up.load(std::memory_order_acquire) ||
            natsConnection_Publish(nc, subject[id].c_str(), buf.data(), static_cast<int>(n)) != NATS_OK) {
            counters.dropped.add();  // its sequence number is spent: consumers count the gap
            return;
        }
        counters.published.add();
        if (resync) counters.resynced.add();
    }

    // Drops `old`'s retained record from the stream (a request to the
    // server, once per renamed instrument; counted when it fails).
    void purge(const std::string& old) {
        if (js == nullptr || !up.load(std::memory_order_acquire)) {
            counters.purge_errors.add();
            return;
        }
        jsOptions o;
        jsOptions_Init(&o);
        o.Stream.Purge.Subject = old.c_str();
        jsErrCode jerr = static_cast<jsErrCode>(0);
        if (js_PurgeStream(js, cfg.stream.c_str(), &o, &jerr) != NATS_OK) counters.purge_errors.add();
        else counters.renamed.add();
    }

    // Every heartbeat_ms while connected: PREFIX.VENUE.heartbeat, so a
    // consumer tells a silent publisher (gone, or cut off) from a quiet feed.
    void heartbeat_if_due(std::chrono::steady_clock::time_point now) {
        if (now < next_heartbeat) return;
        next_heartbeat = now + std::chrono::milliseconds(cfg.heartbeat_ms);
        if (!up.load(std::memory_order_acquire)) return;
        Record r;
        r.flags = kFlagHeartbeat;
        r.verdict = GateReason::kOk;
        r.session = session;
        r.seq = ++heartbeats;
        r.instrument = kNoInstrument;
        r.source_ns = std::int64_t{cfg.heartbeat_ms} * 1'000'000;
        r.publish_ns = realtime_ns();
        const std::size_t n = write_record(r, buf);
        if (natsConnection_Publish(nc, heartbeat_subject.c_str(), buf.data(), static_cast<int>(n)) == NATS_OK)
            counters.heartbeats.add();
    }

    // After a (re)connect: the stream declared, every instrument's last
    // record published again, and the stream to be confirmed (below).
    void resync() {
        declare_stream();
        stream_unconfirmed = true;
        republish();
    }
    void republish() {
        Record r;
        for (std::uint32_t id = 0; id < ring.max_instruments(); ++id)
            if (const std::uint64_t v = ring.read(id, r); v != 0) publish(r, v, true);
    }
    // The stream keeps what is published only while it has a leader; after
    // the node that led it dies, a new one may take many seconds (11 s seen
    // on a loaded 3-node cluster), and everything published meanwhile
    // reaches live consumers but not the stream, which late and resyncing
    // consumers read. So after a (re)connect the stream's leader is asked
    // for its info once a second until it answers, and then every
    // instrument is published again. Publisher thread.
    void confirm_stream(std::chrono::steady_clock::time_point now) {
        next_confirm = now + std::chrono::seconds(1);
        if (js == nullptr || !stream_ok) return;  // declare_stream() first
        jsOptions o;
        jsOptions_Init(&o);
        o.Wait = 500;  // the ring conflates meanwhile
        jsErrCode jerr = static_cast<jsErrCode>(0);
        jsStreamInfo* si = nullptr;
        const natsStatus s = js_GetStreamInfo(&si, js, cfg.stream.c_str(), &o, &jerr);
        if (si) jsStreamInfo_Destroy(si);
        if (s != NATS_OK) {
            counters.stream_errors.add();
            return;
        }
        stream_unconfirmed = false;
        republish();
    }

    void run() {
        BackoffIdle<> idle{64, 16, std::chrono::microseconds(50), std::chrono::microseconds(200)};
        while (!stopping.load(std::memory_order_acquire)) {
            if (resync_wanted.exchange(false, std::memory_order_acq_rel)) resync();
            const auto now = std::chrono::steady_clock::now();
            if (up.load(std::memory_order_acquire)) {
                // A cluster still electing its JetStream leader refuses the stream: again, until it takes.
                if (!stream_ok && now >= next_declare) declare_stream();
                if (stream_unconfirmed && now >= next_confirm) confirm_stream(now);
            }
            const std::size_t n = ring.drain([&](const Record& rec, std::uint64_t v) {
                Record r = rec;
                publish(r, v, false);
            }, 256);
            heartbeat_if_due(std::chrono::steady_clock::now());
            idle.idle(static_cast<int>(n));
        }
        while (ring.drain([&](const Record& rec, std::uint64_t v) {
            Record r = rec;
            publish(r, v, false);
        }, 4096) != 0) {
        }
    }

    void close() {
        closing.store(true, std::memory_order_relaxed);
        if (js) jsCtx_Destroy(js);
        js = nullptr;
        if (nc) {
            natsConnection_Close(nc);
            fence.wait(std::chrono::seconds(2));  // the client's callbacks point at this
            natsConnection_Destroy(nc);
        }
        nc = nullptr;
    }

    struct Named {
        char symbol[16] = {};
        std::uint16_t channel = 0;
    };
    struct OptionsDeleter {
        void operator()(natsOptions* o) const noexcept { natsOptions_Destroy(o); }
    };

    FanoutConfig cfg;
    std::string venue;
    ConflatingRing& ring;
    std::uint64_t session;
    std::unique_ptr<natsOptions, OptionsDeleter> opts;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    std::vector<std::uint64_t> seq;      // last sequence number given, per instrument
    std::vector<std::uint64_t> version;  // ring version last published, per instrument
    std::vector<std::string> subject;    // per instrument, from its symbol and channel
    std::vector<Named> named;            // what subject[] was made from
    std::string heartbeat_subject;       // PREFIX.VENUE.heartbeat
    std::uint64_t heartbeats = 0;        // sent this session (the heartbeat's seq)
    std::chrono::steady_clock::time_point next_heartbeat{};
    std::array<std::byte, kMaxRecordBytes> buf{};
    std::atomic<bool> up{false};
    std::atomic<bool> resync_wanted{false};
    std::atomic<bool> stopping{false};
    std::atomic<bool> closing{false};
    bool said_stream_error = false;
    bool stream_ok = false;
    bool stream_unconfirmed = false;  // since the last (re)connect, the stream's leader has not answered
    std::chrono::steady_clock::time_point next_declare{};
    std::chrono::steady_clock::time_point next_confirm{};
    std::thread thread;
    PublisherCounters counters;
    CallbackFence fence;  // declared last: destroyed first, after close() waited on it
};

Publisher::Publisher(const FanoutConfig& cfg, std::string_view venue, ConflatingRing& ring)
    : impl_(std::make_unique<Impl>(cfg, venue, ring)) {
    impl_->connect();
}

Publisher::~Publisher() { stop(); }

void Publisher::start() {
    if (impl_->thread.joinable()) return;
    impl_->stopping.store(false, std::memory_order_relaxed);
    impl_->thread = std::thread([this] { impl_->run(); });
}

void Publisher::stop(int flush_ms) {
    if (!impl_) return;
    if (impl_->thread.joinable()) {
        impl_->stopping.store(true, std::memory_order_release);
        impl_->thread.join();
    }
    if (impl_->nc && impl_->up.load(std::memory_order_acquire)) (void)natsConnection_FlushTimeout(impl_->nc, flush_ms);
    impl_->close();
}

std::uint64_t Publisher::session() const noexcept { return impl_->session; }
bool Publisher::connected() const noexcept { return impl_->up.load(std::memory_order_acquire); }
const PublisherCounters& Publisher::counters() const noexcept { return impl_->counters; }

}  // namespace tickgate::fanout
