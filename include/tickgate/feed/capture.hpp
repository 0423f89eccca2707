// Capture I/O: a libpcap-based reader of pcap (µs/ns) and pcapng files that
// extracts UDP/IPv4 datagrams, a writer of pcap/pcapng files, and a QFB/1
// packet builder (for tests, the simulator and `tickgate capture`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tickgate {

class CaptureError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// The writer could not create or write its file (disk full, no such
// directory): a failure of the run, not of its input — the CLI exits 1 for
// it, 2 for an unreadable capture.
class CaptureWriteError : public CaptureError {
public:
    using CaptureError::CaptureError;
};

// Link types the reader understands (values are LINKTYPE_* numbers).
enum class LinkType : std::uint16_t {
    kNull = 0,          // BSD loopback
    kEthernet = 1,      // incl. 802.1Q / 802.1ad tags
    kRaw = 101,         // raw IPv4/IPv6
    kLinuxSll = 113,
    kIpv4 = 228,
    kLinuxSll2 = 276,
};

struct UdpDatagram {
    std::uint32_t src_ip;    // host byte order
    std::uint32_t dst_ip;
    std::uint16_t src_port;
    std::uint16_t dst_port;
    std::span<const std::byte> payload;
};

struct FrameCounters {
    std::uint64_t records = 0;          // every record read
    std::uint64_t udp_datagrams = 0;    // UDP/IPv4 datagrams extracted
    std::uint64_t non_ip = 0;           // not IPv4 (ARP, IPv6, unknown link) — skipped
    std::uint64_t non_udp = 0;          // IPv4 but not UDP — skipped
    std::uint64_t fragments = 0;        // IPv4 fragments — cannot be used
    std::uint64_t truncated = 0;        // frame shorter than its headers claim
};

// Extracts the UDP/IPv4 datagram from one link-layer frame; nullopt (with
// the reason counted) for anything else. Bounds-checked; never throws.
std::optional<UdpDatagram> extract_udp(LinkType link, std::span<const std::byte> frame,
                                       FrameCounters& counters) noexcept;

struct CaptureRecord {
    std::int64_t ts_ns;                 // capture timestamp, Unix ns
    std::span<const std::byte> frame;   // valid until the next call to next()
};

// Where a capture that was cut short ends: a killed or crashed writer, a
// full disk or a file still being written leaves its last record (pcapng:
// block) incomplete. Everything before it is intact and was read.
struct CaptureTruncation {
    std::uint64_t intact_records = 0;  // records read before the cut
    std::uint64_t intact_bytes = 0;    // file offset where the incomplete record starts
    std::uint64_t file_bytes = 0;      // the file's size
    std::string detail;                // what was missing, e.g. "tried to read 16 header bytes, only got 7"
};

// Reads pcap (µs and ns, either byte order) and pcapng. libpcap opens and
// validates every file and reads pcapng; classic pcap records are read by a
// block reader (one read() per MiB, records parsed in place). Not thread-safe.
class CaptureReader {
public:
    // Throws CaptureError with a clear message (missing, directory, not a capture).
    explicit CaptureReader(const std::string& path);
    ~CaptureReader();
    CaptureReader(const CaptureReader&) = delete;
    CaptureReader& operator=(const CaptureReader&) = delete;

    // Next record, or nullopt at the end: the end of the file, or a last
    // record (block) that runs past it — the file was cut short, and
    // truncation() then says where. Throws CaptureError on a corrupt file
    // (a record longer than any capture allows, a malformed pcapng block, a
    // timestamp out of range), after the records before it.
    std::optional<CaptureRecord> next();
    // Set once next() has met a cut last record; nullopt for a whole file.
    [[nodiscard]] const std::optional<CaptureTruncation>& truncation() const noexcept { return truncation_; }
    [[nodiscard]] LinkType link_type() const noexcept { return link_; }
    [[nodiscard]] std::uint64_t file_size() const noexcept { return file_size_; }
    [[nodiscard]] std::uint64_t bytes_read() const noexcept { return bytes_read_; }

private:
    std::nullopt_t cut_short(std::string detail);  // records where the file was cut; the end

    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string path_;
    std::uint64_t records_ = 0;
    LinkType link_ = LinkType::kEthernet;
    std::uint64_t file_size_ = 0;
    std::uint64_t bytes_read_ = 0;
    std::uint64_t intact_bytes_ = 0;  // file offset after the last whole record read
    std::optional<CaptureTruncation> truncation_;
};

enum class CaptureFormat : std::uint8_t { kPcapMicro, kPcapNano, kPcapng };

// Writes UDP/IPv4 datagrams as frames of the chosen link type into a pcap or
// pcapng file (written directly, not through libpcap, so every format and
// link type the reader takes can be produced). Not thread-safe.
class CaptureWriter {
public:
    CaptureWriter(const std::string& path, CaptureFormat format = CaptureFormat::kPcapNano,
                  LinkType link = LinkType::kEthernet, std::uint16_t vlan = 0);
    ~CaptureWriter();
    CaptureWriter(const CaptureWriter&) = delete;
    CaptureWriter& operator=(const CaptureWriter&) = delete;

    // Appends one datagram src_ip:src_port -> dst_ip:dst_port (host order).
    void write_udp(std::int64_t ts_ns, std::uint32_t src_ip, std::uint16_t src_port,
                   std::uint32_t dst_ip, std::uint16_t dst_port, std::span<const std::byte> payload);
    // Appends a raw link-layer frame (e.g. a non-UDP frame for tests).
    void write_frame(std::int64_t ts_ns, std::span<const std::byte> frame);
    void flush();

private:
    std::FILE* f_ = nullptr;
    std::string path_;
    CaptureFormat format_;
    LinkType link_;
    std::uint16_t vlan_;
    std::uint16_t ip_id_ = 0;
    std::vector<std::byte> buf_;
};

// Parses "a.b.c.d" into a host-order address; nullopt if malformed.
std::optional<std::uint32_t> parse_ipv4(std::string_view text) noexcept;
// "a.b.c.d:port" of a host-order address and port (a destination's name in summaries).
[[nodiscard]] std::string endpoint_text(std::uint32_t ip, std::uint16_t port);

// A multicast group: 224.0.0.0/4 (host-order address).
[[nodiscard]] constexpr bool is_multicast(std::uint32_t ip) noexcept { return (ip >> 28) == 0xE; }

// File magic numbers, as the uint32 a file written in our byte order starts
// with (a byte-swapped value: the file's writer had the other byte order).
namespace pcap_magic {
inline constexpr std::uint32_t kMicro = 0xa1b2c3d4;  // classic pcap, µs timestamps
inline constexpr std::uint32_t kNano = 0xa1b23c4d;   // classic pcap, ns timestamps
inline constexpr std::uint32_t kPcapngSection = 0x0A0D0D0A;    // pcapng section header block type
inline constexpr std::uint32_t kPcapngByteOrder = 0x1A2B3C4D;  // pcapng byte-order magic
}  // namespace pcap_magic

}  // namespace tickgate
