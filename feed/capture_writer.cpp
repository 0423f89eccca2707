// Capture writer (pcap µs/ns and pcapng, written directly with stdio), the
// QFB/1 packet builder and the IPv4 address parser. See capture.hpp.
#include "tickgate/capture.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tickgate/wire.hpp"

namespace tickgate {

namespace {

using wire::store_le;

// ---------------------------------------------------------------- helpers

void store_be16(std::byte* p, std::uint16_t v) noexcept {
    p[0] = static_cast<std::byte>(v >> 8);
    p[1] = static_cast<std::byte>(v);
}

void store_be32(std::byte* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::byte>(v >> 24);
    p[1] = static_cast<std::byte>(v >> 16);
    p[2] = static_cast<std::byte>(v >> 8);
    p[3] = static_cast<std::byte>(v);
}

// Little-endian file layout for pcap and pcapng: both formats are read in
// either byte order (the magic tells), so one fixed order is always valid.
constexpr std::uint32_t kPcapMagicMicro = 0xa1b2c3d4;
constexpr std::uint32_t kPcapMagicNano = 0xa1b23c4d;
constexpr std::uint16_t kPcapVersionMajor = 2;
constexpr std::uint16_t kPcapVersionMinor = 4;
constexpr std::uint32_t kSnaplen = 65535;

constexpr std::uint32_t kPcapngShb = 0x0A0D0D0A;
constexpr std::uint32_t kPcapngIdb = 0x00000001;
constexpr std::uint32_t kPcapngEpb = 0x00000006;
constexpr std::uint32_t kPcapngByteOrderMagic = 0x1A2B3C4D;
constexpr std::uint16_t kOptEndOfOpt = 0;
constexpr std::uint16_t kOptIfTsresol = 9;

constexpr std::size_t kEthHeader = 14;
constexpr std::size_t kVlanTag = 4;
constexpr std::size_t kSllHeader = 16;
constexpr std::size_t kSll2Header = 20;
constexpr std::size_t kNullHeader = 4;
constexpr std::size_t kIpv4Header = 20;
constexpr std::size_t kUdpHeader = 8;
constexpr std::size_t kMaxUdpPayload = 65535 - kIpv4Header - kUdpHeader;

constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeVlan = 0x8100;
constexpr std::uint16_t kArphrdEther = 1;
constexpr std::uint8_t kPacketHost = 0;
constexpr std::uint8_t kPacketMulticast = 2;
constexpr std::uint32_t kSll2IfIndex = 1;
constexpr std::uint32_t kAfInet = 2;

constexpr std::array<std::uint8_t, 6> kSrcMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
constexpr std::array<std::uint8_t, 6> kUnicastDstMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

bool is_multicast(std::uint32_t ip) noexcept { return (ip >> 28) == 0xE; }

void put_mac(std::byte* p, const std::array<std::uint8_t, 6>& mac) noexcept {
    for (std::size_t i = 0; i < mac.size(); ++i) p[i] = static_cast<std::byte>(mac[i]);
}

std::array<std::uint8_t, 6> dst_mac_for(std::uint32_t dst_ip) noexcept {
    if (!is_multicast(dst_ip)) return kUnicastDstMac;
    // RFC 1112: 01:00:5e + the low 23 bits of the group address.
    return {0x01, 0x00, 0x5e, static_cast<std::uint8_t>((dst_ip >> 16) & 0x7f),
            static_cast<std::uint8_t>(dst_ip >> 8), static_cast<std::uint8_t>(dst_ip)};
}

std::uint16_t ipv4_checksum(const std::byte* p, std::size_t n) noexcept {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < n; i += 2)
        sum += (std::to_integer<std::uint32_t>(p[i]) << 8) | std::to_integer<std::uint32_t>(p[i + 1]);
    if (n % 2 != 0) sum += std::to_integer<std::uint32_t>(p[n - 1]) << 8;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

[[noreturn]] void throw_io(const std::string& path, const char* what, int err) {
    throw CaptureWriteError(path + ": " + what + ": " + std::strerror(err));
}

void write_all(std::FILE* f, const std::string& path, const void* data, std::size_t n) {
    if (n == 0) return;
    errno = 0;
    if (std::fwrite(data, 1, n, f) != n) {
        const int err = errno != 0 ? errno : EIO;
        throw_io(path, "write failed", err);
    }
}

std::size_t pad4(std::size_t n) noexcept { return (n + 3) & ~std::size_t{3}; }

}  // namespace

// ------------------------------------------------------------ parse_ipv4

std::optional<std::uint32_t> parse_ipv4(std::string_view text) noexcept {
    std::uint32_t addr = 0;
    std::size_t pos = 0;
    for (int part = 0; part < 4; ++part) {
        if (part > 0) {
            if (pos >= text.size() || text[pos] != '.') return std::nullopt;
            ++pos;
        }
        const std::size_t start = pos;
        std::uint32_t value = 0;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
            if (pos - start >= 3) return std::nullopt;  // more than 3 digits
            value = value * 10 + static_cast<std::uint32_t>(text[pos] - '0');
            ++pos;
        }
        const std::size_t digits = pos - start;
        if (digits == 0) return std::nullopt;                       // empty part / sign / space
        if (digits > 1 && text[start] == '0') return std::nullopt;  // leading zero (octal ambiguity)
        if (value > 255) return std::nullopt;
        addr = (addr << 8) | value;
    }
    if (pos != text.size()) return std::nullopt;  // trailing characters
    return addr;
}

