#include "tickgate/feed/instruments.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace tickgate {

namespace {

std::size_t table_size(std::uint32_t capacity) noexcept { return std::bit_ceil(std::size_t{capacity} * 2); }

}  // namespace

std::string_view to_string(SuspectReason r) noexcept {
    switch (r) {
        case SuspectReason::kNone: return "";
        case SuspectReason::kColdStart: return "cold_start";
        case SuspectReason::kGap: return "gap";
        case SuspectReason::kUnconfirmed: return "unconfirmed";
        case SuspectReason::kLateJoin: return "late_join";
        case SuspectReason::kIncomplete: return "incomplete";
    }
    return "";
}

SymbolIndex::SymbolIndex(std::uint32_t capacity)
    : slots_(table_size(capacity)), mask_(slots_.size() - 1), capacity_(capacity) {}

std::size_t SymbolIndex::bytes_for(std::uint32_t capacity) noexcept { return table_size(capacity) * sizeof(Slot); }

std::size_t SymbolIndex::home(std::string_view symbol) const noexcept {
    std::uint64_t h = 14695981039346656037ull;  // FNV-1a
    for (const char c : symbol) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return static_cast<std::size_t>(h ^ (h >> 29)) & mask_;
}

std::size_t SymbolIndex::slot_of(std::string_view symbol) const noexcept {
    // Never loops forever: the table is at least twice the capacity, so an empty slot exists.
    for (std::size_t i = home(symbol);; i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.length == 0 || (s.length == symbol.size() && std::memcmp(s.symbol, symbol.data(), s.length) == 0)) return i;
    }
}

std::uint32_t SymbolIndex::find(std::string_view symbol) const noexcept {
    if (symbol.empty() || symbol.size() > sizeof(Slot::symbol)) return kNone;
    const Slot& s = slots_[slot_of(symbol)];
    return s.length ? s.id : kNone;
}

bool SymbolIndex::insert(std::string_view symbol, std::uint32_t id) noexcept {
    if (symbol.empty() || symbol.size() > sizeof(Slot::symbol)) return false;
    Slot& s = slots_[slot_of(symbol)];
    if (s.length == 0) {
        if (size_ == capacity_) return false;
        std::memcpy(s.symbol, symbol.data(), symbol.size());
        s.length = static_cast<std::uint8_t>(symbol.size());
        ++size_;
    }
    s.id = id;
    return true;
}

void SymbolIndex::erase(std::string_view symbol, std::uint32_t id) noexcept {
    if (symbol.empty() || symbol.size() > sizeof(Slot::symbol)) return;
    std::size_t hole = slot_of(symbol);
    if (slots_[hole].length == 0 || (id != kNone && slots_[hole].id != id)) return;
    slots_[hole].length = 0;
    --size_;
    // Backward shift: move up every later entry of the run whose home is not
    // between the hole and it, so lookups never stop early at the hole.
    for (std::size_t i = (hole + 1) & mask_; slots_[i].length != 0; i = (i + 1) & mask_) {
        const std::size_t h = home({slots_[i].symbol, slots_[i].length});
        const bool stays = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i);
        if (stays) continue;
        slots_[hole] = slots_[i];
        slots_[i].length = 0;
        hole = i;
    }
}

InstrumentTable::InstrumentTable(std::uint32_t max_instruments)
    : states_(max_instruments), symbols_(max_instruments), subscriptions_(max_instruments) {
    if (max_instruments == 0) throw std::invalid_argument("capacity: max_instruments must be > 0");
    seen_ids_.reserve(max_instruments);
}

void InstrumentTable::define(std::uint32_t id, std::string_view symbol, std::int8_t price_exponent) {
    if (id >= states_.size()) throw std::out_of_range("instrument id beyond max_instruments");
    (void)set_symbol(id, symbol);
    states_[id].price_exponent = price_exponent;
}

bool InstrumentTable::set_symbol(std::uint32_t id, std::string_view symbol) noexcept {
    InstrumentState& st = states_[id];
    symbol = symbol.substr(0, 16);
    const std::string_view old(st.symbol);
    if (old != symbol) {
        symbols_.erase(old, id);  // only if the old symbol still names this id
        // An empty symbol (an instrument removed) may have no data pointer at all.
        if (!symbol.empty()) std::memcpy(st.symbol, symbol.data(), symbol.size());
        st.symbol[symbol.size()] = '\0';
        ++st.generation;
        // The index holds as many symbols as there are ids; each id holds at most one.
        (void)symbols_.insert(symbol, id);
    }
    const bool booked = wanted(symbol);
    const bool changed = booked != st.booked;
    st.booked = booked;
    return changed;
}

bool InstrumentTable::subscribe(std::string_view symbol) noexcept {
    if (!subscriptions_.insert(symbol, 0)) return false;
    filtering_ = true;
    return true;
}

void InstrumentTable::unsubscribe(std::string_view symbol) noexcept { subscriptions_.erase(symbol); }

void InstrumentTable::set_clock_offset(std::uint16_t channel, std::int64_t offset_ns) {
    auto it = std::find_if(offsets_.begin(), offsets_.end(), [&](const auto& e) { return e.first == channel; });
    if (it == offsets_.end()) offsets_.emplace_back(channel, offset_ns);
    else it->second = offset_ns;
    for (const std::uint32_t id : seen_ids_)
        if (states_[id].channel_id == channel) states_[id].clock_offset_ns = offset_ns;
}

}  // namespace tickgate
