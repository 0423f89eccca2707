// GLIMPSE snapshot application, the engine-side half (ITCH50.md "Snapshot
// recovery"): the fixed-capacity storage a spin is built into (written by
// the GLIMPSE client's thread, read by the engine's once `M` has arrived),
// and the snapshot buffer that keeps a channel's stream output, in
// position order, while its snapshot loads. Both are sized at start-up
// (zero pages until used); nothing allocates per message.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "tickgate/counter.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/decoder.hpp"
#include "tickgate/feed/itch50/glimpse.hpp"
#include "tickgate/feed/itch50/wire.hpp"
#include "tickgate/feed/snapshot_service.hpp"
#include "tickgate/zeroed_array.hpp"

namespace tickgate::itch50 {

// One message of a spin, as the book needs it (32 bytes). R keeps its
// symbol in `ref`'s bytes; S and H their code in `side`.
struct SnapshotRecord {
    std::uint64_t ref;
    std::int64_t timestamp_ns;
    std::uint32_t shares;
    std::uint32_t price;
    std::uint16_t locate;
    char type;
    char side;
};
static_assert(sizeof(SnapshotRecord) == 32);

// The spin of one snapshot. Orders (A/F) up to the order store's size,
// state messages (S, R, H) up to kMaxStates; the book-neutral types are
// skipped, unknown types skipped and counted, and a message that would
// change an order (E, C, X, D, U) has no place in a spin: malformed.
class SnapshotStorage {
public:
    static constexpr std::size_t kMaxStates = 3 * 65536 + 256;  // R and H per locate, S events, and a margin
    enum class Take : std::uint8_t { kMore, kEnd, kFull, kMalformed };

    explicit SnapshotStorage(std::size_t max_orders) : orders_(max_orders), states_(kMaxStates) {}
    [[nodiscard]] static std::size_t bytes_for(std::size_t max_orders) noexcept {
        return ZeroedArray<SnapshotRecord>::bytes_for(max_orders + kMaxStates);
    }

    void reset() noexcept {
        n_orders_ = n_states_ = unknown_ = 0, position_ = 0;
        applied_.store(false, std::memory_order_relaxed);
    }
    // One Sequenced Data payload of the spin.
    Take take(std::span<const std::byte> m) noexcept {
        if (m.empty()) return Take::kMalformed;
        const auto t = static_cast<std::uint8_t>(m[0]);
        if (t == static_cast<std::uint8_t>(kSnapshotType)) {
            const SnapshotEnd e = parse_snapshot_end(m);
            if (e.result != SnapshotParse::kOk) return Take::kMalformed;
            position_ = e.position;
            return Take::kEnd;
        }
        if (!is_known(t)) {
            ++unknown_;
            return Take::kMore;
        }
        if (m.size() < min_length(t)) return Take::kMalformed;
        const OrderMessage o = decode_message(m, 0);
        SnapshotRecord r{};
        r.timestamp_ns = o.timestamp_ns;
        r.locate = o.stock_locate;
        r.type = o.type;
        switch (o.action) {
            case Action::kAdd:
                if (n_orders_ == orders_.size()) return Take::kFull;
                r.ref = o.order_ref, r.shares = o.shares, r.price = o.price, r.side = o.side;
                orders_[n_orders_++] = r;
                return Take::kMore;
            case Action::kStockDirectory: std::memcpy(&r.ref, o.symbol, sizeof r.ref); break;
            case Action::kSystemEvent:
            case Action::kTradingAction: r.side = o.code; break;
            case Action::kNoBookChange: return Take::kMore;
            default: return Take::kMalformed;
        }
        if (n_states_ == states_.size()) return Take::kFull;
        states_[n_states_++] = r;
        return Take::kMore;
    }