// ---------------------------------------------------------- PacketBuilder

PacketBuilder::PacketBuilder(std::uint16_t channel, std::uint32_t session, std::uint64_t packet_seq,
                             std::int64_t send_ns)
    : buf_(wire::kPacketHeaderSize) {
    std::byte* h = buf_.data();
    store_le<std::uint16_t>(h + 0, wire::kMagic);
    store_le<std::uint8_t>(h + 2, wire::kVersion);
    store_le<std::uint8_t>(h + 3, 0);
    store_le<std::uint16_t>(h + 4, 0);
    store_le<std::uint16_t>(h + 6, channel);
    store_le<std::uint32_t>(h + 8, session);
    store_le<std::uint64_t>(h + 12, packet_seq);
    store_le<std::int64_t>(h + 20, send_ns);
}

std::byte* PacketBuilder::grow(std::size_t n, char type) {
    if (n < wire::kMessageHeaderSize || n > std::numeric_limits<std::uint16_t>::max())
        throw std::length_error("PacketBuilder: message length " + std::to_string(n) +
                                " does not fit the 16-bit length field");
    if (count_ == std::numeric_limits<std::uint16_t>::max())
        throw std::length_error("PacketBuilder: msg_count would overflow");
    const std::size_t off = buf_.size();
    buf_.resize(off + n);  // value-initialised: pads and reserved bytes are 0
    std::byte* m = buf_.data() + off;
    store_le<std::uint16_t>(m + 0, static_cast<std::uint16_t>(n));
    store_le<std::uint8_t>(m + 2, static_cast<std::uint8_t>(type));
    store_le<std::uint8_t>(m + 3, 0);
    ++count_;
    store_le<std::uint16_t>(buf_.data() + 4, count_);
    return m;
}

PacketBuilder& PacketBuilder::definition(std::uint32_t id, std::string_view symbol,
                                         std::int8_t price_exponent) {
    constexpr std::size_t kSymbol = 16;
    if (symbol.size() > kSymbol)
        throw std::length_error("PacketBuilder: symbol longer than 16 bytes: " + std::string(symbol));
    std::byte* m = grow(wire::kDefinitionSize, 'I');
    store_le<std::uint32_t>(m + 4, id);
    if (!symbol.empty()) std::memcpy(m + 8, symbol.data(), symbol.size());  // rest stays NUL
    store_le<std::int8_t>(m + 24, price_exponent);
    return *this;
}

PacketBuilder& PacketBuilder::quote(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                                    std::int64_t bid_px, std::uint32_t bid_qty, std::int64_t ask_px,
                                    std::uint32_t ask_qty) {
    std::byte* m = grow(wire::kQuoteSize, 'Q');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, seq);
    store_le<std::int64_t>(m + 16, source_ns);
    store_le<std::int64_t>(m + 24, bid_px);
    store_le<std::int64_t>(m + 32, ask_px);
    store_le<std::uint32_t>(m + 40, bid_qty);
    store_le<std::uint32_t>(m + 44, ask_qty);
    return *this;
}

PacketBuilder& PacketBuilder::delta(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                                    std::int64_t price, std::uint32_t qty, std::uint8_t side,
                                    std::uint8_t action) {
    std::byte* m = grow(wire::kDeltaSize, 'D');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, seq);
    store_le<std::int64_t>(m + 16, source_ns);
    store_le<std::int64_t>(m + 24, price);
    store_le<std::uint32_t>(m + 32, qty);
    store_le<std::uint8_t>(m + 36, side);
    store_le<std::uint8_t>(m + 37, action);
    return *this;
}

