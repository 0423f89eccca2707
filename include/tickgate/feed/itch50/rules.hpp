// ITCH 5.0's sequencing rules (ITCH50.md "ITCH 5.0 messages and the book",
// "Liveness and the gate"), the policy the shared BasicSequencer is
// instantiated with. Positions belong to the MoldUDP64 stream, which
// applies every message exactly once and in order (moldudp64/stream.hpp),
// so nothing here counts duplicates or gaps per instrument: loss is
// decided once per channel by the stream and arrives as channel events
// (late join, hole given up), and the book is order by order (OrderBook).
// A stock locate is an instrument of its channel, bound on first sight.
// The per-channel and per-instrument facts ITCH keeps beyond the shared
// InstrumentState live in Rules::State, which the sequencer owns. No
// allocation, lock or throw per event; engine thread only.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "tickgate/book/order_book.hpp"
#include "tickgate/counter.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/itch50/decoder.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/sequencer.hpp"

namespace tickgate::itch50 {

// Per instrument, beside InstrumentState (summary: "unknown_orders", ...).
struct ItchInstrumentCounters {
    std::uint64_t unknown_orders = 0;   // E/C/X/D/U whose reference is not live
    std::uint64_t over_executions = 0;  // E/C/X of more shares than the order had
    std::uint64_t refused_adds = 0;     // A/F/U refused by a full order store
};

// Per channel, what is not the stream's.
struct ItchChannelCounters {
    RelaxedCounter unknown_messages;  // types ITCH 5.0 does not define, once per position
};

inline constexpr std::int64_t kNsPerMinute = 60'000'000'000;
inline constexpr std::int64_t kNsPerDay = 24 * 60 * kNsPerMinute;

// The last multiple of a day at or before `t` (floor, for negative `t` too).
[[nodiscard]] constexpr std::int64_t day_floor(std::int64_t t) noexcept {
    const std::int64_t r = t % kNsPerDay;
    return t - (r < 0 ? r + kNsPerDay : r);
}
// `t` wrapped into [-12 h, +12 h).
[[nodiscard]] constexpr std::int64_t wrap_half_day(std::int64_t t) noexcept {
    if (t >= -kNsPerDay / 2 && t < kNsPerDay / 2) [[likely]] return t;  // no division per message
    const std::int64_t r = t - day_floor(t);  // [0, 24 h)
    return r >= kNsPerDay / 2 ? r - kNsPerDay : r;
}
static_assert(day_floor(0) == 0 && day_floor(kNsPerDay - 1) == 0 && day_floor(kNsPerDay) == kNsPerDay);
static_assert(day_floor(-1) == -kNsPerDay && day_floor(-kNsPerDay) == -kNsPerDay);
static_assert(wrap_half_day(kNsPerDay / 2) == -kNsPerDay / 2 && wrap_half_day(-kNsPerDay / 2 - 1) == kNsPerDay / 2 - 1);
// The venue's UTC offset from one message (ITCH50.md: timestamp minus the
// UTC time of day of its datagram, wrapped into ±12 h, nearest 15 minutes).
[[nodiscard]] constexpr std::int32_t estimate_utc_offset_minutes(std::int64_t timestamp_ns, std::int64_t recv_utc_ns) noexcept {
    const std::int64_t diff = wrap_half_day(timestamp_ns - recv_utc_ns);
    const std::int64_t quarter = 15 * kNsPerMinute;
    const std::int64_t q = (diff >= 0 ? diff + quarter / 2 : diff - quarter / 2) / quarter;
    return static_cast<std::int32_t>(q * 15);
}

// The order book the rules drive. An order book is built from orders: it
// takes ITCH's order events (apply), and no bare price level (a GLIMPSE
// snapshot is orders too), so append_levels drops every level.
class Book : public OrderBook {
public:
    using OrderBook::OrderBook;
    // A live handler's book: `capacity.max_instruments` ids, [itch] max_orders and max_levels.
    Book(const Config& cfg, const Capacity& capacity)
        : OrderBook(capacity.max_instruments, cfg.itch.max_orders, cfg.itch.max_levels, kLocateBits) {}
    [[nodiscard]] static std::size_t bytes_for(const Config& cfg, const Capacity& capacity) noexcept {
        return OrderBook::bytes_for(capacity.max_instruments, cfg.itch.max_orders, cfg.itch.max_levels);
    }
    using OrderBook::bytes_for;
    // One order event of instrument `id` (kAddBid ... kReplace); other kinds change nothing.
    [[nodiscard]] OrderResult apply_order(std::uint32_t id, const Event& ev) noexcept {
        switch (kind_of(ev.kind)) {
            case Kind::kAddBid:
            case Kind::kAddAsk: {
                const AddFields a = venue_fields<AddFields>(ev);
                return add(id, a.order_ref, ev.kind == kAddAsk ? Side::kAsk : Side::kBid, a.shares, a.price);
            }
            case Kind::kReduce: {
                const ReduceFields r = venue_fields<ReduceFields>(ev);
                return reduce(id, r.order_ref, r.shares);
            }
            case Kind::kDelete: return remove(id, venue_fields<ReduceFields>(ev).order_ref);
            case Kind::kReplace: {
                const ReplaceFields u = venue_fields<ReplaceFields>(ev);
                return replace(id, u.order_ref, u.new_order_ref, u.shares, u.price);
            }
            default: return OrderResult::kApplied;
        }
    }
    // SequencedBook.
    BookEffect apply(std::uint32_t id, const Event& ev) noexcept {
        const OrderResult r = apply_order(id, ev);
        return {r != OrderResult::kUnknownOrder && r != OrderResult::kStoreFull, 0};
    }
    std::uint32_t append_levels(std::uint32_t, Side, const std::int64_t*, const std::uint32_t*, std::uint32_t count) noexcept {
        return count;
    }
};

struct Rules {
    using Book = itch50::Book;
    // Ids are a channel's own (instrument_id): the carrying channel is the only one.
    static constexpr ChannelBinding kBinding = ChannelBinding::kCarryingChannel;
    static constexpr bool kDefinitionsBindInstrument = false;  // ITCH sends no kDefinition
    static constexpr bool kSnapshotHoleEmptiesBuffer = false;  // nor levels snapshots: nothing is buffered

