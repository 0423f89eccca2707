// The GLIMPSE 5.0 client (ITCH50.md "Snapshot recovery"): its own thread
// runs one SoupBinTCP session at a time for the channel the engine names,
// building the spin into the fixed-capacity SnapshotStorage, and hands the
// outcome back through one atomic state (no lock, no allocation on the
// engine's side):
//   idle --start(ch)--> requested --(client thread)--> running --> ready | failed
//   ready | failed --release()--> idle      (cancel(): the session ends as failed)
// The storage is the client thread's from `requested` until `ready` or
// `failed`, the engine's from then until release().
//
// Credentials: `[glimpse] username`, and the password from password_file
// (its first line) or the environment variable password_env, read once at
// construction; never logged, printed or exported. A config naming neither
// throws std::runtime_error (without the password) at construction.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/soupbintcp/client.hpp"

namespace tickgate::itch50 {

// The password `[glimpse]` points at; throws std::runtime_error naming the
// file or the variable (never the password) when it cannot be had.
[[nodiscard]] std::string read_glimpse_password(const GlimpseConfig& g);

class GlimpseClient {
public:
    enum class State : std::uint8_t { kIdle, kRequested, kRunning, kReady, kFailed, kStopping };
    struct Outcome {
        SnapshotFailure failure = SnapshotFailure::kCount;  // kCount: none (ready)
        char reject_reason = 0;
    };

    // Starts the thread when a channel of `cfg` has `glimpse`. `silence_timeout_ms`: SoupBinTCP's (tests shorten it).
    explicit GlimpseClient(const Config& cfg, std::int64_t silence_timeout_ms = soupbintcp::kSilenceTimeoutMs);
    ~GlimpseClient();
    GlimpseClient(const GlimpseClient&) = delete;
    GlimpseClient& operator=(const GlimpseClient&) = delete;

    [[nodiscard]] bool any() const noexcept { return thread_.joinable(); }
    [[nodiscard]] bool enabled(std::uint32_t ch) const noexcept { return ch < clients_.size() && clients_[ch] != nullptr; }
    [[nodiscard]] State state() const noexcept { return state_.load(std::memory_order_acquire); }
    [[nodiscard]] std::uint32_t channel() const noexcept { return channel_; }

    // ---- engine thread
    // Idle only: a session for channel `ch`, ending at `deadline_ns` (monotonic) at the latest.
    // Wakes the client thread (a futex wake: once per snapshot, not per message).
    void start(std::uint32_t ch, std::int64_t deadline_ns) noexcept;
    // The running session ends as failed (its reason: `why`).
    void cancel(SnapshotFailure why) noexcept;
    // After ready or failed: the storage and outcome are read; back to idle.
    void release() noexcept { state_.store(State::kIdle, std::memory_order_release); }
    [[nodiscard]] const SnapshotStorage& storage() const noexcept { return storage_; }
    [[nodiscard]] Outcome outcome() const noexcept { return outcome_; }

private:
    void loop();
    void run_one();

    std::vector<std::unique_ptr<soupbintcp::Client>> clients_;  // per channel slot; null: no glimpse
    SnapshotStorage storage_;
    std::atomic<State> state_{State::kIdle};
    std::atomic<bool> cancel_{false};
    SnapshotFailure cancel_reason_ = SnapshotFailure::kTimeout;
    std::uint32_t channel_ = 0;
    std::int64_t deadline_ns_ = 0;
    Outcome outcome_;
    std::thread thread_;
};

}  // namespace tickgate::itch50