    [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
    [[nodiscard]] std::span<const SnapshotRecord> orders() const noexcept { return {orders_.data(), n_orders_}; }
    [[nodiscard]] std::span<const SnapshotRecord> states() const noexcept { return {states_.data(), n_states_}; }
    [[nodiscard]] std::uint64_t unknown_messages() const noexcept { return unknown_; }
    // The engine has replaced the books from this spin (Rules, on the
    // kSnapshotReplace event that carries it): the storage may be reused.
    void mark_applied() const noexcept { applied_.store(true, std::memory_order_release); }
    [[nodiscard]] bool applied() const noexcept { return applied_.load(std::memory_order_acquire); }

    // The record as the sequencer's input, at stream position `position`.
    [[nodiscard]] static OrderMessage message(const SnapshotRecord& r, std::uint64_t position) noexcept {
        OrderMessage o{};
        o.position = position;
        o.timestamp_ns = r.timestamp_ns;
        o.stock_locate = r.locate;
        o.type = r.type;
        switch (r.type) {
            case 'A':
            case 'F':
                o.action = Action::kAdd, o.order_ref = r.ref, o.shares = r.shares, o.price = r.price, o.side = r.side;
                break;
            case 'R': o.action = Action::kStockDirectory, std::memcpy(o.symbol, &r.ref, sizeof r.ref); break;
            case 'S': o.action = Action::kSystemEvent, o.code = r.side; break;
            default: o.action = Action::kTradingAction, o.code = r.side; break;
        }
        return o;
    }

private:
    ZeroedArray<SnapshotRecord> orders_, states_;
    std::size_t n_orders_ = 0, n_states_ = 0;
    std::uint64_t unknown_ = 0, position_ = 0;
    mutable std::atomic<bool> applied_{false};
};

// What the stream hands on for one channel while its snapshot loads, kept
// in order: messages with their positions, and the holes given up among
// them (with the position the stream moved on to).
class SnapshotBuffer {
public:
    enum class Kind : std::uint32_t { kMessage, kGaveUp };
    struct Entry {
        std::uint64_t position;  // kMessage: the message's; kGaveUp: the stream's next position after the hole
        std::int64_t recv_ns;
        std::uint32_t len;
        Kind kind;
        std::span<const std::byte> bytes;
    };

    explicit SnapshotBuffer(std::size_t bytes) : bytes_(bytes) {}
    [[nodiscard]] std::size_t capacity() const noexcept { return bytes_.size(); }
    [[nodiscard]] std::size_t used() const noexcept { return used_; }
    [[nodiscard]] bool empty() const noexcept { return used_ == 0; }
    void clear() noexcept { used_ = 0; }

    // false: no room (nothing written).
    bool push(Kind kind, std::uint64_t position, std::int64_t recv_ns, std::span<const std::byte> m) noexcept {
        const std::size_t need = sizeof(Header) + round_up(m.size());
        if (need > bytes_.size() - used_) return false;
        const Header h{position, recv_ns, static_cast<std::uint32_t>(m.size()), kind};
        std::memcpy(bytes_.data() + used_, &h, sizeof h);
        if (!m.empty()) std::memcpy(bytes_.data() + used_ + sizeof h, m.data(), m.size());
        used_ += need;
        return true;
    }
    // Calls f(const Entry&) for each entry in order.
    template <class F>
    void each(F&& f) const noexcept {
        for (std::size_t at = 0; at < used_;) {
            Header h;
            std::memcpy(&h, bytes_.data() + at, sizeof h);
            f(Entry{h.position, h.recv_ns, h.len, h.kind, {bytes_.data() + at + sizeof h, h.len}});
            at += sizeof h + round_up(h.len);
        }
    }

private:
    struct Header {
        std::uint64_t position;
        std::int64_t recv_ns;
        std::uint32_t len;
        Kind kind;
    };
    static constexpr std::size_t round_up(std::size_t n) noexcept { return (n + 7) & ~std::size_t{7}; }
    ZeroedArray<std::byte> bytes_;
    std::size_t used_ = 0;
};

// Why a channel wants a snapshot (0: it does not).
enum class SnapshotWant : std::uint8_t { kNone, kLateJoin, kHoleGivenUp };

// What applying a snapshot did.
struct SnapshotApplied {
    std::uint64_t orders = 0;       // orders loaded from the spin
    std::uint64_t continue_at = 0;  // N: the first stream position applied after it
    bool still_suspect = false;     // positions at or after N were lost meanwhile: another snapshot is wanted
};

// Between the MoldUDP64 stream and what its decisions become (`Down`:
// StreamEvents, towards the sequencer or the ring): what the stream
// applies passes on, except for the one channel whose snapshot loads,
// whose messages and given-up holes are kept in the snapshot buffer, in
// order (ITCH50.md "Snapshot recovery"). A late join or a given-up hole on
// a channel with a snapshot service marks the channel as wanting one.
// apply() splices the snapshot in. One thread (the stream's); no
// allocation after construction. The offline replay and the live front
// share it.
class SnapshotRouter {
public:
    static constexpr std::uint32_t kNone = UINT32_MAX;

