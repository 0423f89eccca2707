// tickgate configuration (TOML, see configs/ and README "Configuration").
// Loaded once at start-up; every error names the file, the line, the key and
// what was expected.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tickgate/book/gate.hpp"
#include "tickgate/feed/instruments.hpp"

namespace tickgate {

struct LineConfig {
    std::string group;                  // IPv4 multicast group, e.g. "239.1.1.1"
    std::uint16_t port = 0;
    std::string interface = "127.0.0.1";  // local address of the joining interface
    // The senders this line joins (source-specific) and accepts: the line's
    // own `sources` key, else its channel's; empty = any. At most
    // max_sources_per_line() (the kernel refuses more per socket).
    std::vector<std::string> sources = {};
};

// Source filters one socket may hold for a group: the kernel's
// net.ipv4.igmp_max_msf, read when called (10, its default, if unreadable).
// IP_ADD_SOURCE_MEMBERSHIP past it fails with ENOBUFS, so a config with more
// sources on a line is refused when it is read.
[[nodiscard]] std::uint32_t max_sources_per_line() noexcept;

struct ChannelConfig {
    std::uint16_t id = 0;
    LineConfig a;
    LineConfig b;
    std::vector<std::string> sources;   // allowed source addresses of every line without its own; empty = any
    std::int64_t clock_offset_ns = 0;   // our clock minus the provider's (subtracted from source age)
    std::string protocol = "qfb1";      // what the channel speaks (protocols.hpp)
    // itch50 only: the channel's MoldUDP64 re-request server, "A.B.C.D:PORT"
    // (unicast IPv4); empty: none (holes are filled by the lines only).
    std::string rerequest;
    std::uint32_t rerequest_ip = 0;     // host order, parsed from `rerequest`
    std::uint16_t rerequest_port = 0;
    // itch50 only: the channel's GLIMPSE 5.0 snapshot service (SoupBinTCP),
    // "A.B.C.D:PORT" (unicast IPv4); empty: none (ITCH50.md "Snapshot recovery").
    std::string glimpse;
    std::uint32_t glimpse_ip = 0;       // host order, parsed from `glimpse`
    std::uint16_t glimpse_port = 0;
    // MDP3 only (MDP3.md): the snapshot feed's lines, joined live only while
    // an instrument of the channel is suspect or unconfirmed, and the
    // instrument-definition feed's, joined always. Each pair both or neither.
    std::optional<LineConfig> snapshot_a, snapshot_b;
    std::optional<LineConfig> definition_a, definition_b;