PacketBuilder& PacketBuilder::snapshot(std::uint32_t id, std::uint64_t seq, std::int64_t source_ns,
                                       std::span<const SnapLevel> bids,
                                       std::span<const SnapLevel> asks) {
    constexpr std::size_t kMaxSide = std::numeric_limits<std::uint8_t>::max();
    if (bids.size() > kMaxSide || asks.size() > kMaxSide)
        throw std::length_error("PacketBuilder: more than 255 levels on one side of a snapshot");
    const std::size_t n = bids.size() + asks.size();
    std::byte* m = grow(wire::kSnapshotHeaderSize + wire::kSnapshotLevelSize * n, 'S');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, seq);
    store_le<std::int64_t>(m + 16, source_ns);
    store_le<std::uint8_t>(m + 24, static_cast<std::uint8_t>(bids.size()));
    store_le<std::uint8_t>(m + 25, static_cast<std::uint8_t>(asks.size()));
    std::byte* lv = m + wire::kSnapshotHeaderSize;
    for (const auto side : {bids, asks}) {
        for (const SnapLevel& l : side) {
            store_le<std::int64_t>(lv, l.price);
            store_le<std::uint32_t>(lv + 8, l.qty);
            lv += wire::kSnapshotLevelSize;  // 4 pad bytes stay 0
        }
    }
    return *this;
}

PacketBuilder& PacketBuilder::heartbeat(std::uint32_t id, std::uint64_t next_seq, std::int64_t source_ns) {
    std::byte* m = grow(wire::kHeartbeatSize, 'H');
    store_le<std::uint32_t>(m + 4, id);
    store_le<std::uint64_t>(m + 8, next_seq);
    store_le<std::int64_t>(m + 16, source_ns);
    return *this;
}

PacketBuilder& PacketBuilder::raw_message(char type, std::span<const std::byte> body) {
    std::byte* m = grow(wire::kMessageHeaderSize + body.size(), type);
    if (!body.empty()) std::memcpy(m + wire::kMessageHeaderSize, body.data(), body.size());
    return *this;
}

// ---------------------------------------------------------- CaptureWriter

CaptureWriter::CaptureWriter(const std::string& path, CaptureFormat format, LinkType link,
                             std::uint16_t vlan)
    : path_(path), format_(format), link_(link), vlan_(vlan) {
    if (format != CaptureFormat::kPcapMicro && format != CaptureFormat::kPcapNano &&
        format != CaptureFormat::kPcapng)
        throw CaptureError(path + ": unknown capture format");
    errno = 0;
    f_ = std::fopen(path.c_str(), "wb");
    if (f_ == nullptr) throw_io(path, "cannot open for writing", errno != 0 ? errno : EIO);

    const auto linktype = static_cast<std::uint32_t>(link_);
    try {
        if (format_ == CaptureFormat::kPcapng) {
            // Section Header Block: no options, section length unknown (-1).
            std::array<std::byte, 28> shb{};
            store_le<std::uint32_t>(shb.data() + 0, kPcapngShb);
            store_le<std::uint32_t>(shb.data() + 4, static_cast<std::uint32_t>(shb.size()));
            store_le<std::uint32_t>(shb.data() + 8, kPcapngByteOrderMagic);
            store_le<std::uint16_t>(shb.data() + 12, 1);  // major
            store_le<std::uint16_t>(shb.data() + 14, 0);  // minor
            store_le<std::int64_t>(shb.data() + 16, -1);  // section length
            store_le<std::uint32_t>(shb.data() + 24, static_cast<std::uint32_t>(shb.size()));
            write_all(f_, path_, shb.data(), shb.size());

            // Interface Description Block with if_tsresol = 9 (10^-9 s).
            std::array<std::byte, 32> idb{};
            store_le<std::uint32_t>(idb.data() + 0, kPcapngIdb);
            store_le<std::uint32_t>(idb.data() + 4, static_cast<std::uint32_t>(idb.size()));
            store_le<std::uint16_t>(idb.data() + 8, static_cast<std::uint16_t>(linktype));
            store_le<std::uint16_t>(idb.data() + 10, 0);  // reserved
            store_le<std::uint32_t>(idb.data() + 12, kSnaplen);
            store_le<std::uint16_t>(idb.data() + 16, kOptIfTsresol);
            store_le<std::uint16_t>(idb.data() + 18, 1);  // option length
            store_le<std::uint8_t>(idb.data() + 20, 9);   // value, then 3 pad bytes
            store_le<std::uint16_t>(idb.data() + 24, kOptEndOfOpt);
            store_le<std::uint16_t>(idb.data() + 26, 0);
            store_le<std::uint32_t>(idb.data() + 28, static_cast<std::uint32_t>(idb.size()));
            write_all(f_, path_, idb.data(), idb.size());
        } else {
            std::array<std::byte, 24> hdr{};
            store_le<std::uint32_t>(hdr.data() + 0, format_ == CaptureFormat::kPcapNano ? kPcapMagicNano
                                                                                         : kPcapMagicMicro);
            store_le<std::uint16_t>(hdr.data() + 4, kPcapVersionMajor);
            store_le<std::uint16_t>(hdr.data() + 6, kPcapVersionMinor);
            store_le<std::int32_t>(hdr.data() + 8, 0);    // thiszone
            store_le<std::uint32_t>(hdr.data() + 12, 0);  // sigfigs
            store_le<std::uint32_t>(hdr.data() + 16, kSnaplen);
            store_le<std::uint32_t>(hdr.data() + 20, linktype);
            write_all(f_, path_, hdr.data(), hdr.size());
        }
    } catch (...) {
        std::fclose(f_);
        f_ = nullptr;
        throw;
    }
}

