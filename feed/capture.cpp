#include "tickgate/feed/capture.hpp"

#include "tickgate/endian.hpp"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>


namespace tickgate {

namespace {

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
    const std::size_t total = load_be<std::uint16_t>(ip.data() + 2);
    if (ihl < 20 || total < ihl || total > ip.size()) {
        ++c.truncated;
        return std::nullopt;
    }
    const std::uint16_t frag = load_be<std::uint16_t>(ip.data() + 6);
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
    const std::size_t udp_len = load_be<std::uint16_t>(udp.data() + 4);
    if (udp_len < 8 || udp_len > udp.size()) {
        ++c.truncated;
        return std::nullopt;
    }
    ++c.udp_datagrams;
    return UdpDatagram{load_be<std::uint32_t>(ip.data() + 12), load_be<std::uint32_t>(ip.data() + 16), load_be<std::uint16_t>(udp.data()), load_be<std::uint16_t>(udp.data() + 2),
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
            proto = load_be<std::uint16_t>(f.data() + 12);
            off = 14;
            while ((proto == kEtherVlan || proto == kEtherQinQ) && f.size() >= off + 4) {
                proto = load_be<std::uint16_t>(f.data() + off + 2);
                off += 4;
            }
            if (proto == kEtherVlan || proto == kEtherQinQ) {
                ++c.truncated;
                return std::nullopt;
            }
            break;
        case LinkType::kLinuxSll:
            if (f.size() < 16) break;
            proto = load_be<std::uint16_t>(f.data() + 14);
            off = 16;
            break;
        case LinkType::kLinuxSll2:
            if (f.size() < 20) break;
            proto = load_be<std::uint16_t>(f.data());
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

namespace {

// Classic pcap files are read by a block reader of our own: libpcap's
// reader copies every record twice through stdio (header, then data) and was
// measured at ~300 ns a record, more than decoding the 8 messages in it.
// libpcap still opens and validates every file, and reads pcapng.
class PcapBlockReader {
public:
    static constexpr std::size_t kFileHeader = 24;
    static constexpr std::size_t kRecordHeader = 16;
    static constexpr std::uint32_t kMaxCaplen = 262144;  // libpcap's MAXIMUM_SNAPLEN

    // Magic of a classic pcap file (either byte order, µs or ns); nullopt otherwise.
    struct Format {
        bool swapped;
        bool nanos;
    };
    static std::optional<Format> classic_format(const std::byte* magic) noexcept {
        std::uint32_t m;
        std::memcpy(&m, magic, 4);
        switch (m) {
            case pcap_magic::kMicro: return Format{false, false};
            case pcap_magic::kNano: return Format{false, true};
            case __builtin_bswap32(pcap_magic::kMicro): return Format{true, false};
            case __builtin_bswap32(pcap_magic::kNano): return Format{true, true};
            default: return std::nullopt;
        }
    }

    PcapBlockReader(int fd, Format format) : fd_(fd), format_(format), buf_(kBlock + kRecordHeader + kMaxCaplen) {}
    ~PcapBlockReader() { ::close(fd_); }
    PcapBlockReader(const PcapBlockReader&) = delete;
    PcapBlockReader& operator=(const PcapBlockReader&) = delete;

    struct Record {
        std::int64_t sec;
        std::int64_t frac_ns;
        std::span<const std::byte> frame;  // valid until the next call
    };
    // Next record; nullopt at the end. At a clean end both strings stay
    // empty; a record cut off by the end of the file sets `cut`; a corrupt
    // record sets `error`.
    std::optional<Record> next(std::string& cut, std::string& error) {
        if (!fill(kRecordHeader)) {
            if (end_ != pos_)
                cut = "tried to read 16 header bytes, only got " + std::to_string(end_ - pos_);
            return std::nullopt;
        }
        std::uint32_t h[4];
        std::memcpy(h, buf_.data() + pos_, sizeof h);
        if (format_.swapped)
            for (auto& v : h) v = __builtin_bswap32(v);
        const std::uint32_t caplen = h[2];
        if (caplen > kMaxCaplen) {
            error = "invalid packet capture length " + std::to_string(caplen) + ", bigger than maximum of " +
                    std::to_string(kMaxCaplen);
            return std::nullopt;
        }
        if (!fill(kRecordHeader + caplen)) {
            cut = "tried to read " + std::to_string(caplen) + " captured bytes, only got " +
                  std::to_string(end_ - pos_ - kRecordHeader);
            return std::nullopt;
        }
        const std::byte* frame = buf_.data() + pos_ + kRecordHeader;
        pos_ += kRecordHeader + caplen;
        return Record{h[0], format_.nanos ? std::int64_t{h[1]} : std::int64_t{h[1]} * 1000, {frame, caplen}};
    }

private:
    static constexpr std::size_t kBlock = 1 << 20;

    // At least `need` unread bytes buffered, reading more if the file has them.
    bool fill(std::size_t need) {
        if (end_ - pos_ >= need) return true;
        std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
        end_ -= pos_;
        pos_ = 0;
        while (end_ < need && !eof_) {
            const ::ssize_t n = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw CaptureError(std::string("read failed: ") + std::strerror(errno));
            if (n == 0) eof_ = true;
            end_ += static_cast<std::size_t>(n);
        }
        return end_ >= need;
    }

    int fd_;
    Format format_;
    std::vector<std::byte> buf_;
    std::size_t pos_ = 0, end_ = 0;
    bool eof_ = false;
};

// Where libpcap's stream stands (pcapng path): after the last block read.
std::uint64_t file_offset(pcap_t* p) noexcept {
    std::FILE* f = pcap_file(p);
    const long at = f != nullptr ? std::ftell(f) : -1;
    return at < 0 ? 0 : static_cast<std::uint64_t>(at);
}
}  // namespace

struct CaptureReader::Impl {
    pcap_t* pcap = nullptr;                  // pcapng, or until a classic pcap file is validated
    std::unique_ptr<PcapBlockReader> block;  // classic pcap
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

    // Classic pcap: hand the reading over to the block reader, past the file header.
    std::byte magic[4] = {};
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw CaptureError(path + ": cannot open: " + std::strerror(errno));
    const auto format = ::pread(fd, magic, 4, 0) == 4 ? PcapBlockReader::classic_format(magic) : std::nullopt;
    if (!format || ::lseek(fd, PcapBlockReader::kFileHeader, SEEK_SET) < 0) {
        ::close(fd);
        intact_bytes_ = file_offset(impl_->pcap);  // pcapng: past the section and interface headers
        return;
    }
    impl_->block = std::make_unique<PcapBlockReader>(fd, *format);
    pcap_close(impl_->pcap);
    impl_->pcap = nullptr;
    intact_bytes_ = PcapBlockReader::kFileHeader;
}

CaptureReader::~CaptureReader() = default;

std::optional<CaptureRecord> CaptureReader::next() {
    if (truncation_) return std::nullopt;
    std::int64_t sec = 0, frac_ns = 0;
    std::span<const std::byte> frame;
    std::uint64_t record_end = 0;
    if (impl_->block) {
        std::string cut, error;
        std::optional<PcapBlockReader::Record> rec;
        try {
            rec = impl_->block->next(cut, error);
        } catch (const CaptureError& e) {
            error = e.what();
        }
        if (!error.empty()) throw CaptureError(path_ + ": record " + std::to_string(records_ + 1) + ": " + error);
        if (!cut.empty()) return cut_short(std::move(cut));
        if (!rec) return std::nullopt;
        sec = rec->sec;
        frac_ns = rec->frac_ns;
        frame = rec->frame;
        record_end = intact_bytes_ + PcapBlockReader::kRecordHeader + frame.size();
    } else {
        pcap_pkthdr* hdr = nullptr;
        const u_char* data = nullptr;
        const int rc = pcap_next_ex(impl_->pcap, &hdr, &data);
        if (rc == PCAP_ERROR_BREAK) return std::nullopt;
        if (rc != 1) {
            // libpcap reports a block the file ends inside of ("truncated
            // pcapng dump file") like any corrupt block: the end of file
            // having been reached is what tells a cut from corruption.
            std::FILE* f = pcap_file(impl_->pcap);
            if (f != nullptr && std::feof(f) != 0 && std::ferror(f) == 0) return cut_short(pcap_geterr(impl_->pcap));
            throw CaptureError(path_ + ": record " + std::to_string(records_ + 1) + ": " + pcap_geterr(impl_->pcap));
        }
        sec = static_cast<std::int64_t>(hdr->ts.tv_sec);
        frac_ns = hdr->ts.tv_usec;  // ns: opened with PCAP_TSTAMP_PRECISION_NANO
        frame = {reinterpret_cast<const std::byte*>(data), hdr->caplen};
        record_end = file_offset(impl_->pcap);
    }
    ++records_;
    bytes_read_ += 16 + frame.size();
    intact_bytes_ = record_end;
    // pcapng can carry 64-bit timestamps beyond what Unix ns in an int64 holds (year 2262).
    constexpr std::int64_t kMaxSec = INT64_MAX / 1'000'000'000 - 1;
    if (sec < 0 || sec > kMaxSec || frac_ns < 0 || frac_ns >= 1'000'000'000)
        throw CaptureError(path_ + ": record " + std::to_string(records_) + ": timestamp out of range (" +
                           std::to_string(sec) + " s), expected 1970..2262");
    return CaptureRecord{sec * 1'000'000'000 + frac_ns, frame};
}

std::nullopt_t CaptureReader::cut_short(std::string detail) {
    truncation_ = CaptureTruncation{records_, intact_bytes_, file_size_, std::move(detail)};
    return std::nullopt;
}

}  // namespace tickgate
