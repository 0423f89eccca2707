// The fan-out consumer's NATS side (consumer.hpp).
#include "tickgate/fanout/consumer.hpp"

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "nats_options.hpp"

namespace tickgate::fanout {

namespace {
constexpr int kNoMessageFound = 10037;  // JSNoMessageFoundErr
std::span<const std::byte> data_of(natsMsg* m) {
    return {reinterpret_cast<const std::byte*>(natsMsg_GetData(m)), static_cast<std::size_t>(natsMsg_GetDataLength(m))};
}
}  // namespace

struct Consumer::Impl {
    ConsumerOptions o;
    std::vector<std::string> patterns;
    natsOptions* opts = nullptr;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    std::vector<natsSubscription*> subs;

    mutable std::mutex mu;  // tracker, changed, counters
    std::condition_variable cv;
    Tracker tracker;
    std::vector<std::string> changed;  // subjects that took a record since the last poll
    std::size_t taken = 0;
    ConsumerCounters counters;
    std::atomic<bool> slow{false};
    std::atomic<bool> reconnected{false};
    std::atomic<int> delay_us{0};
    // After a loss the stream may not yet hold what was lost (its replicas
    // commit a little after the live copy goes out): every instrument is
    // read once more this long after the first re-read.
    std::chrono::steady_clock::time_point reread_at = std::chrono::steady_clock::time_point::max();
    UpdateFn on_update;
    NoticeFn on_notice;
    std::map<std::string, bool, std::less<>> said_silent;  // per publisher, what on_notice said last (poll's thread)
    CallbackFence fence{1};  // the closed callback, then one per subscription

    static void on_msg(natsConnection*, natsSubscription*, natsMsg* m, void* self) {
        auto* me = static_cast<Impl*>(self);
        if (const int d = me->delay_us.load(std::memory_order_relaxed); d > 0)
            std::this_thread::sleep_for(std::chrono::microseconds(d));
        {
            const std::lock_guard lock(me->mu);
            const char* subject = natsMsg_GetSubject(m);
            if (me->tracker.on_live(subject, data_of(m)) == Applied::kTaken) {
                me->changed.emplace_back(subject);
                ++me->taken;
            }
        }
        natsMsg_Destroy(m);
        me->cv.notify_one();
    }
    static void on_error(natsConnection*, natsSubscription*, natsStatus s, void* self) {
        auto* me = static_cast<Impl*>(self);
        if (s == NATS_SLOW_CONSUMER) me->slow.store(true, std::memory_order_release);
        me->cv.notify_one();
    }
    static void on_reconnected(natsConnection*, void* self) {
        auto* me = static_cast<Impl*>(self);
        me->reconnected.store(true, std::memory_order_release);
        me->cv.notify_one();
    }
    static void on_disconnected(natsConnection*, void* self) {
        auto* me = static_cast<Impl*>(self);
        const std::lock_guard lock(me->mu);
        ++me->counters.disconnects;
    }

    // The stream's last record of `subject`, applied; false if it could not be read.
    bool read_snapshot(const std::string& subject) {
        natsMsg* m = nullptr;
        jsErrCode jerr = static_cast<jsErrCode>(0);
        const natsStatus s = js_GetLastMsg(&m, js, o.stream.c_str(), subject.c_str(), nullptr, &jerr);
        const std::lock_guard lock(mu);
        if (s == NATS_OK) {
            if (tracker.on_snapshot(subject, data_of(m)) == Applied::kTaken) {
                changed.push_back(subject);
                ++taken;
            }
            natsMsg_Destroy(m);
            return true;
        }
        if (s == NATS_NOT_FOUND || static_cast<int>(jerr) == kNoMessageFound) {
            (void)tracker.on_snapshot(subject, {});
            return true;
        }
        ++counters.snapshot_errors;
        return false;
    }

