// ITCH 5.0's own sequencer stage: what moldudp64::Stream applies, in
// position order, reaches the instruments (a channel's stock locates) and
// their order books here (ITCH50.md "ITCH 5.0 messages and the book", "Liveness and the
// gate"). QFB/1's per-instrument sequence rules do not fit: ITCH positions
// belong to the stream, loss is decided once per channel by the stream,
// and the book is order by order, so this stage is the Stream's sink rather
// than a BasicSequencer over Events. It writes the shared InstrumentTable
// (the gate, the summary and the live view read it unchanged) and an
// OrderBook. No allocation, lock or throw per message; engine thread only.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "tickgate/book/order_book.hpp"
#include "tickgate/counter.hpp"
#include "tickgate/feed/instruments.hpp"
#include "tickgate/feed/itch50/decoder.hpp"

namespace tickgate::itch50 {

// Per instrument, beside InstrumentState (summary: "unknown_orders", ...).
struct ItchInstrumentCounters {
    std::uint64_t unknown_orders = 0;   // E/C/X/D/U whose reference is not live
    std::uint64_t over_executions = 0;  // E/C/X of more shares than the order had
    std::uint64_t refused_adds = 0;     // A/F/U refused by a full order store
};

// Per channel, what is not the stream's.
struct ItchChannelCounters {
    RelaxedCounter unknown_messages;         // types ITCH 5.0 does not define, once per position
    RelaxedCounter out_of_range_instruments; // instrument ids beyond the table (a channel without ids)
};

// Every u16 stock locate of a channel is an instrument (ITCH50.md "Locates
// and order references are a channel's own"): id = 65,536 × the channel's
// position + locate, so a single channel's ids are its locates.
inline constexpr std::uint32_t kMaxLocates = 65536;
inline constexpr unsigned kLocateBits = 16;
[[nodiscard]] constexpr std::uint32_t instrument_id(std::uint32_t channel, std::uint16_t locate) noexcept {
    return (channel << kLocateBits) | locate;
}
[[nodiscard]] constexpr std::uint16_t locate_of(std::uint32_t id) noexcept { return static_cast<std::uint16_t>(id); }
// The instrument ids a table needs for `channels` channels (at least one channel's).
[[nodiscard]] constexpr std::uint32_t instrument_ids(std::size_t channels) noexcept {
    return kMaxLocates * static_cast<std::uint32_t>(channels == 0 ? 1 : channels);
}

inline constexpr std::int64_t kNsPerMinute = 60'000'000'000;
// How often, at most, a clean stream refreshes its instruments' liveness.
inline constexpr std::int64_t kAliveRefreshNs = 1'000'000;
inline constexpr std::int64_t kNsPerDay = 24 * 60 * kNsPerMinute;

// `t` wrapped into [-12 h, +12 h).
[[nodiscard]] constexpr std::int64_t wrap_half_day(std::int64_t t) noexcept {
    if (t >= -kNsPerDay / 2 && t < kNsPerDay / 2) [[likely]] return t;  // no division per message
    std::int64_t r = t % kNsPerDay;
    if (r < 0) r += kNsPerDay;
    return r >= kNsPerDay / 2 ? r - kNsPerDay : r;
}
// The venue's UTC offset from one message (ITCH50.md: timestamp minus the
// UTC time of day of its datagram, wrapped into ±12 h, nearest 15 minutes).
[[nodiscard]] constexpr std::int32_t estimate_utc_offset_minutes(std::int64_t timestamp_ns, std::int64_t recv_utc_ns) noexcept {
    const std::int64_t diff = wrap_half_day(timestamp_ns - recv_utc_ns);
    const std::int64_t quarter = 15 * kNsPerMinute;
    const std::int64_t q = (diff >= 0 ? diff + quarter / 2 : diff - quarter / 2) / quarter;
    return static_cast<std::int32_t>(q * 15);
}

class Sequencer {
public:
    // Writes `instruments` (ids: instrument_id(channel slot, locate); a
    // channel whose ids lie beyond the table counts out_of_range_instruments)
    // and `book` (its reference scopes: kLocateBits); `max_channels` dense
    // channel slots, as the Stream's. `utc_offset_minutes`: venue time
    // minus UTC ([itch] utc_offset_minutes); nullopt: "auto", from the first
    // message applied of each channel and session.
    Sequencer(InstrumentTable& instruments, OrderBook& book, std::uint32_t max_channels,
              std::optional<std::int32_t> utc_offset_minutes)
        : instruments_(instruments), book_(book), channels_(max_channels),
          per_instrument_(instruments.max_instruments()), fixed_offset_(utc_offset_minutes) {}

