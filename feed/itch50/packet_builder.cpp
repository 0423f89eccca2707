#include "tickgate/feed/itch50/packet_builder.hpp"

#include <algorithm>

#include "tickgate/endian.hpp"
#include "tickgate/feed/itch50/wire.hpp"

namespace tickgate::itch50 {

namespace {
void put_alpha(Bytes& m, std::size_t offset, std::string_view s, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) m[offset + i] = static_cast<std::byte>(i < s.size() ? s[i] : ' ');
}
Bytes mold_header(std::string_view session, std::uint64_t seq, std::uint16_t count) {
    Bytes d(moldudp64::kHeaderSize);
    put_alpha(d, moldudp64::kSessionOffset, session, moldudp64::kSessionSize);
    store_be<std::uint64_t>(d.data() + moldudp64::kSequenceOffset, seq);
    store_be<std::uint16_t>(d.data() + moldudp64::kCountOffset, count);
    return d;
}
}  // namespace

Bytes message(char type, std::uint16_t locate, std::int64_t timestamp_ns, std::size_t unknown_size) {
    const std::size_t size = is_known(static_cast<std::uint8_t>(type)) ? size_of(static_cast<std::uint8_t>(type))
                                                                        : std::max<std::size_t>(unknown_size, 1);
    Bytes m(size);
    m[kTypeOffset] = static_cast<std::byte>(type);
    if (size < kCommonSize) return m;
    store_be<std::uint16_t>(m.data() + kLocateOffset, locate);
    const auto ts = static_cast<std::uint64_t>(timestamp_ns);
    store_be<std::uint16_t>(m.data() + kTimestampOffset, static_cast<std::uint16_t>(ts >> 32));
    store_be<std::uint32_t>(m.data() + kTimestampOffset + 2, static_cast<std::uint32_t>(ts));
    return m;
}

namespace {
// E, C and X start alike: the order reference at 11, shares at 19.
Bytes ref_and_shares(char type, std::uint16_t locate, std::uint64_t ref, std::uint32_t shares, std::int64_t timestamp_ns) {
    Bytes m = message(type, locate, timestamp_ns);
    store_be<std::uint64_t>(m.data() + 11, ref);
    store_be<std::uint32_t>(m.data() + 19, shares);
    return m;
}
}  // namespace

Bytes system_event(char code, std::int64_t timestamp_ns) {
    Bytes m = message('S', 0, timestamp_ns);
    m[11] = static_cast<std::byte>(code);
    return m;
}

Bytes stock_directory(std::uint16_t locate, std::string_view symbol, std::int64_t timestamp_ns) {
    Bytes m = message('R', locate, timestamp_ns);
    put_alpha(m, 11, symbol, kSymbolSize);
    return m;
}

Bytes trading_action(std::uint16_t locate, std::string_view symbol, char state, std::int64_t timestamp_ns) {
    Bytes m = message('H', locate, timestamp_ns);
    put_alpha(m, 11, symbol, kSymbolSize);
    m[19] = static_cast<std::byte>(state);
    return m;
}

Bytes add_order(std::uint16_t locate, std::uint64_t ref, char side, std::uint32_t shares, std::uint32_t price,
                std::int64_t timestamp_ns, bool with_mpid, std::string_view stock) {
    Bytes m = message(with_mpid ? 'F' : 'A', locate, timestamp_ns);
    store_be<std::uint64_t>(m.data() + 11, ref);
    m[19] = static_cast<std::byte>(side);
    store_be<std::uint32_t>(m.data() + 20, shares);
    put_alpha(m, 24, stock, kSymbolSize);
    store_be<std::uint32_t>(m.data() + 32, price);
    if (with_mpid) put_alpha(m, 36, "MPID", 4);
    return m;
}

Bytes executed(std::uint16_t locate, std::uint64_t ref, std::uint32_t shares, std::int64_t timestamp_ns) {
    return ref_and_shares('E', locate, ref, shares, timestamp_ns);
}

Bytes executed_with_price(std::uint16_t locate, std::uint64_t ref, std::uint32_t shares, std::uint32_t price,
                          std::int64_t timestamp_ns) {
    Bytes m = ref_and_shares('C', locate, ref, shares, timestamp_ns);
    m[31] = static_cast<std::byte>('Y');
    store_be<std::uint32_t>(m.data() + 32, price);
    return m;
}

Bytes cancel(std::uint16_t locate, std::uint64_t ref, std::uint32_t shares, std::int64_t timestamp_ns) {
    return ref_and_shares('X', locate, ref, shares, timestamp_ns);
}

Bytes delete_order(std::uint16_t locate, std::uint64_t ref, std::int64_t timestamp_ns) {
    Bytes m = message('D', locate, timestamp_ns);
    store_be<std::uint64_t>(m.data() + 11, ref);
    return m;
}

Bytes replace(std::uint16_t locate, std::uint64_t original_ref, std::uint64_t new_ref, std::uint32_t shares,
              std::uint32_t price, std::int64_t timestamp_ns) {
    Bytes m = message('U', locate, timestamp_ns);
    store_be<std::uint64_t>(m.data() + 11, original_ref);
    store_be<std::uint64_t>(m.data() + 19, new_ref);
    store_be<std::uint32_t>(m.data() + 27, shares);
    store_be<std::uint32_t>(m.data() + 31, price);
    return m;
}

Bytes mold_packet(std::string_view session, std::uint64_t seq, std::span<const Bytes> messages) {
    Bytes d = mold_header(session, seq, static_cast<std::uint16_t>(messages.size()));
    for (const Bytes& m : messages) {
        const std::size_t at = d.size();
        d.resize(at + moldudp64::kBlockHeaderSize);
        store_be<std::uint16_t>(d.data() + at, static_cast<std::uint16_t>(m.size()));
        d.insert(d.end(), m.begin(), m.end());
    }
    return d;
}

Bytes mold_heartbeat(std::string_view session, std::uint64_t next_seq, bool end_of_session) {
    return mold_header(session, next_seq, end_of_session ? moldudp64::kEndOfSessionCount : moldudp64::kHeartbeatCount);
}

Bytes mold_request(std::string_view session, std::uint64_t seq, std::uint16_t count) {
    return mold_header(session, seq, count);
}

}  // namespace tickgate::itch50