    // Every subject the stream holds under `pattern` (a wildcard allowed).
    std::vector<std::string> stored_subjects(const std::string& pattern) {
        std::vector<std::string> out;
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Stream.Info.SubjectsFilter = pattern.c_str();
        jsStreamInfo* si = nullptr;
        jsErrCode jerr = static_cast<jsErrCode>(0);
        if (js_GetStreamInfo(&si, js, o.stream.c_str(), &jo, &jerr) != NATS_OK) {
            const std::lock_guard lock(mu);
            ++counters.snapshot_errors;
            return out;
        }
        if (si->State.Subjects)
            for (int i = 0; i < si->State.Subjects->Count; ++i) out.emplace_back(si->State.Subjects->List[i].Subject);
        jsStreamInfo_Destroy(si);
        return out;
    }

    void close() {
        // Closing ends every subscription; their completions and the closed
        // callback are the client's last calls into this object.
        if (nc) {
            natsConnection_Close(nc);
            fence.wait(std::chrono::seconds(2));
        }
        for (natsSubscription* s : subs) natsSubscription_Destroy(s);
        subs.clear();
        if (js) jsCtx_Destroy(js);
        js = nullptr;
        if (nc) natsConnection_Destroy(nc);
        nc = nullptr;
        if (opts) natsOptions_Destroy(opts);
        opts = nullptr;
    }
};

Consumer::Consumer(const ConsumerOptions& o, std::vector<std::string> subjects) : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.o = o;
    m.patterns = std::move(subjects);
    m.opts = make_nats_options(o.servers, {.credentials_file = o.credentials_file,
                                           .user = o.user,
                                           .password_file = o.password_file,
                                           .reconnect_wait_ms = o.reconnect_wait_ms});
    const auto fail = [&](const std::string& what, natsStatus s) {
        const std::string text = what + ": " + natsStatus_GetText(s);
        m.close();
        throw std::runtime_error("fanout: " + text);
    };
    natsOptions_SetErrorHandler(m.opts, &Impl::on_error, &m);
    natsOptions_SetReconnectedCB(m.opts, &Impl::on_reconnected, &m);
    natsOptions_SetDisconnectedCB(m.opts, &Impl::on_disconnected, &m);
    natsOptions_SetClosedCB(m.opts, &CallbackFence::done_conn, &m.fence);
    if (const natsStatus s = natsConnection_Connect(&m.nc, m.opts); s != NATS_OK) fail("cannot connect", s);
    if (const natsStatus s = natsConnection_JetStream(&m.js, m.nc, nullptr); s != NATS_OK) fail("JetStream", s);
    // Subscribe first, then read the snapshots: a record published in
    // between arrives live and the Tracker orders the two by sequence.
    for (const std::string& p : m.patterns) {
        natsSubscription* sub = nullptr;
        if (const natsStatus s = natsConnection_Subscribe(&sub, m.nc, p.c_str(), &Impl::on_msg, &m); s != NATS_OK)
            fail("subscribe " + p, s);
        m.subs.push_back(sub);
        m.fence.expect_more(1);
        natsSubscription_SetOnCompleteCB(sub, &CallbackFence::done, &m.fence);
        if (o.pending_limit > 0) natsSubscription_SetPendingLimits(sub, o.pending_limit, -1);
    }
    if (const natsStatus s = natsConnection_Flush(m.nc); s != NATS_OK) fail("subscribe", s);
    for (const std::string& p : m.patterns)
        for (const std::string& subject : m.stored_subjects(p))
            if (!m.read_snapshot(subject)) {
                const std::lock_guard lock(m.mu);
                m.tracker.retry(subject);
            }
}

Consumer::~Consumer() { impl_->close(); }

void Consumer::on_update(UpdateFn f) { impl_->on_update = std::move(f); }
void Consumer::on_notice(NoticeFn f) { impl_->on_notice = std::move(f); }
void Consumer::set_processing_delay_us(int us) noexcept { impl_->delay_us.store(us, std::memory_order_relaxed); }