    // ---- moldudp64::Stream's sink
    void message(std::uint32_t ch, std::span<const std::byte> m, std::uint64_t position, std::int64_t recv_ns) noexcept {
        apply(ch, decode_message(m, position), recv_ns);
    }
    void session_started(std::uint32_t ch, bool replaces_another) noexcept;
    void late_join(std::uint32_t ch, std::uint64_t) noexcept { make_channel_suspect(ch, SuspectReason::kLateJoin); }
    void gave_up(std::uint32_t ch, std::uint64_t) noexcept { make_channel_suspect(ch, SuspectReason::kGap); }
    void alive(std::uint32_t ch, std::int64_t recv_ns) noexcept;

    // A snapshot replaces channel `ch`'s books (ITCH50.md "Snapshot
    // recovery"): every instrument of the channel emptied, its incomplete
    // marks dropped and the channel no longer suspect; the snapshot's
    // messages follow through apply(). O(1) per instrument of the channel.
    void replace_channel(std::uint32_t ch) noexcept;

    // f(id) for every instrument channel `ch` has seen in this session (each once). Engine thread.
    template <class F>
    void each_instrument(std::uint32_t ch, F&& f) const noexcept {
        for (std::uint32_t id = channels_[ch].first_instrument; id != kNoInstrument; id = per_instrument_[id].next_in_channel)
            f(id);
    }

    // One applied message of channel `ch` (what message() does after decoding).
    void apply(std::uint32_t ch, const OrderMessage& o, std::int64_t recv_ns) noexcept;

    // Acts on the instrument table's subscriptions (InstrumentTable::subscribe):
    // an instrument no longer booked loses its orders; one booked again is
    // suspect for the rest of the session (the orders added before are
    // unknown: no snapshot on this feed). Engine thread; O(max_instruments).
    void apply_subscriptions() noexcept;

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

private:
    static constexpr std::uint32_t kNoInstrument = UINT32_MAX;
    struct PerInstrument {
        ItchInstrumentCounters counters;
        std::uint32_t next_in_channel = kNoInstrument;
        char trading_state = 0;
        bool refused = false;  // a full store refused one of its adds: its book is incomplete
        bool rebooked = false; // booked after orders went by unkept: its book is incomplete
        bool named = false;    // a directory or an add gave it its symbol in this session
    };
    struct Channel {
        std::uint32_t first_instrument = kNoInstrument;
        bool suspect = false;     // late join or given-up hole in this session: every instrument
        SuspectReason cause = SuspectReason::kNone;  // which, the first in the session
        bool has_offset = false;
        std::int32_t offset_minutes = 0;
        char system_event = 0;
        std::int64_t last_alive_ns = 0;
        bool ever_alive = false;
        bool new_instruments = false;  // bound since the last liveness refresh
        ItchChannelCounters counters;
    };

    // The instrument `locate` on channel `ch`, bound on first sight; kNoInstrument if not ours.
    std::uint32_t instrument(std::uint32_t ch, std::uint16_t locate) noexcept;
    void make_channel_suspect(std::uint32_t ch, SuspectReason why) noexcept;
    void refresh_suspect(std::uint32_t ch, std::uint32_t id) noexcept;
    // The symbol of an instrument no directory names (yet, or in this session): its locate in decimal.
    void name_by_locate(std::uint32_t id) noexcept;
    void order(std::uint32_t id, const OrderMessage& o, bool seen_in_session) noexcept;
    // Gives `id` the symbol of `o` (R, A, F), unless it is blank; whether it did.
    bool name(std::uint32_t id, const OrderMessage& o, bool seen_in_session) noexcept;
    // `missed`: messages of the instrument went by in this session unkept.
    void on_booking_changed(std::uint32_t id, bool missed) noexcept;