    // What ITCH keeps per channel slot and per instrument id. Start-up sizes it.
    class State {
    public:
        // Makes `instruments` keep liveness per channel (ids are a channel's: its block of kLocateBits).
        State(InstrumentTable& instruments, const Capacity&)
            : channels_(std::max<std::uint32_t>(1, (instruments.max_instruments() + kMaxLocates - 1) / kMaxLocates)),
              per_instrument_(instruments.max_instruments()),
              seen_(instruments.max_instruments()) {
            instruments.share_liveness_by_block(kLocateBits);
        }
        // Start-up: `max_channels` channel slots (the stream's); venue time
        // minus UTC ([itch] utc_offset_minutes), nullopt: "auto", from the
        // first message applied of each channel and session.
        void configure(std::uint32_t max_channels, std::optional<std::int32_t> utc_offset_minutes) {
            channels_ = std::vector<Channel>(std::max<std::uint32_t>(1, max_channels));
            fixed_offset_ = utc_offset_minutes;
        }
        // The same from a live config: its channels, [itch] utc_offset_minutes (apply_config).
        void configure(const Config& cfg) {
            configure(static_cast<std::uint32_t>(cfg.channels.size()), cfg.itch.utc_offset_minutes);
        }

        // What configure() and the constructor allocate for `ids` instrument ids
        // and `channels` slots, with the instrument table's liveness clocks.
        [[nodiscard]] static constexpr std::size_t bytes_for(std::uint32_t ids, std::uint32_t channels) noexcept {
            const std::size_t clocks = ids == 0 ? 0 : ((ids - 1) >> kLocateBits) + 1;
            return std::size_t{ids} * (sizeof(PerInstrument) + sizeof(Seen)) + std::size_t{channels} * sizeof(Channel) +
                   clocks * sizeof(std::int64_t);
        }

