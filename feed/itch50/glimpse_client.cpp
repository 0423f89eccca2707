#include "tickgate/feed/itch50/glimpse_client.hpp"

#include <fmt/format.h>

#include "tickgate/feed/itch50/snapshot_course.hpp"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace tickgate::itch50 {

std::string read_glimpse_password(const GlimpseConfig& g) {
    if (!g.password_file.empty()) {
        std::ifstream in(g.password_file);
        std::string line;
        if (!in || !std::getline(in, line))
            throw std::runtime_error("[glimpse] password_file: cannot read " + g.password_file);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
    }
    if (!g.password_env.empty()) {
        const char* v = std::getenv(g.password_env.c_str());
        if (v == nullptr) throw std::runtime_error("[glimpse] password_env: " + g.password_env + " is not set");
        return v;
    }
    throw std::runtime_error("[glimpse]: neither password_file nor password_env");
}

GlimpseClient::GlimpseClient(const Config& cfg, std::int64_t silence_timeout_ms)
    : storage_(cfg.any_glimpse() ? cfg.itch.max_orders : 0) {
    if (!cfg.any_glimpse()) return;
    const std::string password = read_glimpse_password(cfg.glimpse);
    clients_.resize(cfg.channels.size());
    for (std::size_t ch = 0; ch < cfg.channels.size(); ++ch) {
        const ChannelConfig& c = cfg.channels[ch];
        if (c.glimpse.empty()) continue;
        soupbintcp::ClientConfig k;
        k.ip = c.glimpse_ip;
        k.port = c.glimpse_port;
        k.username = cfg.glimpse.username;
        k.password = password;
        k.silence_timeout_ms = silence_timeout_ms;
        clients_[ch] = std::make_unique<soupbintcp::Client>(std::move(k));
    }
    thread_ = std::thread([this] { loop(); });
}

GlimpseClient::~GlimpseClient() {
    if (!thread_.joinable()) return;
    cancel_.store(true, std::memory_order_release);  // a running session ends within 20 ms
    state_.store(State::kStopping, std::memory_order_release);
    state_.notify_all();
    thread_.join();
}

void GlimpseClient::start(std::uint32_t ch, std::int64_t deadline_ns) noexcept {
    channel_ = ch;
    deadline_ns_ = deadline_ns;
    cancel_.store(false, std::memory_order_relaxed);
    state_.store(State::kRequested, std::memory_order_release);
    state_.notify_one();
}

void GlimpseClient::cancel(SnapshotFailure why) noexcept {
    cancel_reason_ = why;
    cancel_.store(true, std::memory_order_release);
}

void GlimpseClient::loop() {
    // Asleep until the engine asks for a snapshot (no polling the whole day).
    for (;;) {
        const State s = state_.load(std::memory_order_acquire);
        if (s == State::kStopping) return;
        if (s != State::kRequested) {
            state_.wait(s, std::memory_order_acquire);
            continue;
        }
        State expected = State::kRequested;
        if (!state_.compare_exchange_strong(expected, State::kRunning, std::memory_order_acq_rel)) continue;
        run_one();
    }
}

namespace {
struct SpinContext {
    SnapshotStorage* storage;
    SnapshotFailure refused = SnapshotFailure::kMalformed;
};
soupbintcp::Verdict on_sequenced(void* p, std::span<const std::byte> m) noexcept {
    auto& c = *static_cast<SpinContext*>(p);
    switch (c.storage->take(m)) {
        case SnapshotStorage::Take::kMore: return soupbintcp::Verdict::kMore;
        case SnapshotStorage::Take::kEnd: return soupbintcp::Verdict::kDone;
        case SnapshotStorage::Take::kFull: c.refused = SnapshotFailure::kStorageFull; break;
        case SnapshotStorage::Take::kMalformed: c.refused = SnapshotFailure::kMalformed; break;
    }
    return soupbintcp::Verdict::kRefuse;
}
SnapshotFailure failure_of(soupbintcp::Failure f) noexcept {
    switch (f) {
        case soupbintcp::Failure::kConnectFailed: return SnapshotFailure::kConnectFailed;
        case soupbintcp::Failure::kLoginRejected: return SnapshotFailure::kLoginRejected;
        case soupbintcp::Failure::kSilent: return SnapshotFailure::kSilent;
        case soupbintcp::Failure::kTimeout: return SnapshotFailure::kTimeout;
        case soupbintcp::Failure::kMalformed: return SnapshotFailure::kMalformed;
        case soupbintcp::Failure::kEndOfSession: return SnapshotFailure::kEndOfSession;
        default: return SnapshotFailure::kDropped;
    }
}
}  // namespace

void GlimpseClient::run_one() {
    storage_.reset();
    SpinContext ctx{&storage_};
    Outcome o;
    soupbintcp::Client* client = enabled(channel_) ? clients_[channel_].get() : nullptr;
    if (client == nullptr) {
        o.failure = SnapshotFailure::kConnectFailed;
    } else {
        const soupbintcp::Result r = client->run(&on_sequenced, &ctx, deadline_ns_, cancel_);
        if (r.failure == soupbintcp::Failure::kRefusedByCaller) o.failure = ctx.refused;
        else if (r.failure == soupbintcp::Failure::kCancelled) o.failure = cancel_reason_;
        else if (r.failure != soupbintcp::Failure::kNone) o.failure = failure_of(r.failure);
        o.reject_reason = r.reject_reason;
    }
    outcome_ = o;
    // Not over a stop that came meanwhile.
    State expected = State::kRunning;
    (void)state_.compare_exchange_strong(expected, o.failure == SnapshotFailure::kCount ? State::kReady : State::kFailed,
                                         std::memory_order_acq_rel);
}

}  // namespace tickgate::itch50

namespace tickgate::itch50 {

std::string snapshots_text(const SnapshotCourse& course, std::span<const std::uint16_t> ids) {
    std::string out;
    for (std::uint32_t ch = 0; ch < ids.size(); ++ch) {
        if (!course.enabled(ch)) continue;
        if (out.empty())
            out = fmt::format("{:<4} {:<26} {:>9} {:>9} {:>12}  {}\n", "ch", "glimpse snapshot", "requested",
                              "applied", "last orders", "failures");
        const SnapshotCounters& k = course.counters(ch);
        std::string failures;
        for (std::size_t r = 0; r < std::size(kSnapshotFailureNames); ++r)
            if (const std::uint64_t n = k.snapshot_failures[r].get(); n != 0)
                failures += fmt::format("{}{} {}", failures.empty() ? "" : ", ", kSnapshotFailureNames[r], n);
        out += fmt::format("{:<4} {:<26} {:>9} {:>9} {:>12}  {}\n", ids[ch],
                           kSnapshotViewText[static_cast<std::size_t>(course.view(ch))], k.snapshots_requested.get(),
                           k.snapshots_applied.get(), k.snapshot_orders.get(), failures.empty() ? "none" : failures);
    }
    return out;
}

}  // namespace tickgate::itch50
