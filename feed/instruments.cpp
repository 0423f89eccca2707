#include "tickgate/feed/instruments.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tickgate {

InstrumentTable::InstrumentTable(std::uint32_t max_instruments) : states_(max_instruments) {
    if (max_instruments == 0) throw std::invalid_argument("capacity: max_instruments must be > 0");
    seen_ids_.reserve(max_instruments);
}

void InstrumentTable::define(std::uint32_t id, std::string_view symbol, std::int8_t price_exponent) {
    if (id >= states_.size()) throw std::out_of_range("instrument id beyond max_instruments");
    InstrumentState& st = states_[id];
    const std::size_t n = std::min<std::size_t>(symbol.size(), 16);
    std::memcpy(st.symbol, symbol.data(), n);
    st.symbol[n] = '\0';
    st.price_exponent = price_exponent;
}

void InstrumentTable::set_clock_offset(std::uint16_t channel, std::int64_t offset_ns) {
    auto it = std::find_if(offsets_.begin(), offsets_.end(), [&](const auto& e) { return e.first == channel; });
    if (it == offsets_.end()) offsets_.emplace_back(channel, offset_ns);
    else it->second = offset_ns;
    for (const std::uint32_t id : seen_ids_)
        if (states_[id].channel_id == channel) states_[id].clock_offset_ns = offset_ns;
}

}  // namespace tickgate