        [[nodiscard]] const ItchInstrumentCounters& counters(std::uint32_t id) const noexcept { return per_instrument_[id].counters; }
        [[nodiscard]] const ItchChannelCounters& channel_counters(std::uint32_t ch) const noexcept { return channels_[ch].counters; }
        // The trading state of `id` from its last H ('T' trading, 'H' halted, ...; 0 before any).
        [[nodiscard]] char trading_state(std::uint32_t id) const noexcept { return per_instrument_[id].trading_state; }
        // The last S event code of channel `ch` (0 before any).
        [[nodiscard]] char system_event(std::uint32_t ch) const noexcept { return channels_[ch].system_event; }
        // Venue time minus UTC for channel `ch` in this session (configured or estimated); nullopt before any message.
        [[nodiscard]] std::optional<std::int32_t> utc_offset_minutes(std::uint32_t ch) const noexcept {
            const Channel& c = channels_[ch];
            if (!c.has_offset) return std::nullopt;
            return c.offset_minutes;
        }
        // f(id) for every instrument channel `ch` has bound (each once).
        template <class F>
        void each_instrument(std::uint32_t ch, F&& f) const noexcept {
            for (std::uint32_t id = channels_[ch].first_instrument; id != kNoInstrument; id = per_instrument_[id].next_in_channel)
                f(id);
        }
        [[nodiscard]] std::uint32_t channels() const noexcept { return static_cast<std::uint32_t>(channels_.size()); }

    private:
        friend struct Rules;
        static constexpr std::uint32_t kNoInstrument = UINT32_MAX;
        struct PerInstrument {
            ItchInstrumentCounters counters;
            std::uint32_t next_in_channel = kNoInstrument;
            char trading_state = 0;
            bool refused = false;  // a full store refused one of its adds: its book is incomplete
            bool rebooked = false; // booked after orders went by unkept: its book is incomplete
        };
        // What every message of an instrument reads, apart: two bytes an id,
        // so a channel's thousands of stocks stay in cache (in PerInstrument,
        // 40 bytes an id, they missed on most messages of the day-like flow).
        struct Seen {
            bool linked = false;  // in its channel's list (bound once, for good: ids are the channel's)
            bool named = false;   // a directory or an add gave it its symbol in this session
        };
        struct Channel {
            std::uint32_t first_instrument = kNoInstrument;
            bool suspect = false;     // late join or given-up hole in this session: every instrument
            SuspectReason cause = SuspectReason::kNone;  // which, the first in the session
            bool has_offset = false;
            std::int32_t offset_minutes = 0;
            // A multiple of a day at most a day below the channel's venue
            // clock: a message's age is taken from the clock's distance to
            // it (any multiple gives the same age, wrapped), so the clock's
            // distance from 1970 costs no division per message.
            std::int64_t day_base = 0;
            char system_event = 0;
            std::uint32_t unrefreshed = 0;  // bound since the last alive packet: the head of the list
            ItchChannelCounters counters;
        };
        std::vector<Channel> channels_;
        std::vector<PerInstrument> per_instrument_;
        std::vector<Seen> seen_;
        std::optional<std::int32_t> fixed_offset_;
    };

    [[nodiscard]] static constexpr bool is_hot(EventKind k) noexcept { return k >= kAddBid && k <= kStockMessage; }
    [[nodiscard]] static constexpr bool is_channel_event(EventKind k) noexcept {
        return k >= kChannelMessage && k <= kSnapshotReplace;
    }

    // One message of a stock: accepted (the stream has placed it), its
    // source time taken, then its order action on the book.
    template <class Seq>
    [[gnu::always_inline]] static Update on_hot(Seq& seq, InstrumentState& st, const Event& ev) noexcept {
        State& s = seq.venue_;
        const std::uint32_t id = ev.instrument_id;
        const std::uint32_t ch = channel_of(id);
        if (ch >= s.channels_.size()) [[unlikely]] return {id, Verdict::kOutOfRange, false, st.suspect, 0};
        State::Channel& c = s.channels_[ch];
        take_offset(s, c, ev);
        if (ev.kind == kStockMessage && venue_fields<CodeFields>(ev).type == 'S') [[unlikely]]
            c.system_event = venue_fields<CodeFields>(ev).code;
        State::Seen& seen = s.seen_[id];
        if (!seen.linked) [[unlikely]] link(seq, st, id);
        const bool seen_in_session = st.known;
        ++st.counters.accepted;
        st.last_seq = ev.u.venue.seq;
        st.known = true;
        // The message's venue time of day as a UTC instant near its arrival:
        // the gate's age is then `now` in venue time minus the timestamp, wrapped into ±12 h.
        const std::int64_t venue_now = ev.recv_ns + std::int64_t{c.offset_minutes} * kNsPerMinute;
        if (static_cast<std::uint64_t>(venue_now) - static_cast<std::uint64_t>(c.day_base) >= std::uint64_t{kNsPerDay}) [[unlikely]]
            c.day_base = day_floor(venue_now);  // a new day (or the first message)
        st.last_source_ns = ev.recv_ns - wrap_half_day(venue_now - c.day_base - ev.u.venue.source_ns);
        st.has_source = true;
        return {id, Verdict::kAccepted, order(seq, st, seen, id, ev, seen_in_session), st.suspect, 0};
    }

