// Builds MDP 3.0 datagrams for the tests, byte by byte (wire.hpp's offsets
// are not used, so a wrong offset there fails the tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tickgate::mdp3::test {

class Bytes {
public:
    template <class T>
    Bytes& put(T v) {
        const std::size_t at = b_.size();
        b_.resize(at + sizeof(T));
        std::memcpy(b_.data() + at, &v, sizeof(T));  // tests run little-endian (x86-64)
        return *this;
    }
    Bytes& zeros(std::size_t n) {
        b_.resize(b_.size() + n);
        return *this;
    }
    Bytes& chars(std::string_view s, std::size_t n) {
        const std::size_t at = b_.size();
        b_.resize(at + n);
        std::memcpy(b_.data() + at, s.data(), s.size() < n ? s.size() : n);
        return *this;
    }
    Bytes& append(const Bytes& o) {
        b_.insert(b_.end(), o.b_.begin(), o.b_.end());
        return *this;
    }
    [[nodiscard]] std::size_t size() const { return b_.size(); }
    [[nodiscard]] const std::vector<std::byte>& bytes() const { return b_; }
    std::vector<std::byte>& bytes() { return b_; }

private:
    std::vector<std::byte> b_;
};

// A message: MsgSize, SBE header, root, groups (MsgSize filled by finish()).
inline Bytes message(std::uint16_t template_id, std::uint16_t version, const Bytes& root, const Bytes& groups) {
    Bytes m;
    m.put<std::uint16_t>(static_cast<std::uint16_t>(10 + root.size() + groups.size()))
        .put<std::uint16_t>(static_cast<std::uint16_t>(root.size()))
        .put<std::uint16_t>(template_id)
        .put<std::uint16_t>(1)
        .put<std::uint16_t>(version);
    return m.append(root).append(groups);
}

inline Bytes packet(std::uint32_t seq, std::uint64_t sending_ns) {
    Bytes p;
    p.put(seq).put(sending_ns);
    return p;
}

// Incremental root: TransactTime, MatchEventIndicator, 2 bytes of padding.
inline Bytes incremental_root(std::uint64_t transact_ns) {
    Bytes r;
    r.put(transact_ns).put<std::uint8_t>(0x81).zeros(2);
    return r;
}

inline Bytes group_header(std::uint16_t block_length, std::uint8_t count) {
    Bytes g;
    g.put(block_length).put(count);
    return g;
}
inline Bytes group_header8(std::uint16_t block_length, std::uint8_t count) {
    Bytes g;
    g.put(block_length).zeros(5).put(count);
    return g;
}

// A book entry of template 32 / 46 (32 bytes).
inline Bytes book_entry(std::int64_t px, std::int32_t size, std::int32_t security_id, std::uint32_t rpt_seq,
                        std::uint8_t level, std::uint8_t action, char type, std::int32_t orders = 1) {
    Bytes e;
    e.put(px).put(size).put(security_id).put(rpt_seq).put(orders).put(level).put(action).put(type).zeros(5);
    return e;
}

// A snapshot (38 / 52) root of 59 bytes and its 22-byte entries.
inline Bytes snapshot_root(std::int32_t security_id, std::uint32_t rpt_seq, std::uint64_t transact_ns) {
    Bytes r;
    r.put<std::uint32_t>(7).put<std::uint32_t>(1).put(security_id).put(rpt_seq).put(transact_ns).put(transact_ns)
        .put<std::uint16_t>(0).put<std::uint8_t>(17).zeros(24);
    return r;
}
inline Bytes snapshot_entry(std::int64_t px, std::int32_t size, std::int8_t level, char type) {
    Bytes e;
    e.put(px).put(size).put<std::int32_t>(1).put(level).put<std::uint16_t>(0).put<std::uint8_t>(0).put<std::uint8_t>(0).put(type);
    return e;
}

}  // namespace tickgate::mdp3::test