    InstrumentTable& instruments_;
    OrderBook& book_;
    std::vector<Channel> channels_;
    std::vector<PerInstrument> per_instrument_;
    std::optional<std::int32_t> fixed_offset_;
};

inline std::uint32_t Sequencer::instrument(std::uint32_t ch, std::uint16_t locate) noexcept {
    Channel& c = channels_[ch];
    const std::uint32_t id = instrument_id(ch, locate);
    if (id >= instruments_.max_instruments()) {
        c.counters.out_of_range_instruments.add();
        return kNoInstrument;
    }
    InstrumentState& st = instruments_.state(id);
    if (st.bound) return id;  // the id is the channel's own: no other channel can reach it
    st.bound = true;
    st.channel_id = static_cast<std::uint16_t>(ch);
    st.clock_offset_ns = instruments_.clock_offset(st.channel_id);
    st.price_exponent = kPriceExponent;  // the table and the live view show dollars
    if (st.symbol[0] == '\0') name_by_locate(id);
    per_instrument_[id].next_in_channel = c.first_instrument;
    c.first_instrument = id;
    c.new_instruments = true;
    instruments_.mark_seen(id);
    refresh_suspect(ch, id);
    return id;
}

inline void Sequencer::name_by_locate(std::uint32_t id) noexcept {
    // Written past the symbol index: find() never answers a placeholder.
    InstrumentState& st = instruments_.state(id);
    const auto end = std::to_chars(st.symbol, st.symbol + sizeof st.symbol - 1, locate_of(id)).ptr;
    *end = '\0';
}

// Suspect: the channel lost or never had part of the session, a full store
// refused one of its adds, or it has never been alive (first seen after
// the last refresh).
inline void Sequencer::refresh_suspect(std::uint32_t ch, std::uint32_t id) noexcept {
    InstrumentState& st = instruments_.state(id);
    const PerInstrument& pi = per_instrument_[id];
    const Channel& c = channels_[ch];
    st.suspect = c.suspect || pi.refused || pi.rebooked || !st.alive;
    st.cause = c.suspect                     ? c.cause
               : pi.refused || pi.rebooked   ? SuspectReason::kIncomplete
                                             : SuspectReason::kNone;  // never alive: a cold start
}

inline void Sequencer::make_channel_suspect(std::uint32_t ch, SuspectReason why) noexcept {
    Channel& c = channels_[ch];
    if (!c.suspect) c.cause = why;
    c.suspect = true;
    for (std::uint32_t id = c.first_instrument; id != kNoInstrument; id = per_instrument_[id].next_in_channel) {
        InstrumentState& st = instruments_.state(id);
        st.suspect = true;
        st.cause = c.cause;
    }
}

inline void Sequencer::alive(std::uint32_t ch, std::int64_t recv_ns) noexcept {
    Channel& c = channels_[ch];
    // Walking every instrument of the channel per packet cost ~2 µs a
    // message with 5,000 stocks (bench BM_Itch_Pipeline): at most once per
    // kAliveRefreshNs instead. last_alive then lags by less than that, so the
    // gate errs towards "stale" by under a millisecond, never towards fresh.
    // An instrument bound since the last refresh is refreshed at once (it
    // would otherwise stay suspect as never alive).
    if (c.ever_alive && !c.new_instruments && recv_ns - c.last_alive_ns < kAliveRefreshNs) return;
    c.last_alive_ns = recv_ns;
    c.ever_alive = true;
    c.new_instruments = false;
    for (std::uint32_t id = c.first_instrument; id != kNoInstrument; id = per_instrument_[id].next_in_channel) {
        InstrumentState& st = instruments_.state(id);
        st.last_alive_ns = recv_ns;
        if (!st.alive) {
            st.alive = true;
            refresh_suspect(ch, id);
        }
    }
}

inline void Sequencer::replace_channel(std::uint32_t ch) noexcept {
    Channel& c = channels_[ch];
    c.suspect = false;
    for (std::uint32_t id = c.first_instrument; id != kNoInstrument; id = per_instrument_[id].next_in_channel) {
        book_.clear(id);
        per_instrument_[id].refused = false;
        per_instrument_[id].rebooked = false;
        per_instrument_[id].trading_state = 0;
        refresh_suspect(ch, id);
    }
}

inline void Sequencer::session_started(std::uint32_t ch, bool replaces_another) noexcept {
    Channel& c = channels_[ch];
    c.suspect = false;
    c.cause = SuspectReason::kNone;
    c.has_offset = false;
    if (!replaces_another) return;
    // Only the channel's own instruments and orders: O(1) per instrument
    // (OrderBook::clear), never a walk of the store or of other channels.
    for (std::uint32_t id = c.first_instrument; id != kNoInstrument; id = per_instrument_[id].next_in_channel) {
        InstrumentState& st = instruments_.state(id);
        book_.clear(id);
        st.last_seq = 0;
        st.known = false;
        st.has_source = false;
        per_instrument_[id].refused = false;
        per_instrument_[id].rebooked = false;
        per_instrument_[id].named = false;
        per_instrument_[id].trading_state = 0;
        // Stock locates are the day's: until the new session's directory
        // names it again, the locate has no symbol (find() answers none, the
        // old handles read `unknown`), so an engine never trades yesterday's
        // symbol on whatever the locate means today. The summary and the
        // table show the locate meanwhile, as before any directory.
        (void)instruments_.set_symbol(id, {});
        name_by_locate(id);
        refresh_suspect(ch, id);
    }
}

inline void Sequencer::apply(std::uint32_t ch, const OrderMessage& o, std::int64_t recv_ns) noexcept {
    Channel& c = channels_[ch];
    if (o.action == Action::kUnknownType) {
        c.counters.unknown_messages.add();
        return;
    }
    if (!c.has_offset) {
        c.has_offset = true;
        c.offset_minutes = fixed_offset_ ? *fixed_offset_ : estimate_utc_offset_minutes(o.timestamp_ns, recv_ns);
    }
    if (o.action == Action::kSystemEvent) c.system_event = o.code;
    if (o.stock_locate == 0) return;  // belongs to no instrument
    const std::uint32_t id = instrument(ch, o.stock_locate);
    if (id == kNoInstrument) return;
    InstrumentState& st = instruments_.state(id);
    const bool seen_in_session = st.known;
    ++st.counters.accepted;
    st.last_seq = o.position;
    st.known = true;
    // The message's venue time of day as a UTC instant near its arrival:
    // the gate's age is then `now` in venue time minus the timestamp, wrapped into ±12 h.
    const std::int64_t venue_now = recv_ns + std::int64_t{c.offset_minutes} * kNsPerMinute;
    st.last_source_ns = recv_ns - wrap_half_day(venue_now - o.timestamp_ns);
    st.has_source = true;
    order(id, o, seen_in_session);
}

inline void Sequencer::order(std::uint32_t id, const OrderMessage& o, bool seen_in_session) noexcept {
    PerInstrument& pi = per_instrument_[id];
    OrderResult r = OrderResult::kApplied;
    switch (o.action) {
        case Action::kStockDirectory:
            pi.named = true;
            name(id, o, seen_in_session);
            return;
        case Action::kAdd:
            // An add names its stock too: a capture joined after the
            // directory (a late join) still shows symbols, and the locate
            // beside them. Once per session; a directory after it decides.
            if (!pi.named) [[unlikely]] pi.named = name(id, o, seen_in_session);
            break;
        case Action::kTradingAction: pi.trading_state = o.code; return;
        default: break;
    }
    if (!instruments_.state(id).booked) [[unlikely]] return;  // not subscribed: sequenced, no orders kept
    switch (o.action) {
        case Action::kAdd: r = book_.add(id, o.order_ref, o.side == 'S' ? Side::kAsk : Side::kBid, o.shares, o.price); break;
        case Action::kExecute:
        case Action::kCancel: r = book_.reduce(id, o.order_ref, o.shares); break;
        case Action::kDelete: r = book_.remove(id, o.order_ref); break;
        case Action::kReplace: r = book_.replace(id, o.order_ref, o.new_order_ref, o.shares, o.price); break;
        default: return;
    }
    switch (r) {
        case OrderResult::kUnknownOrder: ++pi.counters.unknown_orders; break;
        case OrderResult::kOverExecution: ++pi.counters.over_executions; break;
        case OrderResult::kStoreFull:
            ++pi.counters.refused_adds;
            pi.refused = true;
            instruments_.state(id).suspect = true;
            if (instruments_.state(id).cause == SuspectReason::kNone) instruments_.state(id).cause = SuspectReason::kIncomplete;
            break;
        default: break;
    }
}

inline bool Sequencer::name(std::uint32_t id, const OrderMessage& o, bool seen_in_session) noexcept {
    std::size_t n = kSymbolSize;
    while (n > 0 && o.symbol[n - 1] == ' ') --n;
    if (n == 0) return false;  // no symbol: the locate stays its name
    // Through the table: find(symbol) and subscriptions follow the day's
    // names; a locate given another symbol retires old handles.
    if (instruments_.set_symbol(id, {o.symbol, n})) on_booking_changed(id, seen_in_session);
    return true;
}

inline void Sequencer::on_booking_changed(std::uint32_t id, bool missed) noexcept {
    InstrumentState& st = instruments_.state(id);
    if (!st.booked) {
        // Its orders are no longer kept.
        book_.clear(id);
        return;
    }
    if (!missed) return;
    per_instrument_[id].rebooked = true;
    st.suspect = true;
    if (st.cause == SuspectReason::kNone) st.cause = SuspectReason::kIncomplete;
}

inline void Sequencer::apply_subscriptions() noexcept {
    for (std::uint32_t id = 0; id < instruments_.max_instruments(); ++id) {
        InstrumentState& st = instruments_.state(id);
        const bool booked = instruments_.wanted(st.symbol);
        if (booked == st.booked) continue;
        st.booked = booked;
        on_booking_changed(id, st.known);
    }
}

}  // namespace tickgate::itch50