    // Every line by its line number (kLineA .. kDefinitionLineB below):
    // nullptr for a line the channel does not have.
    [[nodiscard]] std::array<const LineConfig*, 6> lines() const noexcept {
        const auto opt = [](const std::optional<LineConfig>& l) { return l ? &*l : nullptr; };
        return {&a, &b, opt(snapshot_a), opt(snapshot_b), opt(definition_a), opt(definition_b)};
    }
};

// Line numbers of a channel's sockets (RawDatagram::line, LineStats::line):
// the incremental lines A and B, merged by the A/B arbiter, then MDP3's
// snapshot and definition lines, whose datagrams each carry their own
// MsgSeqNum and are decoded as they come, outside arbitration.
inline constexpr std::uint8_t kLineA = 0;
inline constexpr std::uint8_t kLineB = 1;
inline constexpr std::uint8_t kSnapshotLineA = 2;
inline constexpr std::uint8_t kSnapshotLineB = 3;
inline constexpr std::uint8_t kDefinitionLineA = 4;
inline constexpr std::uint8_t kDefinitionLineB = 5;
[[nodiscard]] constexpr bool is_unarbitrated_line(std::uint8_t line) noexcept {
    return line >= kSnapshotLineA && line <= kDefinitionLineB;
}
[[nodiscard]] constexpr bool is_snapshot_line(std::uint8_t line) noexcept {
    return line == kSnapshotLineA || line == kSnapshotLineB;
}
// "A", "B", "snapshot_a", "snapshot_b", "definition_a", "definition_b" (else "?"): the one
// spelling of the JSON summary, the state log, the live view and the metrics' `line`
// label (no spaces; the MDP3 lines as their config keys).
[[nodiscard]] constexpr std::string_view line_name(std::uint8_t line) noexcept {
    constexpr std::string_view kNames[] = {"A", "B", "snapshot_a", "snapshot_b", "definition_a", "definition_b"};
    return line < std::size(kNames) ? kNames[line] : std::string_view("?");
}

struct InstrumentConfig {
    std::uint32_t id = 0;
    std::string symbol;
    std::int8_t price_exponent = -8;
};

enum class ThreadMode : std::uint8_t { kBlocking, kBusyPoll };
// threading.pipeline: a network thread handing Events to the engine's
// thread through the ring (kTwoThread), or one thread that receives,
// decodes, sequences, books and calls the engine back (kInline).
enum class PipelineMode : std::uint8_t { kTwoThread, kInline };

// Where datagrams come from: kernel UDP sockets (recvmmsg), or an AF_XDP
// socket per RX queue fed by tickgate's XDP program (feed/af_xdp.cpp); the
// rest of the pipeline cannot tell them apart. Multicast memberships are
// joined with sockets either way, so IGMP keeps the switch forwarding.
enum class ReceiveBackend : std::uint8_t { kSockets, kAfXdp };

struct AfXdpConfig {
    std::string interface;                  // network interface name (required for af_xdp)
    std::vector<std::uint32_t> queues{0};   // RX queues to bind, one AF_XDP socket each
    std::string mode = "auto";              // XDP attach: "auto" (native, else generic), "native", "generic"
    std::string zero_copy = "auto";         // "auto" (zero-copy, else copy), "true", "false"
    std::uint32_t frames = 2048;            // UMEM frames per queue (4 KiB each), power of two
    bool fallback_to_sockets = false;       // fallback = "sockets": start on sockets, saying why, if AF_XDP cannot
};

struct ReceiverConfig {
    ReceiveBackend backend = ReceiveBackend::kSockets;
    AfXdpConfig af_xdp;
    std::uint32_t ring_size = 65536;      // events per ring, power of two
    std::int32_t rcvbuf_bytes = 8 << 20;  // SO_RCVBUF per socket
    std::uint32_t batch = 64;             // datagrams per recvmmsg
    bool arbitration = true;              // merge lines A/B by packet_seq before decoding
    std::uint32_t arbitration_hold_us = 250;  // how long a packet waits for the other line to fill a hole
    std::uint32_t arbitration_window = 64;    // packets held per channel, power of two
};

struct ThreadingConfig {
    ThreadMode mode = ThreadMode::kBlocking;
    // Busy-poll only: when a poll finds nothing, the network thread spins on
    // (false) or yields its core (true) — for an engine thread pinned to the
    // same core, which otherwise runs only in scheduler time slices.
    bool busy_poll_yield = false;
    int receiver_cpu = -1;  // -1: not pinned
    int engine_cpu = -1;
    PipelineMode pipeline = PipelineMode::kTwoThread;
};

struct LoggingConfig {
    std::string level = "info";   // trace, debug, info, warn, error, off
    std::string sink = "stderr";  // "stderr" or a file path
};

// The Prometheus endpoint of `tickgate run` (MetricsServer). The command
// line's `--metrics ADDR:PORT` takes precedence over both keys.
// metrics.instruments: which instruments get per-instrument series (each
// instrument is a dozen series: 300 stocks are thousands of lines).
enum class MetricsInstruments : std::uint8_t {
    kAll,         // every instrument seen
    kSubscribed,  // those booked under instruments.subscribe (all when nothing is subscribed)
    kNone,        // none: the global, line and channel series only
};

struct MetricsConfig {
    bool enabled = false;
    MetricsInstruments instruments = MetricsInstruments::kAll;
    std::string address = "127.0.0.1";  // IPv4 loopback literal (127.0.0.0/8): metrics stay on the host
    std::uint16_t port = 9108;          // 0: a free port, chosen at start-up
};

// `[moldudp64]`: the MoldUDP64 stream stage (ITCH50.md "The stream").
struct MoldUdp64Config {
    std::uint32_t gap_timeout_ms = 500;     // a hole open strictly longer is given up
    std::uint32_t max_held_packets = 4096;  // datagrams held ahead of holes, all channels
    // The re-request client (live, channels with `rerequest`): ITCH50.md's limits.
    std::uint32_t max_request_messages = 1000;  // messages asked for in one request
    std::uint32_t request_timeout_ms = 20;      // a request unanswered this long is sent again
    std::uint32_t max_requests = 5;             // sends of one request, the first included
    // Requests to one server per second: 200 lets four holes be re-sent on
    // every 20 ms timeout, yet bounds what a handler stuck in a loss storm
    // sends a venue's server to 4 KB/s.
    std::uint32_t max_requests_per_s = 200;
    bool recover_from_start = false;  // a late join requests the session from 1 instead
};

// `[glimpse]`: the GLIMPSE 5.0 snapshot client of the channels with
// `glimpse` (ITCH50.md "Snapshot recovery"). The password is read at
// start-up from `password_file` or the environment variable `password_env`
// (exactly one when a channel has `glimpse`); it is never logged, printed
// or exported.
struct GlimpseConfig {
    std::string username;
    std::string password_file;
    std::string password_env;
    std::uint32_t min_interval_ms = 2'000;  // at most one snapshot per channel this often; the retry delay
    std::uint32_t timeout_ms = 10'000;      // no `M` this long after the request: failed
    std::uint32_t buffer_mb = 64;           // the snapshot buffer
    std::uint64_t buffer_bytes = std::uint64_t{64} << 20;  // buffer_mb in bytes (tests set it smaller)
};

// `[itch]`: ITCH 5.0's order books and clock (ITCH50.md).
struct ItchBookConfig {
    std::uint32_t max_orders = 16'777'216;  // open orders at once, all instruments
    std::uint32_t max_levels = 1'048'576;   // price levels at once, all instruments and sides
    // Venue time minus UTC, minutes; nullopt: "auto" (per channel and session, from the first message).
    std::optional<std::int32_t> utc_offset_minutes;
};

// `[mdp3]`: CME MDP 3.0 (MDP3.md).
struct Mdp3Config {
    // Levels per side of an instrument whose definition gives no depth;
    // 1..capacity.book_depth.
    std::uint32_t book_depth = 10;
    // SecurityIDs whose definition is kept (symbol, depth), traded or not:
    // a definition takes no instrument slot (capacity.max_instruments) until
    // its instrument trades or its symbol is subscribed. A definition of a
    // new SecurityID beyond this is dropped and counted (out_of_range_instruments,
    // the summary's "definitions".dropped, the state log). 1..4,194,304.
    std::uint32_t max_definitions = 200'000;
};

// `[fanout]`: `tickgate run --fanout` publishes every instrument's book top
// and gate verdict to NATS (README "Fan-out"). Credentials are read at
// start-up from `credentials_file` (a NATS .creds file) or `user` with
// `password_file` (at most one of the two); never logged or printed.
struct FanoutConfig {
    bool configured = false;  // the config has a [fanout] table (counted in estimate_memory)
    std::vector<std::string> servers{"nats://127.0.0.1:4222"};  // nats://A.B.C.D:PORT, tried in order
    std::string prefix = "tickgate";  // subjects PREFIX.VENUE.CHANNEL.SYMBOL
    std::uint32_t depth = 5;          // levels per side in each record, 1..32
    std::string stream = "TICKGATE";  // the JetStream stream keeping the last record per subject
    std::uint32_t replicas = 1;       // of that stream, 1..5 (3 across a 3-node cluster)
    bool memory_storage = true;       // storage = "memory" (default) or "file"
    std::string credentials_file;
    std::string user;
    std::string password_file;
    std::uint32_t reconnect_wait_ms = 100;  // between attempts at one server
    std::uint32_t heartbeat_ms = 1000;      // publisher heartbeat period (consumers: silent after 3 of them)
};

// The default of capacity.max_memory_mb: half of this machine's physical
// memory (sysconf), read when called — the handler shares the host with the
// engine that embeds it; 4096 if the figure cannot be read.
[[nodiscard]] std::uint64_t default_max_memory_mb() noexcept;

struct Config {
    std::string source;           // file it was read from ("" = defaults)
    // What estimate_memory(*this) may come to, MiB (capacity.max_memory_mb).
    std::uint64_t max_memory_mb = default_max_memory_mb();
    std::vector<ChannelConfig> channels;
    bool learn_instruments = true;  // take symbols from `I` messages
    std::vector<InstrumentConfig> instruments;
    // instruments.subscribe: when not empty, only these symbols are booked
    // (every instrument is still sequenced).
    std::vector<std::string> subscribe;
    Capacity capacity;
    GateConfig gate;
    ReceiverConfig receiver;
    ThreadingConfig threading;
    LoggingConfig logging;
    MetricsConfig metrics;
    MoldUdp64Config moldudp64;
    ItchBookConfig itch;
    GlimpseConfig glimpse;
    Mdp3Config mdp3;
    FanoutConfig fanout;

