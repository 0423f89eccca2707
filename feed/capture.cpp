#include "tickgate/capture.hpp"

#include <pcap/pcap.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "tickgate/wire.hpp"

namespace tickgate {

namespace {

inline std::uint16_t be16(const std::byte* p) noexcept {
    return static_cast<std::uint16_t>((std::to_integer<unsigned>(p[0]) << 8) | std::to_integer<unsigned>(p[1]));
}
inline std::uint32_t be32(const std::byte* p) noexcept {
    return (std::uint32_t{be16(p)} << 16) | be16(p + 2);
}

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherVlan = 0x8100;
constexpr std::uint16_t kEtherQinQ = 0x88a8;

std::optional<UdpDatagram> parse_ipv4_udp(std::span<const std::byte> ip, FrameCounters& c) noexcept {
    if (ip.size() < 20) {
        ++c.truncated;
        return std::nullopt;
    }
    const unsigned version = std::to_integer<unsigned>(ip[0]) >> 4;
    if (version != 4) {
        ++c.non_ip;
        return std::nullopt;
    }
    const std::size_t ihl = (std::to_integer<unsigned>(ip[0]) & 0x0f) * 4u;
    const std::size_t total = be16(ip.data() + 2);
    if (ihl < 20 || total < ihl || total > ip.size()) {
        ++c.truncated;
        return std::nullopt;
    }
    const std::uint16_t frag = be16(ip.data() + 6);
    if ((frag & 0x2000) != 0 || (frag & 0x1fff) != 0) {  // MF set or non-zero offset
        ++c.fragments;
        return std::nullopt;
    }
    if (std::to_integer<unsigned>(ip[9]) != 17) {
        ++c.non_udp;
        return std::nullopt;
    }
    const std::span<const std::byte> udp = ip.subspan(ihl, total - ihl);
    if (udp.size() < 8) {
        ++c.truncated;
        return std::nullopt;
    }
    const std::size_t udp_len = be16(udp.data() + 4);
    if (udp_len < 8 || udp_len > udp.size()) {
        ++c.truncated;
        return std::nullopt;
    }
    ++c.udp_datagrams;
    return UdpDatagram{be32(ip.data() + 12), be32(ip.data() + 16), be16(udp.data()), be16(udp.data() + 2),
                       udp.subspan(8, udp_len - 8)};
}

}  // namespace

std::optional<UdpDatagram> extract_udp(LinkType link, std::span<const std::byte> f,
                                       FrameCounters& c) noexcept {
    std::size_t off = 0;
    std::uint16_t proto = 0;
    switch (link) {
        case LinkType::kEthernet:
            if (f.size() < 14) break;
            proto = be16(f.data() + 12);
            off = 14;
            while ((proto == kEtherVlan || proto == kEtherQinQ) && f.size() >= off + 4) {
                proto = be16(f.data() + off + 2);
                off += 4;
            }
            if (proto == kEtherVlan || proto == kEtherQinQ) {
                ++c.truncated;
                return std::nullopt;
            }
            break;
        case LinkType::kLinuxSll:
            if (f.size() < 16) break;
            proto = be16(f.data() + 14);
            off = 16;
            break;
        case LinkType::kLinuxSll2:
            if (f.size() < 20) break;
            proto = be16(f.data());
            off = 20;
            break;
        case LinkType::kNull: {
            if (f.size() < 4) break;
            std::uint32_t family;
            std::memcpy(&family, f.data(), 4);  // host order of the capturing machine
            const bool inet = family == 2 || family == 0x02000000u;
            proto = inet ? kEtherIpv4 : 0;
            off = 4;
            break;
        }
        case LinkType::kRaw:
        case LinkType::kIpv4:
            proto = kEtherIpv4;
            break;
    }
    if (off == 0 && proto == 0) {
        ++c.truncated;  // shorter than its link header
        return std::nullopt;
    }
    if (proto != kEtherIpv4) {
        ++c.non_ip;
        return std::nullopt;
    }
    return parse_ipv4_udp(f.subspan(off), c);
}

struct CaptureReader::Impl {
    pcap_t* pcap = nullptr;
    ~Impl() {
        if (pcap) pcap_close(pcap);
    }
};

CaptureReader::CaptureReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0)
        throw CaptureError(path + ": cannot open: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw CaptureError(path + ": is a directory, expected a pcap or pcapng file");
    if (!S_ISREG(st.st_mode)) throw CaptureError(path + ": not a regular file, expected a pcap or pcapng file");
    if (st.st_size == 0) throw CaptureError(path + ": empty file, expected a pcap or pcapng file");
    file_size_ = static_cast<std::uint64_t>(st.st_size);

    char err[PCAP_ERRBUF_SIZE] = {};
    impl_->pcap = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    if (!impl_->pcap) throw CaptureError(path + ": not a readable pcap/pcapng capture: " + err);
    const int dlt = pcap_datalink(impl_->pcap);
    switch (dlt) {
        case DLT_EN10MB: link_ = LinkType::kEthernet; break;
        case DLT_LINUX_SLL: link_ = LinkType::kLinuxSll; break;
#ifdef DLT_LINUX_SLL2
        case DLT_LINUX_SLL2: link_ = LinkType::kLinuxSll2; break;
#endif
        case DLT_RAW: link_ = LinkType::kRaw; break;
#ifdef DLT_IPV4
        case DLT_IPV4: link_ = LinkType::kIpv4; break;
#endif
        case DLT_NULL: link_ = LinkType::kNull; break;
        default:
            throw CaptureError(path + ": link type " + std::to_string(dlt) + " (" +
                               (pcap_datalink_val_to_name(dlt) ? pcap_datalink_val_to_name(dlt) : "?") +
                               ") not supported; expected Ethernet, Linux cooked v1/v2, raw IPv4 or BSD loopback");
    }
    path_ = path;
}

CaptureReader::~CaptureReader() = default;

std::optional<CaptureRecord> CaptureReader::next() {
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(impl_->pcap, &hdr, &data);
    if (rc == PCAP_ERROR_BREAK) return std::nullopt;
    if (rc != 1) throw CaptureError(path_ + ": record " + std::to_string(records_ + 1) + ": " + pcap_geterr(impl_->pcap));
    ++records_;
    bytes_read_ += 16 + hdr->caplen;
    // pcapng can carry 64-bit timestamps beyond what Unix ns in an int64 holds (year 2262).
    constexpr std::int64_t kMaxSec = INT64_MAX / 1'000'000'000 - 1;
    const std::int64_t sec = static_cast<std::int64_t>(hdr->ts.tv_sec);
    if (sec < 0 || sec > kMaxSec || hdr->ts.tv_usec < 0 || hdr->ts.tv_usec >= 1'000'000'000)
        throw CaptureError(path_ + ": record " + std::to_string(records_) + ": timestamp out of range (" +
                           std::to_string(sec) + " s), expected 1970..2262");
    const std::int64_t ts = sec * 1'000'000'000 + hdr->ts.tv_usec;
    return CaptureRecord{ts, {reinterpret_cast<const std::byte*>(data), hdr->caplen}};
}

}  // namespace tickgate
