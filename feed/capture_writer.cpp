// Capture writer (pcap µs/ns and pcapng, written directly with stdio) and
// the IPv4 address parser. See capture.hpp.
#include "tickgate/feed/capture.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tickgate/endian.hpp"

namespace tickgate {

namespace {

using tickgate::store_le;


// ---------------------------------------------------------------- helpers

// Little-endian file layout for pcap and pcapng: both formats are read in
// either byte order (the magic tells), so one fixed order is always valid.
constexpr std::uint16_t kPcapVersionMajor = 2;
constexpr std::uint16_t kPcapVersionMinor = 4;
constexpr std::uint32_t kSnaplen = 65535;

constexpr std::uint32_t kPcapngIdb = 0x00000001;
constexpr std::uint32_t kPcapngEpb = 0x00000006;
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

std::string endpoint_text(std::uint32_t ip, std::uint16_t port) {
    return std::to_string(ip >> 24) + '.' + std::to_string((ip >> 16) & 0xFF) + '.' + std::to_string((ip >> 8) & 0xFF) +
           '.' + std::to_string(ip & 0xFF) + ':' + std::to_string(port);
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
            store_le<std::uint32_t>(shb.data() + 0, pcap_magic::kPcapngSection);
            store_le<std::uint32_t>(shb.data() + 4, static_cast<std::uint32_t>(shb.size()));
            store_le<std::uint32_t>(shb.data() + 8, pcap_magic::kPcapngByteOrder);
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
            store_le<std::uint32_t>(hdr.data() + 0, format_ == CaptureFormat::kPcapNano ? pcap_magic::kNano
                                                                                         : pcap_magic::kMicro);
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
                store_be<std::uint16_t>(p + off, kEtherTypeVlan);
                store_be<std::uint16_t>(p + off + 2, vlan_);  // TCI: PCP 0, DEI 0, VID
                off += kVlanTag;
            }
            store_be<std::uint16_t>(p + off, kEtherTypeIpv4);
            break;
        }
        case LinkType::kLinuxSll:
            store_be<std::uint16_t>(p + 0, mcast ? kPacketMulticast : kPacketHost);
            store_be<std::uint16_t>(p + 2, kArphrdEther);
            store_be<std::uint16_t>(p + 4, 6);  // address length
            put_mac(p + 6, kSrcMac);  // 8-byte field, last 2 bytes 0
            store_be<std::uint16_t>(p + 14, kEtherTypeIpv4);
            break;
        case LinkType::kLinuxSll2:
            store_be<std::uint16_t>(p + 0, kEtherTypeIpv4);
            store_be<std::uint16_t>(p + 2, 0);  // reserved
            store_be<std::uint32_t>(p + 4, kSll2IfIndex);
            store_be<std::uint16_t>(p + 8, kArphrdEther);
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
    store_be<std::uint16_t>(ip + 2, static_cast<std::uint16_t>(ip_len));
    store_be<std::uint16_t>(ip + 4, ip_id_++);
    store_be<std::uint16_t>(ip + 6, 0);    // flags (DF clear) + fragment offset 0
    ip[8] = std::byte{1};     // TTL
    ip[9] = std::byte{17};    // UDP
    store_be<std::uint16_t>(ip + 10, 0);
    store_be<std::uint32_t>(ip + 12, src_ip);
    store_be<std::uint32_t>(ip + 16, dst_ip);
    store_be<std::uint16_t>(ip + 10, ipv4_checksum(ip, kIpv4Header));

    // UDP header (checksum 0: not computed, allowed over IPv4).
    std::byte* udp = ip + kIpv4Header;
    store_be<std::uint16_t>(udp + 0, src_port);
    store_be<std::uint16_t>(udp + 2, dst_port);
    store_be<std::uint16_t>(udp + 4, static_cast<std::uint16_t>(kUdpHeader + payload.size()));
    store_be<std::uint16_t>(udp + 6, 0);
    if (!payload.empty()) std::memcpy(udp + kUdpHeader, payload.data(), payload.size());

    write_frame(ts_ns, buf_);
}

}  // namespace tickgate