    // Whether any channel has a GLIMPSE snapshot service.
    [[nodiscard]] bool any_glimpse() const noexcept {
        for (const ChannelConfig& ch : channels)
            if (!ch.glimpse.empty()) return true;
        return false;
    }

    // The configured channels' ids, in config order.
    // The protocol of every channel (one per config: a handler speaks one);
    // the command line's --protocol, or "qfb1", without channels.
    std::string default_protocol = "qfb1";
    [[nodiscard]] std::string_view protocol() const noexcept {
        return channels.empty() ? std::string_view(default_protocol) : std::string_view(channels.front().protocol);
    }

    [[nodiscard]] std::vector<std::uint16_t> channel_ids() const {
        std::vector<std::uint16_t> ids;
        for (const ChannelConfig& ch : channels) ids.push_back(ch.id);
        return ids;
    }
};

// A configuration error: what() is "FILE:LINE: KEY: expected ..., got ...".
// Applies the start-up parts of `cfg`: configured instruments and the
// channels' clock offsets to the instrument table, the learn flag and the
// channel-binding rule (QFB1.md rule 7, needs transport-given channels) and
// the subscriptions to the sequencer. Start-up only.
template <class Sequencer>
void apply_config(InstrumentTable& instruments, Sequencer& sequencer, const Config& cfg) {
    if constexpr (requires { sequencer.venue().configure(cfg); }) sequencer.venue().configure(cfg);  // the rules' own keys
    sequencer.set_learn_definitions(cfg.learn_instruments);
    sequencer.set_bind_instruments_to_channels(!cfg.channels.empty());
    for (const InstrumentConfig& ins : cfg.instruments) instruments.define(ins.id, ins.symbol, ins.price_exponent);
    for (const ChannelConfig& ch : cfg.channels) instruments.set_clock_offset(ch.id, ch.clock_offset_ns);
    for (const std::string& symbol : cfg.subscribe) (void)instruments.subscribe(symbol);  // validated: fits
    sequencer.apply_subscriptions();
}

// Applies the config's book keys to a handler's book at start-up: MDP3's
// level-indexed book takes [mdp3] book_depth as its default depth; other
// books have none. Start-up only.
template <class Book>
void configure_book(Book& book, const Config& cfg) {
    if constexpr (requires { book.set_default_depth(cfg.mdp3.book_depth); }) book.set_default_depth(cfg.mdp3.book_depth);
}

// The capacities protocol P's pipeline is built with: the config's, or
// what P::capacity(cfg) makes of them (ITCH: ids are its locates).
template <class P>
[[nodiscard]] Capacity capacity_for(const Config& cfg) {
    if constexpr (requires { P::capacity(cfg); }) return P::capacity(cfg);
    else return cfg.capacity;
}
// A handler's book at start-up: Book(cfg, capacity) for a book that takes
// its own keys (ITCH's order book), else (max_instruments, book_depth).
template <class Book>
[[nodiscard]] Book make_book(const Config& cfg, const Capacity& c) {
    if constexpr (std::is_constructible_v<Book, const Config&, const Capacity&>) return Book(cfg, c);
    else return Book(c.max_instruments, c.book_depth);
}
// What make_book allocates (estimate_memory).
template <class Book>
[[nodiscard]] std::size_t book_bytes(const Config& cfg, const Capacity& c) noexcept {
    if constexpr (requires { Book::bytes_for(cfg, c); }) return Book::bytes_for(cfg, c);
    else return Book::bytes_for(c.max_instruments, c.book_depth);
}

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The memory a config makes `tickgate run` allocate at start-up, part by
// part, computed from the sizes the constructors themselves allocate
// (Sequencer, L2Book, SpscRing, RingPublisher with its arbiter and
// decoder, Receiver, metrics snapshots, state log; ITCH's OrderBook and
// MoldUDP64 pool) — so that a config whose keys are each in range but
// together too large is refused before anything is allocated. Two figures:
// reserved (address space, what every table full would be resident) and
// resident at start-up (what the constructors write; a table of zero pages,
// ZeroedArray, becomes resident only as it is used). The limit holds for
// the reserved figure. Kernel socket buffers (receiver.rcvbuf_bytes) are
// not ours and not counted.
struct MemoryPart {
    std::string_view what;                    // e.g. "books"
    std::vector<std::string_view> keys;       // the keys it grows with, e.g. capacity.book_depth
    std::uint64_t bytes = 0;                  // reserved
    std::uint64_t resident_bytes = 0;         // resident at start-up (<= bytes)
};
struct MemoryEstimate {
    std::vector<MemoryPart> parts;
    std::uint64_t total_bytes = 0;     // reserved
    std::uint64_t resident_bytes = 0;  // resident at start-up
    [[nodiscard]] const MemoryPart& largest() const;
    void add_up() noexcept;  // total_bytes and resident_bytes from the parts
};
// For the config's protocol (its channels', or default_protocol).
[[nodiscard]] MemoryEstimate estimate_memory(const Config& c);
// For `protocol` (one of kProtocolNames): a channel-less config runs with
// whatever --protocol says.
[[nodiscard]] MemoryEstimate estimate_memory(const Config& c, std::string_view protocol);
// For a protocol's own estimate (P::estimate_memory), the parts any
// protocol's live handler may add: the AF_XDP UMEM (receiver.backend =
// "af_xdp"), the fan-out for `instrument_ids` ids ([fanout]).
void add_af_xdp_memory(MemoryEstimate& e, const Config& c);
void add_fanout_memory(MemoryEstimate& e, const Config& c, std::uint32_t instrument_ids);
// Bytes as whole MiB, rounded up (what messages and `config check` print).
[[nodiscard]] constexpr std::uint64_t mib_ceil(std::uint64_t bytes) noexcept { return (bytes + (1u << 20) - 1) >> 20; }

// Reads and validates a TOML file. Throws ConfigError on any problem
// (unknown keys included; a config whose estimate_memory exceeds
// capacity.max_memory_mb; a path that is not a regular file of at most
// kMaxConfigBytes). `protocol`: what a config without channels will run as
// (--protocol; it becomes default_protocol, and its estimate is checked);
// kAnyProtocol: not known yet (`config check` without --protocol), every
// protocol's estimate must fit. A config with channels is checked for its
// channels' protocol. Start-up only.
inline constexpr std::uint64_t kMaxConfigBytes = 1 << 20;
inline constexpr std::string_view kAnyProtocol{};
[[nodiscard]] Config load_config(const std::string& path, std::string_view protocol = "qfb1");
// Same, from text (`name` is used in messages).
[[nodiscard]] Config parse_config(std::string_view toml_text, const std::string& name,
                                  std::string_view protocol = "qfb1");

}  // namespace tickgate