    // On the channel's instruments: O(instruments of the channel), except
    // messages without a locate and unknown types (O(1)).
    template <class Seq>
    static Update on_channel_event(Seq& seq, const Event& ev) noexcept {
        State& s = seq.venue_;
        const std::uint32_t ch = channel_of(ev.instrument_id);
        if (ch >= s.channels_.size()) [[unlikely]] return {ev.instrument_id, Verdict::kOutOfRange, false, false, 0};
        State::Channel& c = s.channels_[ch];
        const Update none{ev.instrument_id, Verdict::kChannelEvent, false, c.suspect, 0};
        switch (kind_of(ev.kind)) {
            case Kind::kUnknownMessage: c.counters.unknown_messages.add(); return none;
            case Kind::kChannelMessage:
                take_offset(s, c, ev);
                if (venue_fields<CodeFields>(ev).type == 'S') c.system_event = venue_fields<CodeFields>(ev).code;
                return none;
            case Kind::kLateJoin: make_channel_suspect(seq, c, SuspectReason::kLateJoin); break;
            case Kind::kGaveUp: make_channel_suspect(seq, c, SuspectReason::kGap); break;
            case Kind::kAlive: alive(seq, c, ch, ev.recv_ns); break;
            case Kind::kSessionStarted: session_started(seq, c, venue_fields<CodeFields>(ev).code != 0); break;
            case Kind::kSnapshotReplace:
                replace_channel(seq, c);
                apply_spin(seq, ch, ev);
                break;
            default: break;
        }
        return {ev.instrument_id, Verdict::kChannelEvent, ev.kind == kSessionStarted || ev.kind == kSnapshotReplace,
                c.suspect, 0};
    }

    // Subscriptions (BasicSequencer::apply_subscriptions) and directories
    // that rename a locate: an instrument no longer booked loses its
    // orders; one booked again after orders of this session went by unkept
    // is suspect for the rest of the session (no snapshot repairs a single
    // stock: its orders added before are unknown).
    template <class Seq>
    static void on_booking_changed(Seq& seq, InstrumentState& st, std::uint32_t id) noexcept {
        booking_changed(seq, st, id, st.known);
    }

private:
    using Channel = State::Channel;
    using PerInstrument = State::PerInstrument;
    using Seen = State::Seen;

    static void take_offset(State& s, Channel& c, const Event& ev) noexcept {
        if (c.has_offset) [[likely]] return;
        c.has_offset = true;
        c.offset_minutes = s.fixed_offset_ ? *s.fixed_offset_ : estimate_utc_offset_minutes(ev.u.venue.source_ns, ev.recv_ns);
    }

    // First sight of instrument `id` (already bound by the sequencer): its
    // exponent, a placeholder name, its channel's list, its suspect state.
    template <class Seq>
    static void link(Seq& seq, InstrumentState& st, std::uint32_t id) noexcept {
        State& s = seq.venue_;
        Channel& c = s.channels_[channel_of(id)];
        st.price_exponent = kPriceExponent;  // the table and the live view show dollars
        if (st.symbol[0] == '\0') name_by_locate(st, id);
        PerInstrument& pi = s.per_instrument_[id];
        s.seen_[id].linked = true;
        pi.next_in_channel = c.first_instrument;
        c.first_instrument = id;
        ++c.unrefreshed;
        refresh_suspect(c, pi, st);
    }

    // The symbol of an instrument no directory names (yet, or in this
    // session): its locate in decimal, written past the symbol index, so
    // find() never answers a placeholder.
    static void name_by_locate(InstrumentState& st, std::uint32_t id) noexcept {
        const auto end = std::to_chars(st.symbol, st.symbol + sizeof st.symbol - 1, locate_of(id)).ptr;
        *end = '\0';
    }

    // Suspect: the channel lost or never had part of the session, a full
    // store refused one of its adds, or it has never been alive (first seen
    // after the last refresh).
    static void refresh_suspect(const Channel& c, const PerInstrument& pi, InstrumentState& st) noexcept {
        st.suspect = c.suspect || pi.refused || pi.rebooked || !st.alive;
        st.cause = c.suspect                   ? c.cause
                   : pi.refused || pi.rebooked ? SuspectReason::kIncomplete
                                               : SuspectReason::kNone;  // never alive: a cold start
    }