std::size_t Consumer::poll(int timeout_ms) {
    Impl& m = *impl_;
    std::vector<std::string> wanted;
    // Whether every instrument is read again in this poll: then the stream's
    // subjects are listed too, since an instrument whose every record the
    // transport dropped is not yet known to the tracker.
    bool reread_all = false;
    {
        std::unique_lock lock(m.mu);
        m.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
            return !m.changed.empty() || m.slow.load(std::memory_order_acquire) ||
                   m.reconnected.load(std::memory_order_acquire);
        });
    }
    // What the transport lost cannot be attributed: read every instrument again.
    if (m.slow.exchange(false, std::memory_order_acq_rel)) {
        std::int64_t dropped = 0;
        for (natsSubscription* s : m.subs) {
            std::int64_t d = 0;
            if (natsSubscription_GetDropped(s, &d) == NATS_OK) dropped += d;
        }
        {
            const std::lock_guard lock(m.mu);
            ++m.counters.slow_consumer;
            m.counters.dropped = static_cast<std::uint64_t>(dropped);
            m.tracker.mark_all_suspect();
        }
        reread_all = true;
        m.reread_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
        if (m.on_notice)
            m.on_notice("slow consumer: the client library dropped " + std::to_string(dropped) +
                        " messages in all; every instrument is read again from the stream");
    }
    if (m.reconnected.exchange(false, std::memory_order_acq_rel)) {
        {
            const std::lock_guard lock(m.mu);
            ++m.counters.reconnects;
            m.tracker.mark_all_suspect();
        }
        reread_all = true;
        m.reread_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
        if (m.on_notice) m.on_notice("reconnected: every instrument is read again from the stream");
    }
    std::vector<std::pair<std::string, bool>> liveness;  // publishers that went silent (false) or came back
    {
        const std::lock_guard lock(m.mu);
        m.tracker.check_publishers(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count());
        for (const auto& [key, p] : m.tracker.publishers()) {
            bool& said = m.said_silent[key];
            if (said != p.silent) liveness.emplace_back(key, !p.silent);
            said = p.silent;
        }
        if (std::chrono::steady_clock::now() >= m.reread_at) {
            m.reread_at = std::chrono::steady_clock::time_point::max();
            m.tracker.mark_all_suspect();
            reread_all = true;
        }
        wanted = m.tracker.take_wanted();
    }
    if (reread_all)
        for (const std::string& p : m.patterns) {
            std::vector<std::string> stored = m.stored_subjects(p);  // a request: outside the lock
            const std::lock_guard lock(m.mu);
            for (std::string& subject : stored)
                if (m.tracker.find(subject) == nullptr &&
                    std::find(wanted.begin(), wanted.end(), subject) == wanted.end())
                    wanted.push_back(std::move(subject));
        }
    if (m.on_notice)
        for (const auto& [key, heard] : liveness)
            m.on_notice(heard ? "publisher " + key + " heard again: its instruments are read again from the stream"
                              : "publisher " + key + " silent (no heartbeat for 3 intervals): its instruments are "
                                "not tradeable");
    for (const std::string& subject : wanted)
        if (!m.read_snapshot(subject)) {
            const std::lock_guard lock(m.mu);
            m.tracker.retry(subject);
        }
    std::vector<std::string> changed;
    std::size_t taken = 0;
    std::vector<std::pair<std::string, InstrumentView>> views;
    {
        const std::lock_guard lock(m.mu);
        changed.swap(m.changed);
        taken = std::exchange(m.taken, 0);
        if (m.on_update)
            for (const std::string& s : changed)
                if (const InstrumentView* v = m.tracker.find(s)) views.emplace_back(s, *v);
    }
    for (const auto& [s, v] : views) m.on_update(s, v);
    return taken;
}

std::map<std::string, InstrumentView, std::less<>> Consumer::views() const {
    const std::lock_guard lock(impl_->mu);
    return impl_->tracker.instruments();
}
TrackerCounters Consumer::tracker_counters() const {
    const std::lock_guard lock(impl_->mu);
    return impl_->tracker.counters();
}
ConsumerCounters Consumer::counters() const {
    const std::lock_guard lock(impl_->mu);
    return impl_->counters;
}

}  // namespace tickgate::fanout