CaptureWriter::~CaptureWriter() {
    if (f_ != nullptr) {
        std::fflush(f_);
        std::fclose(f_);
    }
}

void CaptureWriter::flush() {
    if (f_ == nullptr) return;
    errno = 0;
    if (std::fflush(f_) != 0) throw_io(path_, "write failed", errno != 0 ? errno : EIO);
}

void CaptureWriter::write_frame(std::int64_t ts_ns, std::span<const std::byte> frame) {
    if (ts_ns < 0) throw CaptureError(path_ + ": negative timestamp " + std::to_string(ts_ns));
    const auto uts = static_cast<std::uint64_t>(ts_ns);
    if (frame.size() > std::numeric_limits<std::uint32_t>::max())
        throw CaptureError(path_ + ": frame too large");
    const auto orig_len = static_cast<std::uint32_t>(frame.size());
    const std::uint32_t cap_len = std::min(orig_len, kSnaplen);

    if (format_ == CaptureFormat::kPcapng) {
        const std::size_t padded = pad4(cap_len);
        const auto total = static_cast<std::uint32_t>(32 + padded);
        std::array<std::byte, 28> head{};
        store_le<std::uint32_t>(head.data() + 0, kPcapngEpb);
        store_le<std::uint32_t>(head.data() + 4, total);
        store_le<std::uint32_t>(head.data() + 8, 0);  // interface id
        store_le<std::uint32_t>(head.data() + 12, static_cast<std::uint32_t>(uts >> 32));
        store_le<std::uint32_t>(head.data() + 16, static_cast<std::uint32_t>(uts));
        store_le<std::uint32_t>(head.data() + 20, cap_len);
        store_le<std::uint32_t>(head.data() + 24, orig_len);
        std::array<std::byte, 8> tail{};  // up to 3 pad bytes + trailing length
        const std::size_t pad = padded - cap_len;
        store_le<std::uint32_t>(tail.data() + pad, total);
        write_all(f_, path_, head.data(), head.size());
        write_all(f_, path_, frame.data(), cap_len);
        write_all(f_, path_, tail.data(), pad + 4);
    } else {
        const std::uint64_t sec = uts / 1'000'000'000;
        if (sec > std::numeric_limits<std::uint32_t>::max())
            throw CaptureError(path_ + ": timestamp beyond the 32-bit pcap range");
        const std::uint64_t sub_ns = uts % 1'000'000'000;
        const std::uint64_t frac = format_ == CaptureFormat::kPcapNano ? sub_ns : sub_ns / 1000;
        std::array<std::byte, 16> rec{};
        store_le<std::uint32_t>(rec.data() + 0, static_cast<std::uint32_t>(sec));
        store_le<std::uint32_t>(rec.data() + 4, static_cast<std::uint32_t>(frac));
        store_le<std::uint32_t>(rec.data() + 8, cap_len);
        store_le<std::uint32_t>(rec.data() + 12, orig_len);
        write_all(f_, path_, rec.data(), rec.size());
        write_all(f_, path_, frame.data(), cap_len);
    }
}