    // `slots` channel slots, those of the config's channels with `glimpse`
    // served by a snapshot service; the buffer is [glimpse] buffer_mb when
    // any channel has one, else empty.
    SnapshotRouter(const Config& cfg, std::uint32_t slots)
        : buffer_(cfg.any_glimpse() ? cfg.glimpse.buffer_bytes : 0), wanted_(slots), glimpse_(slots) {
        for (std::size_t ch = 0; ch < cfg.channels.size() && ch < slots; ++ch) glimpse_[ch] = !cfg.channels[ch].glimpse.empty();
    }

    // The stream's sink: the router in front of `down`.
    template <class Down, class Stream>
    struct Sink {
        SnapshotRouter& r;
        Down& down;
        const Stream& stream;
        void message(std::uint32_t ch, std::span<const std::byte> m, std::uint64_t position, std::int64_t recv_ns) noexcept {
            if (ch == r.buffering_) [[unlikely]] {
                if (r.buffer_.push(SnapshotBuffer::Kind::kMessage, position, recv_ns, m)) return;
                r.overflow(down);
            }
            down.message(ch, m, position, recv_ns);
        }
        void session_started(std::uint32_t ch, bool replaces_another) noexcept {
            if (ch == r.buffering_) {  // a new stream: the snapshot was of the old one
                r.flush(down);
                r.cancelled_ = true;
            }
            r.wanted_[ch] = SnapshotWant::kNone;
            down.session_started(ch, replaces_another);
        }
        void late_join(std::uint32_t ch, std::uint64_t n) noexcept {
            down.late_join(ch, n);
            if (r.has_glimpse(ch)) r.wanted_[ch] = SnapshotWant::kLateJoin;
        }
        void gave_up(std::uint32_t ch, std::uint64_t lost) noexcept {
            if (ch == r.buffering_) {
                if (r.buffer_.push(SnapshotBuffer::Kind::kGaveUp, stream.channel(ch).next_seq, 0, {})) return;
                r.overflow(down);
            }
            down.gave_up(ch, lost);
            if (r.has_glimpse(ch) && r.wanted_[ch] == SnapshotWant::kNone) r.wanted_[ch] = SnapshotWant::kHoleGivenUp;
        }
        void alive(std::uint32_t ch, std::int64_t recv_ns) noexcept { down.alive(ch, recv_ns); }
    };
    template <class Down, class Stream>
    [[nodiscard]] Sink<Down, Stream> sink(Down& down, const Stream& stream) noexcept {
        return {*this, down, stream};
    }