    template <class Seq>
    static void make_channel_suspect(Seq& seq, Channel& c, SuspectReason why) noexcept {
        if (!c.suspect) c.cause = why;
        c.suspect = true;
        for (std::uint32_t id = c.first_instrument; id != State::kNoInstrument; id = seq.venue_.per_instrument_[id].next_in_channel) {
            InstrumentState& st = seq.state(id);
            st.suspect = true;
            st.cause = c.cause;
        }
    }

    // A packet applied (or a heartbeat) with no hole open: every instrument
    // of channel `ch` is alive. One clock per channel
    // (InstrumentTable::share_liveness_by_block), O(1) a packet: a walk of
    // the channel's instruments took ~11 µs with 5,000 stocks, and at one a
    // millisecond of capture time a replay of the simulator's ITCH flow
    // spent more than half its time walking. Only the instruments bound
    // since the last alive packet (the head of the list) are walked, to
    // leave their cold start.
    template <class Seq>
    static void alive(Seq& seq, Channel& c, std::uint32_t ch, std::int64_t recv_ns) noexcept {
        seq.instruments_.set_block_alive(ch, recv_ns);
        for (std::uint32_t id = c.first_instrument; c.unrefreshed != 0 && id != State::kNoInstrument;
             id = seq.venue_.per_instrument_[id].next_in_channel, --c.unrefreshed) {
            InstrumentState& st = seq.state(id);
            st.last_alive_ns = recv_ns;
            if (!st.alive) {
                st.alive = true;
                refresh_suspect(c, seq.venue_.per_instrument_[id], st);
            }
        }
        c.unrefreshed = 0;
    }

    // A snapshot replaces the channel's books (ITCH50.md "Snapshot
    // recovery"): every instrument emptied, its incomplete marks dropped,
    // the channel no longer suspect. O(1) per instrument of the channel.
    template <class Seq>
    static void replace_channel(Seq& seq, Channel& c) noexcept {
        c.suspect = false;
        for (std::uint32_t id = c.first_instrument; id != State::kNoInstrument; id = seq.venue_.per_instrument_[id].next_in_channel) {
            PerInstrument& pi = seq.venue_.per_instrument_[id];
            seq.book_.clear(id);
            pi.refused = false;
            pi.rebooked = false;
            pi.trading_state = 0;
            refresh_suspect(c, pi, seq.state(id));
        }
    }

    // The spin a kSnapshotReplace carries, applied to the emptied books: its
    // messages stand at the position before N (their instruments'
    // last_seq), state first (a directory decides what is booked); then the
    // spin is marked applied, so its storage may be reused. O(spin).
    // The spin's events carry the replace event's channel id (the
    // configured one: the carrying channel binds an instrument).
    template <class Seq>
    static void apply_spin(Seq& seq, std::uint32_t ch, const Event& replace) noexcept {
        const SnapshotFields f = venue_fields<SnapshotFields>(replace);
        if (f.spin == nullptr) return;
        const std::uint64_t at = f.position - 1;
        const auto apply = [&](const SnapshotRecord& r) {
            Event ev = to_event(ch, SnapshotStorage::message(r, at), replace.recv_ns);
            ev.channel_id = replace.channel_id;
            (void)seq.apply(ev);
        };
        for (const SnapshotRecord& r : f.spin->states()) apply(r);
        for (const SnapshotRecord& r : f.spin->orders()) apply(r);
        f.spin->mark_applied();
    }

    template <class Seq>
    static void session_started(Seq& seq, Channel& c, bool replaces_another) noexcept {
        c.suspect = false;
        c.cause = SuspectReason::kNone;
        c.has_offset = false;
        if (!replaces_another) return;
        // Only the channel's own instruments and orders: O(1) per instrument
        // (OrderBook::clear), never a walk of the store or of other channels.
        for (std::uint32_t id = c.first_instrument; id != State::kNoInstrument; id = seq.venue_.per_instrument_[id].next_in_channel) {
            InstrumentState& st = seq.state(id);
            PerInstrument& pi = seq.venue_.per_instrument_[id];
            seq.book_.clear(id);
            st.last_seq = 0;
            st.known = false;
            st.has_source = false;
            pi.refused = false;
            pi.rebooked = false;
            seq.venue_.seen_[id].named = false;
            pi.trading_state = 0;
            // Stock locates are the day's: until the new session's directory
            // names it again, the locate has no symbol (find() answers none, the
            // old handles read `unknown`), so an engine never trades yesterday's
            // symbol on whatever the locate means today. The summary and the
            // table show the locate meanwhile, as before any directory.
            (void)seq.instruments_.set_symbol(id, {});
            name_by_locate(st, id);
            refresh_suspect(c, pi, st);
        }
    }