void CaptureWriter::write_udp(std::int64_t ts_ns, std::uint32_t src_ip, std::uint16_t src_port,
                              std::uint32_t dst_ip, std::uint16_t dst_port,
                              std::span<const std::byte> payload) {
    if (payload.size() > kMaxUdpPayload)
        throw CaptureError(path_ + ": UDP payload of " + std::to_string(payload.size()) +
                           " bytes does not fit an IPv4 datagram");

    // Link-layer header.
    std::size_t link_len = 0;
    switch (link_) {
        case LinkType::kEthernet: link_len = kEthHeader + (vlan_ != 0 ? kVlanTag : 0); break;
        case LinkType::kLinuxSll: link_len = kSllHeader; break;
        case LinkType::kLinuxSll2: link_len = kSll2Header; break;
        case LinkType::kRaw:
        case LinkType::kIpv4: link_len = 0; break;
        case LinkType::kNull: link_len = kNullHeader; break;
        default:
            throw CaptureError(path_ + ": cannot build UDP frames for link type " +
                               std::to_string(static_cast<unsigned>(link_)));
    }
    const std::size_t ip_len = kIpv4Header + kUdpHeader + payload.size();
    buf_.assign(link_len + ip_len, std::byte{0});
    std::byte* p = buf_.data();
    const bool mcast = is_multicast(dst_ip);

    switch (link_) {
        case LinkType::kEthernet: {
            put_mac(p, dst_mac_for(dst_ip));
            put_mac(p + 6, kSrcMac);
            std::size_t off = 12;
            if (vlan_ != 0) {
                store_be16(p + off, kEtherTypeVlan);
                store_be16(p + off + 2, vlan_);  // TCI: PCP 0, DEI 0, VID
                off += kVlanTag;
            }
            store_be16(p + off, kEtherTypeIpv4);
            break;
        }
        case LinkType::kLinuxSll:
            store_be16(p + 0, mcast ? kPacketMulticast : kPacketHost);
            store_be16(p + 2, kArphrdEther);
            store_be16(p + 4, 6);  // address length
            put_mac(p + 6, kSrcMac);  // 8-byte field, last 2 bytes 0
            store_be16(p + 14, kEtherTypeIpv4);
            break;
        case LinkType::kLinuxSll2:
            store_be16(p + 0, kEtherTypeIpv4);
            store_be16(p + 2, 0);  // reserved
            store_be32(p + 4, kSll2IfIndex);
            store_be16(p + 8, kArphrdEther);
            p[10] = static_cast<std::byte>(mcast ? kPacketMulticast : kPacketHost);
            p[11] = std::byte{6};  // address length
            put_mac(p + 12, kSrcMac);
            break;
        case LinkType::kNull: {
            const std::uint32_t af = kAfInet;  // host byte order, as BSD loopback captures
            std::memcpy(p, &af, sizeof af);
            break;
        }
        default: break;  // raw: the IPv4 packet starts the frame
    }

    // IPv4 header.
    std::byte* ip = p + link_len;
    ip[0] = std::byte{0x45};  // version 4, IHL 5
    ip[1] = std::byte{0};     // DSCP/ECN
    store_be16(ip + 2, static_cast<std::uint16_t>(ip_len));
    store_be16(ip + 4, ip_id_++);
    store_be16(ip + 6, 0);    // flags (DF clear) + fragment offset 0
    ip[8] = std::byte{1};     // TTL
    ip[9] = std::byte{17};    // UDP
    store_be16(ip + 10, 0);
    store_be32(ip + 12, src_ip);
    store_be32(ip + 16, dst_ip);
    store_be16(ip + 10, ipv4_checksum(ip, kIpv4Header));

    // UDP header (checksum 0: not computed, allowed over IPv4).
    std::byte* udp = ip + kIpv4Header;
    store_be16(udp + 0, src_port);
    store_be16(udp + 2, dst_port);
    store_be16(udp + 4, static_cast<std::uint16_t>(kUdpHeader + payload.size()));
    store_be16(udp + 6, 0);
    if (!payload.empty()) std::memcpy(udp + kUdpHeader, payload.data(), payload.size());

    write_frame(ts_ns, buf_);
}

}  // namespace tickgate