    // ---- the snapshot's course
    // Channel `ch`'s stream output is kept from now on (the stream is at `next_seq`).
    void begin(std::uint32_t ch, std::uint64_t next_seq) noexcept {
        buffer_.clear();
        buffering_ = ch;
        wanted_[ch] = SnapshotWant::kNone;  // being served
        first_ = next_seq;
        overflowed_ = cancelled_ = false;
    }
    // The snapshot failed: what was kept goes down as it would have.
    template <class Down>
    void flush(Down& down) noexcept {
        const std::uint32_t ch = buffering_;
        buffering_ = kNone;
        if (ch == kNone) return;
        buffer_.each([&](const SnapshotBuffer::Entry& e) {
            if (e.kind == SnapshotBuffer::Kind::kMessage) down.message(ch, e.bytes, e.position, e.recv_ns);
            else down.gave_up(ch, 0);
        });
        buffer_.clear();
    }
    // The snapshot in `spin` (its messages and `M`'s position N) replaces
    // channel `ch`'s books and orders (one kSnapshotReplace event down,
    // carrying the spin: the engine applies it, then marks it applied);
    // the kept output at positions >= N follows, those below are
    // duplicates; the stream continues at N (or where it is, if beyond).
    // The instruments are clean unless positions from N on were lost
    // meanwhile. O(kept output).
    template <class Down, class Stream>
    SnapshotApplied apply(Stream& stream, Down& down, std::uint32_t ch, const SnapshotStorage& spin,
                          std::int64_t now_ns) noexcept {
        SnapshotApplied r;
        const std::uint64_t n = spin.position();
        r.continue_at = n;
        r.orders = spin.orders().size();
        down.snapshot_replace(ch, &spin, n, now_ns);
        std::uint64_t duplicates = 0;
        bool lost_after = false;
        buffering_ = kNone;
        buffer_.each([&](const SnapshotBuffer::Entry& e) {
            if (e.kind == SnapshotBuffer::Kind::kGaveUp) {
                if (e.position > n) lost_after = true;  // some lost position may lie at or after N
                return;
            }
            if (e.position < n) ++duplicates;
            else down.message(ch, e.bytes, e.position, e.recv_ns);
        });
        buffer_.clear();
        stream.count_duplicates(ch, duplicates);
        auto through = sink(down, stream);
        stream.resume_at(ch, n, through);
        if (n < first_) {
            // Applied to the old book before buffering began, not kept: the new
            // book misses them (README "ITCH recovery": given up, another snapshot).
            stream.give_up_positions(ch, first_ - n);
            lost_after = true;
        }
        if (lost_after) {
            stream.mark_given_up(ch);
            down.gave_up(ch, 0);
            wanted_[ch] = SnapshotWant::kHoleGivenUp;
            r.still_suspect = true;
        } else {
            wanted_[ch] = SnapshotWant::kNone;
            if (stream.channel(ch).open_holes == 0) down.alive(ch, now_ns);
        }
        return r;
    }

    [[nodiscard]] std::uint32_t buffering() const noexcept { return buffering_; }
    [[nodiscard]] std::uint64_t first_buffered() const noexcept { return first_; }
    // The buffer filled (its entries went down, buffering stopped) / a session change cancelled the snapshot.
    [[nodiscard]] bool overflowed() const noexcept { return overflowed_; }
    [[nodiscard]] bool cancelled() const noexcept { return cancelled_; }
    [[nodiscard]] SnapshotWant wanted(std::uint32_t ch) const noexcept { return wanted_[ch]; }
    void clear_wanted(std::uint32_t ch) noexcept { wanted_[ch] = SnapshotWant::kNone; }
    void want(std::uint32_t ch, SnapshotWant w) noexcept { wanted_[ch] = w; }
    [[nodiscard]] bool has_glimpse(std::uint32_t ch) const noexcept { return ch < glimpse_.size() && glimpse_[ch]; }
    [[nodiscard]] const SnapshotBuffer& buffer() const noexcept { return buffer_; }

private:
    template <class Down>
    void overflow(Down& down) noexcept {
        flush(down);
        overflowed_ = true;
    }

    SnapshotBuffer buffer_;
    std::vector<SnapshotWant> wanted_;
    std::vector<bool> glimpse_;
    std::uint32_t buffering_ = kNone;
    std::uint64_t first_ = 0;  // the stream's next position when buffering began
    bool overflowed_ = false, cancelled_ = false;
};

}  // namespace tickgate::itch50