    // The message's effect on names, trading state and the book; whether the book changed.
    template <class Seq>
    [[gnu::always_inline]] static bool order(Seq& seq, InstrumentState& st, Seen& seen, std::uint32_t id,
                                             const Event& ev, bool seen_in_session) noexcept {
        PerInstrument& pi = seq.venue_.per_instrument_[id];  // read only off the common path
        switch (kind_of(ev.kind)) {
            case Kind::kDirectory:
                seen.named = true;
                name(seq, st, id, ev, seen_in_session);
                return false;
            case Kind::kAddBid:
            case Kind::kAddAsk:
                // An add names its stock too: a capture joined after the
                // directory (a late join) still shows symbols, and the locate
                // beside them. Once per session; a directory after it decides.
                if (!seen.named) [[unlikely]] seen.named = name(seq, st, id, ev, seen_in_session);
                break;
            case Kind::kTradingAction: pi.trading_state = venue_fields<CodeFields>(ev).code; return false;
            case Kind::kStockMessage: return false;
            default: break;
        }
        if (!st.booked) [[unlikely]] return false;  // not subscribed: sequenced, no orders kept
        switch (seq.book_.apply_order(id, ev)) {
            case OrderResult::kApplied: return true;
            case OrderResult::kUnknownOrder: ++pi.counters.unknown_orders; return false;
            case OrderResult::kOverExecution: ++pi.counters.over_executions; return true;
            case OrderResult::kStoreFull:
                ++pi.counters.refused_adds;
                pi.refused = true;
                st.suspect = true;
                if (st.cause == SuspectReason::kNone) st.cause = SuspectReason::kIncomplete;
                return false;
            default: return true;
        }
    }

    // Gives `id` the symbol of an add or directory, unless it is blank; whether it did.
    template <class Seq>
    static bool name(Seq& seq, InstrumentState& st, std::uint32_t id, const Event& ev, bool seen_in_session) noexcept {
        const AddFields a = venue_fields<AddFields>(ev);
        std::size_t n = kSymbolSize;
        while (n > 0 && a.symbol[n - 1] == ' ') --n;
        if (n == 0) return false;  // no symbol: the locate stays its name
        // Through the table: find(symbol) and subscriptions follow the day's
        // names; a locate given another symbol retires old handles.
        if (seq.instruments_.set_symbol(id, {a.symbol, n})) booking_changed(seq, st, id, seen_in_session);
        return true;
    }

    // `missed`: messages of the instrument went by in this session unkept.
    template <class Seq>
    static void booking_changed(Seq& seq, InstrumentState& st, std::uint32_t id, bool missed) noexcept {
        if (!st.booked) {
            seq.book_.clear(id);  // its orders are no longer kept
            return;
        }
        if (!missed) return;
        seq.venue_.per_instrument_[id].rebooked = true;
        st.suspect = true;
        if (st.cause == SuspectReason::kNone) st.cause = SuspectReason::kIncomplete;
    }
};

static_assert(SequencingRules<Rules>);

// ITCH's sequencer: the shared one with its rules.
using Sequencer = BasicSequencer<Rules>;

// The shared sequencer's capacity for `ids` ITCH instrument ids: no
// recovery pool (the stream holds and re-requests, a snapshot replaces
// whole channels; nothing is buffered per instrument).
[[nodiscard]] constexpr Capacity sequencer_capacity(std::uint32_t ids, Capacity c = {}) noexcept {
    c.max_instruments = ids;
    c.recovery_instruments = 0;
    c.recovery_depth = 0;
    return c;
}

// StreamEvents' output where the sequencer runs on the stream's thread
// (offline replay, tests): each event applied at once.
struct ApplyToSequencer {
    Sequencer& seq;
    void operator()(const Event& ev) const noexcept { (void)seq.apply(ev); }
};

}  // namespace tickgate::itch50
