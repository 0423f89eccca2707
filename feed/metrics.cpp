#include "tickgate/feed/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <iterator>
#include <list>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>


namespace tickgate {

// ---------------------------------------------------------------- registry

namespace {

void size_snapshot(MetricsRegistry::Snapshot& s, std::uint32_t max_instruments, std::size_t max_lines,
                   const MetricsOptions& o) {
    s.features = o.features;
    s.instruments.resize(o.instruments == MetricsInstruments::kNone ? 0 : max_instruments);
    s.lines.resize(max_lines);
    s.channel_groups = o.channel_groups;
    s.channel_counters.resize(o.channel_groups.empty() ? 0 : o.channels);
    s.histograms.resize(o.channels);
}

// Pins the front buffer for the lifetime of the guard (see the header).
class ReadGuard {
public:
    ReadGuard(const std::atomic<std::uint32_t>& front, std::array<std::atomic<std::uint32_t>, 2>& readers)
        : readers_(readers) {
        for (;;) {
            index_ = front.load(std::memory_order_seq_cst);
            readers_[index_].fetch_add(1, std::memory_order_seq_cst);
            // Still the front after the pin: the writer will see the pin
            // before it targets this buffer again.
            if (front.load(std::memory_order_seq_cst) == index_) return;
            readers_[index_].fetch_sub(1, std::memory_order_release);
        }
    }
    ~ReadGuard() { readers_[index_].fetch_sub(1, std::memory_order_release); }
    ReadGuard(const ReadGuard&) = delete;
    ReadGuard& operator=(const ReadGuard&) = delete;
    [[nodiscard]] std::uint32_t index() const noexcept { return index_; }

private:
    std::array<std::atomic<std::uint32_t>, 2>& readers_;
    std::uint32_t index_ = 0;
};

}  // namespace

MetricsRegistry::MetricsRegistry(std::uint32_t max_instruments, std::size_t max_lines, const MetricsOptions& o)
    : options_(o) {
    for (auto& b : buffers_) size_snapshot(b, max_instruments, max_lines, o);
}

MetricsRegistry::MetricsRegistry(const FeedStats& h, const MetricsOptions& o)
    : MetricsRegistry(h.instruments.max_instruments(), h.lines.size(), o) {}

void MetricsRegistry::publish(const FeedStats& h, const Sources& src) noexcept {
    const std::uint32_t back = front_.load(std::memory_order_relaxed) ^ 1u;  // only this thread writes front_
    if (readers_[back].load(std::memory_order_seq_cst) != 0) {
        // A reader still copies the previous snapshot: skip, never wait.
        skipped_.store(skipped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
    }
    Snapshot& s = buffers_[back];
    const std::uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;
    s.generation = gen;
    s.published_ns = realtime_ns();

    s.decoder.load(h.decoder);
    s.sequencer.load(h.sequencer);
    s.arbiter.load(h.arbiter);
    s.ring.load(h.publisher);
    s.ring_fill = h.ring ? h.ring->size_approx() : 0;
    s.ring_capacity = h.ring ? h.ring->capacity() : 0;
    // Two syscalls per publish (the kernel's ring and the program's counters), none per packet.
    const XdpPort* xdp = h.receiver.af_xdp();
    s.has_af_xdp = xdp != nullptr;
    s.af_xdp = xdp ? xdp->counters() : AfXdpCounters{};
    s.af_xdp_native = xdp && xdp->mode() == "native";
    s.af_xdp_zero_copy = xdp && xdp->zero_copy();

    s.has_gate = src.gate != nullptr;
    s.gate = src.gate ? *src.gate : GateRejections{};

    const Venue* venue = src.venue;
    s.has_book_errors = venue && venue->instrument;
    std::size_t n = 0;
    const InstrumentTable& instruments = h.instruments;
    s.instruments_seen = instruments.seen_ids().size();
    for (const std::uint32_t id : instruments.seen_ids()) {
        if (n == s.instruments.size()) break;
        if (id >= instruments.max_instruments()) continue;
        const InstrumentState& st = instruments.state(id);
        if (options_.instruments == MetricsInstruments::kSubscribed && !st.booked) continue;
        InstrumentSample& out = s.instruments[n++];
        out.id = id;
        out.venue_id = id;
        out.book_errors = 0;
        if (s.has_book_errors) venue->instrument(venue->handler, out);
        std::memcpy(out.symbol, st.symbol, sizeof out.symbol);
        out.symbol[sizeof out.symbol - 1] = '\0';
        out.suspect = st.suspect;
        out.last_seq = st.last_seq;
        out.counters = st.counters;
    }
    s.instrument_count = n;

    std::size_t l = 0;
    for (const auto& ls : h.lines) {
        if (l == s.lines.size()) break;
        LineSample& out = s.lines[l++];
        out.channel = ls->channel_id;
        out.line = ls->line;
        out.counters.load(*ls);
    }
    s.line_count = l;

    s.channel_counter_count = std::min(src.channel_counters.size(), s.channel_counters.size());
    std::copy_n(src.channel_counters.begin(), s.channel_counter_count, s.channel_counters.begin());

    std::size_t c = 0;
    if (src.latency)
        for (const LatencyHistograms::Channel& in : src.latency->channels()) {
            if (c == s.histograms.size()) break;
            HistogramSample& out = s.histograms[c++];
            out.channel = in.id;
            for (std::size_t b = 0; b < LatencyHistograms::kBuckets; ++b) out.buckets[b] = in.buckets[b].get();
            out.sum_ns = in.sum_ns.get();
        }
    s.histogram_count = c;

    front_.store(back, std::memory_order_seq_cst);
    generation_.store(gen, std::memory_order_relaxed);
}

MetricsRegistry::Snapshot MetricsRegistry::snapshot() const {
    Snapshot out;
    const ReadGuard guard(front_, readers_);
    const Snapshot& s = buffers_[guard.index()];
    // Scalars by copy; only the valid part of the per-instrument/line/channel arrays.
    const auto valid = [](const auto& v, std::size_t n) {
        return std::decay_t<decltype(v)>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
    };
    out.generation = s.generation;
    out.published_ns = s.published_ns;
    out.features = s.features;
    out.decoder = s.decoder;
    out.sequencer = s.sequencer;
    out.arbiter = s.arbiter;
    out.ring = s.ring;
    out.ring_fill = s.ring_fill;
    out.ring_capacity = s.ring_capacity;
    out.has_af_xdp = s.has_af_xdp;
    out.af_xdp_native = s.af_xdp_native;
    out.af_xdp_zero_copy = s.af_xdp_zero_copy;
    out.af_xdp = s.af_xdp;
    out.has_gate = s.has_gate;
    out.gate = s.gate;
    out.has_book_errors = s.has_book_errors;
    out.instruments_seen = s.instruments_seen;
    out.instrument_count = s.instrument_count;
    out.instruments = valid(s.instruments, s.instrument_count);
    out.line_count = s.line_count;
    out.lines = valid(s.lines, s.line_count);
    out.channel_groups = s.channel_groups;
    out.channel_counter_count = s.channel_counter_count;
    out.channel_counters = valid(s.channel_counters, s.channel_counter_count);
    out.histogram_count = s.histogram_count;
    out.histograms = valid(s.histograms, s.histogram_count);
    return out;
}

std::string MetricsRegistry::render() const { return render_prometheus(snapshot()); }

std::array<MetricsRegistry::Storage, 2> MetricsRegistry::storage() const noexcept {
    std::array<Storage, 2> out{};
    for (std::size_t i = 0; i < 2; ++i)
        out[i] = {buffers_[i].instruments.data(), buffers_[i].instruments.capacity(), buffers_[i].lines.data(),
                  buffers_[i].lines.capacity()};
    return out;
}

// ---------------------------------------------------------------- text format

namespace {

// Label values: escape \ " and newline; bytes outside printable ASCII
// (symbols come off the wire) become '?' so the output stays valid UTF-8.
void append_label_value(std::string& out, const char* s) {
    for (; *s != '\0'; ++s) {
        const auto c = static_cast<unsigned char>(*s);
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else if (c < 0x20 || c > 0x7E) out += '?';
        else out += static_cast<char>(c);
    }
}

class Writer {
public:
    explicit Writer(std::string& out) : out_(out) {}

    void family(std::string_view name, std::string_view type, std::string_view help) {
        fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    }
    void sample(std::string_view name, std::string_view labels, std::uint64_t v) {
        if (labels.empty()) fmt::format_to(std::back_inserter(out_), "{} {}\n", name, v);
        else fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, v);
    }
    void sample(std::string_view name, std::string_view labels, double v) {
        if (labels.empty()) fmt::format_to(std::back_inserter(out_), "{} {}\n", name, v);
        else fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, v);
    }
    // A family with one unlabelled sample.
    void single(std::string_view name, std::string_view type, std::string_view help, std::uint64_t v) {
        family(name, type, help);
        sample(name, {}, v);
    }

private:
    std::string& out_;
};

}  // namespace

std::string render_prometheus(const MetricsRegistry::Snapshot& s) {
    std::string out;
    out.reserve(4096 + s.instrument_count * 1600 + s.line_count * 600 + s.histogram_count * 1200);
    Writer w(out);
    constexpr std::string_view C = "counter", G = "gauge";
    // A family is exported only for the protocols it can move for (counter_fields.hpp).
    const auto exported = [&](const auto& f) { return f.exported_for(s.features); };

    // Every counter with a metric name in a table of counter_fields.hpp: one
    // family each, unlabelled for the global ones.
    auto singles = [&](const auto& table, const auto& values) {
        for (std::size_t i = 0; i < std::size(table); ++i)
            if (exported(table[i])) w.single(table[i].metric, C, table[i].help, values[i]);
    };

    // Decoder / global.
    singles(kDecoderCounterFields, s.decoder);
    singles(kSequencerCounterFields, s.sequencer);

    // Per instrument (those metrics.instruments selects): labelled by the
    // venue's own id (MDP3 SecurityID; QFB/1 instrument id; ITCH stock locate) and symbol.
    if (s.instrument_count != 0) {
        std::vector<std::string> labels;
        labels.reserve(s.instrument_count);
        for (std::size_t i = 0; i < s.instrument_count; ++i) {
            std::string l = fmt::format("instrument=\"{}\",symbol=\"", s.instruments[i].venue_id);
            append_label_value(l, s.instruments[i].symbol);
            l += '"';
            labels.push_back(std::move(l));
        }
        auto per_instrument = [&](std::string_view name, std::string_view type, std::string_view help, auto get) {
            w.family(name, type, help);
            for (std::size_t i = 0; i < s.instrument_count; ++i)
                w.sample(name, labels[i], static_cast<std::uint64_t>(get(s.instruments[i])));
        };
        using I = MetricsRegistry::InstrumentSample;
        for (const auto& f : kInstrumentCounterFields)
            if (exported(f)) per_instrument(f.metric, C, f.help, [&](const I& x) { return f.get(x.counters); });
        if (s.has_book_errors)
            per_instrument("tickgate_instrument_book_errors_total", C,
                           "Book entries the venue's rules refused (MDP3.md: an unknown level, a delete of none, ...).",
                           [](const I& x) { return x.book_errors; });
        per_instrument("tickgate_instrument_suspect", G, "1 while the instrument's book is suspect (gap not repaired).",
                       [](const I& x) { return x.suspect ? 1u : 0u; });
        if ((s.features & kInstrumentSequencing) != 0)
            per_instrument("tickgate_instrument_last_seq", G, "Last accepted instrument sequence number.",
                           [](const I& x) { return x.last_seq; });
    }

    // Per line: each family for the lines it can move on.
    std::vector<std::string> line_labels;
    line_labels.reserve(s.line_count);
    for (std::size_t i = 0; i < s.line_count; ++i)
        line_labels.push_back(
            fmt::format("channel=\"{}\",line=\"{}\"", s.lines[i].channel, line_name(s.lines[i].line)));
    for (std::size_t row = 0; row < std::size(kLineCounterFields); ++row) {
        const auto& f = kLineCounterFields[row];
        if (!exported(f)) continue;
        bool family = false;
        for (std::size_t i = 0; i < s.line_count; ++i) {
            if (!line_in(f.lines, s.lines[i].line)) continue;
            if (!family) w.family(f.metric, C, f.help);
            family = true;
            w.sample(f.metric, line_labels[i], s.lines[i].counters[row]);
        }
    }

    // A/B arbitration and the ring between the network and engine threads
    // (a stream that holds and re-requests merges its lines by position; the inline pipeline has no ring).
    if ((s.features & kPacketArbitration) != 0) singles(kArbiterCounterFields, s.arbiter);
    if (s.ring_capacity != 0) singles(kRingCounterFields, s.ring);

    // The protocol's own counters, per channel: each group for the channels that have it.
    for (std::size_t g = 0, at = 0; g < s.channel_groups.size(); at += s.channel_groups[g].size(), ++g) {
        const ChannelCounterGroup rows = s.channel_groups[g];
        const auto has = [&](const ChannelCounterSample& x) { return (x.groups >> g & 1u) != 0; };
        if (std::none_of(s.channel_counters.begin(), s.channel_counters.begin() + static_cast<std::ptrdiff_t>(s.channel_counter_count), has))
            continue;
        for (std::size_t row = 0; row < rows.size(); ++row) {
            const ChannelCounterRow& r = rows[row];
            if (row == 0 || rows[row - 1].metric != r.metric) w.family(r.metric, r.gauge ? G : C, r.help);
            for (std::size_t i = 0; i < s.channel_counter_count; ++i) {
                const ChannelCounterSample& x = s.channel_counters[i];
                if (!has(x)) continue;
                const std::string labels = r.label.empty() ? fmt::format("channel=\"{}\"", x.channel)
                                                           : fmt::format("channel=\"{}\",{}=\"{}\"", x.channel, r.label, r.label_value);
                w.sample(r.metric, labels, x.values[at + row]);
            }
        }
    }
    if (s.ring_capacity != 0) {
        w.single("tickgate_ring_fill", G, "Events queued in the ring at the last publish.", s.ring_fill);
        w.single("tickgate_ring_capacity", G, "Capacity of the event ring.", s.ring_capacity);
    }
    if (s.has_af_xdp) {
        const AfXdpCounters& x = s.af_xdp;
        w.family("tickgate_af_xdp_info", G, "The AF_XDP receive backend in use: XDP mode and zero-copy (value 1).");
        w.sample("tickgate_af_xdp_info",
                 std::string("mode=\"") + (s.af_xdp_native ? "native" : "generic") + "\",zero_copy=\"" +
                     (s.af_xdp_zero_copy ? "true" : "false") + "\"",
                 std::uint64_t{1});
        w.single("tickgate_af_xdp_frames_total", C, "Frames taken off the AF_XDP RX rings.", x.frames);
        w.single("tickgate_af_xdp_bytes_total", C, "Bytes of those frames, Ethernet headers included.", x.bytes);
        w.single("tickgate_af_xdp_bad_frames_total", C, "Frames that do not read as a whole IPv4/UDP datagram.",
                 x.bad_frames);
        w.single("tickgate_af_xdp_unmatched_frames_total", C, "Frames diverted to no line being received.",
                 x.unmatched_frames);
        w.single("tickgate_af_xdp_redirected_frames_total", C, "Frames the XDP program sent to an AF_XDP socket.",
                 x.redirected);
        w.single("tickgate_af_xdp_passed_frames_total", C, "Frames the XDP program passed to the kernel.",
                 x.passed_to_kernel);
        w.single("tickgate_af_xdp_rx_ring_full_drops_total", C, "Frames the kernel dropped: RX ring full.",
                 x.rx_ring_full);
        w.single("tickgate_af_xdp_fill_ring_empty_total", C, "Times the kernel found the fill ring empty.",
                 x.fill_ring_empty);
        w.single("tickgate_af_xdp_rx_dropped_total", C, "Frames the kernel dropped for other reasons.", x.rx_dropped);
    }

    // Gate.
    if (s.has_gate) {
        w.family("tickgate_gate_rejections_total", C, "Pre-trade gate checks that refused the price, by reason.");
        for (const GateReason r : {GateReason::kStale, GateReason::kStaleAtSource, GateReason::kSuspect,
                                   GateReason::kUnknown, GateReason::kNotSubscribed}) {
            const std::string l = fmt::format("reason=\"{}\"", to_string(r));
            w.sample("tickgate_gate_rejections_total", l, s.gate.get(r));
        }
    }

    // Kernel receive -> book, per channel: a histogram (cumulative buckets, le in seconds).
    if (s.histogram_count != 0) {
        constexpr std::string_view kName = "tickgate_receive_to_book_seconds";
        w.family(kName, "histogram",
                 "Kernel receive timestamp of a datagram to its update applied to the book, per channel.");
        for (std::size_t i = 0; i < s.histogram_count; ++i) {
            const MetricsRegistry::HistogramSample& h = s.histograms[i];
            std::uint64_t cumulative = 0;
            for (std::size_t b = 0; b < LatencyHistograms::kBuckets; ++b) {
                cumulative += h.buckets[b];
                const std::string le = b < LatencyHistograms::kBoundsNs.size()
                                           ? fmt::format("{}", static_cast<double>(LatencyHistograms::kBoundsNs[b]) / 1e9)
                                           : std::string("+Inf");
                w.sample(std::string(kName) + "_bucket", fmt::format("channel=\"{}\",le=\"{}\"", h.channel, le),
                         cumulative);
            }
            const std::string l = fmt::format("channel=\"{}\"", h.channel);
            w.sample(std::string(kName) + "_sum", l, static_cast<double>(h.sum_ns) / 1e9);
            w.sample(std::string(kName) + "_count", l, cumulative);
        }
    }

    w.single("tickgate_instruments_seen", G, "Instruments seen in any message (metrics.instruments says which are listed).",
             s.instruments_seen);
    w.single("tickgate_metrics_publish_generation", G, "Snapshots published by the engine thread (0: none yet).",
             s.generation);
    w.family("tickgate_metrics_publish_timestamp_seconds", G, "Unix time of the last publish by the engine thread.");
    w.sample("tickgate_metrics_publish_timestamp_seconds", {}, static_cast<double>(s.published_ns) / 1e9);
    return out;
}

// ---------------------------------------------------------------- HTTP server
//
// One thread, one io_context, every connection asynchronous: a client that
// connects and sends nothing (or a byte now and then) holds a socket and a
// few KB, never a thread. Two rules keep such clients from locking a scraper
// out (see MetricsServer in the header):
//  - a request must arrive whole within kRequestDeadline;
//  - at most kMaxConnections are open, and a new connection closes the one
//    that has waited longest in its current read or write, never itself.

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// Writing a response: generous, since the response is complete and a slow
// reader that holds on is evicted like any other once the cap is reached.
constexpr auto kWriteDeadline = std::chrono::seconds(10);

class Session;

struct ServerShared {
    const MetricsRegistry* registry;
    std::atomic<std::uint64_t>* requests;
    // Open connections, least recently active first. Server thread only.
    std::list<Session*> open;
};

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, ServerShared& shared)
        : stream_(std::move(socket)), shared_(shared), place_(shared_.open.insert(shared_.open.end(), this)) {}
    ~Session() { leave_open_list(); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void read() {
        mark_active();
        parser_.emplace();
        parser_->header_limit(8192);
        parser_->body_limit(4096);
        // One deadline for the whole request, not per byte: a client
        // trickling a byte at a time is closed when it runs out.
        stream_.expires_after(MetricsServer::kRequestDeadline);
        http::async_read(stream_, buffer_, *parser_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    // Closes the connection to make room for a new one. It leaves the open
    // list now, so the cap sees the room at once; the pending operation then
    // completes with operation_aborted and releases the session.
    void evict() {
        leave_open_list();
        stream_.close();
    }

private:
    void mark_active() {
        if (listed_) shared_.open.splice(shared_.open.end(), shared_.open, place_);
    }
    void leave_open_list() {
        if (listed_) shared_.open.erase(place_);
        listed_ = false;
    }

    void on_read(beast::error_code ec) {
        if (ec) {
            // end_of_stream, deadline, eviction, bad request or shutdown: drop the connection.
            beast::error_code ignored;
            stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
            return;
        }
        const auto& req = parser_->get();
        auto res = std::make_shared<http::response<http::string_body>>();
        res->version(req.version());
        res->keep_alive(req.keep_alive());
        res->set(http::field::server, "tickgate");
        std::string_view target(req.target().data(), req.target().size());
        if (const auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
        const bool get_or_head = req.method() == http::verb::get || req.method() == http::verb::head;
        if (!get_or_head) {
            res->result(http::status::method_not_allowed);
            res->set(http::field::allow, "GET, HEAD");
            res->set(http::field::content_type, "text/plain; charset=utf-8");
            res->body() = "method not allowed: try GET /metrics\n";
        } else if (target == "/metrics") {
            try {
                res->result(http::status::ok);
                res->set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
                res->body() = shared_.registry->render();
            } catch (const std::exception& e) {
                res->result(http::status::internal_server_error);
                res->set(http::field::content_type, "text/plain; charset=utf-8");
                res->body() = std::string("render failed: ") + e.what() + "\n";
            }
        } else {
            res->result(http::status::not_found);
            res->set(http::field::content_type, "text/plain; charset=utf-8");
            res->body() = "not found: try GET /metrics\n";
        }
        res->prepare_payload();
        if (req.method() == http::verb::head) res->body().clear();  // Content-Length stays
        shared_.requests->fetch_add(1, std::memory_order_relaxed);
        res_ = res;
        mark_active();
        stream_.expires_after(kWriteDeadline);
        http::async_write(stream_, *res_, [self = shared_from_this()](beast::error_code wec, std::size_t) {
            self->on_write(wec);
        });
    }

    void on_write(beast::error_code ec) {
        const bool keep = res_ && res_->keep_alive();
        res_.reset();
        if (ec || !keep) {
            beast::error_code ignored;
            stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
            return;
        }
        read();
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_{8192};
    std::optional<http::request_parser<http::string_body>> parser_;
    std::shared_ptr<http::response<http::string_body>> res_;
    ServerShared& shared_;
    std::list<Session*>::iterator place_;  // in shared_.open while listed_
    bool listed_ = true;
};

}  // namespace

struct MetricsServer::Impl {
    // Destroyed bottom-up: the thread is joined, the acceptor closed, then
    // the io_context destroys pending handlers (and sessions, which still
    // touch `shared`).
    ServerShared shared{};
    net::io_context io{1};
    tcp::acceptor acceptor{io};
    std::thread thread;

    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
            if (!ec) {
                // Refusing the newcomer instead would let a few idle clients
                // lock every scraper out for as long as they care to stay.
                if (shared.open.size() >= kMaxConnections) shared.open.front()->evict();
                std::make_shared<Session>(std::move(socket), shared)->read();
            }
            accept();
        });
    }
};

MetricsServerOptions parse_metrics_listen(std::string_view text) {
    MetricsServerOptions o;
    std::string_view port_text = text;
    if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
        const std::string_view addr = text.substr(0, colon);
        if (!addr.empty()) o.address = std::string(addr);
        port_text = text.substr(colon + 1);
    }
    unsigned port = 0;
    const auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc{} || p != port_text.data() + port_text.size() || port > 65535)
        throw std::invalid_argument("metrics listen address: expected ADDRESS:PORT, got '" + std::string(text) + "'");
    o.port = static_cast<std::uint16_t>(port);
    return o;
}

MetricsServer::MetricsServer(const MetricsRegistry& registry, MetricsServerOptions options)
    : registry_(registry), options_(std::move(options)) {}

MetricsServer::~MetricsServer() { stop(); }

void MetricsServer::start() {
    if (impl_) return;
    beast::error_code ec;
    const net::ip::address addr = net::ip::make_address(options_.address, ec);
    if (ec) throw std::invalid_argument("metrics: bad listen address '" + options_.address + "'");
    const bool loopback_v4 = addr.is_v4() && (addr.to_v4().to_uint() >> 24) == 127;
    if (!loopback_v4 && !options_.allow_non_loopback)
        throw std::invalid_argument("metrics: refusing to listen on " + options_.address +
                                    " (not a 127.x address: metrics stay on the host; give a 127.x address to --metrics or metrics.listen)");
    auto impl = std::make_unique<Impl>();
    impl->shared.registry = &registry_;
    impl->shared.requests = &requests_;
    const tcp::endpoint ep(addr, options_.port);
    auto fail = [&](const char* what) {
        throw std::runtime_error(fmt::format("metrics: cannot {} {}:{}: {}", what, options_.address, options_.port,
                                             ec.message()));
    };
    impl->acceptor.open(ep.protocol(), ec);
    if (ec) fail("open");
    impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (ec) fail("set SO_REUSEADDR on");
    impl->acceptor.bind(ep, ec);
    if (ec) fail("bind");
    impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) fail("listen on");
    port_.store(impl->acceptor.local_endpoint().port(), std::memory_order_relaxed);
    impl->accept();
    Impl* raw = impl.get();
    impl->thread = std::thread([raw] {
        for (;;) {
            try {
                raw->io.run();
                return;
            } catch (...) {
                // A handler threw: keep serving.
            }
        }
    });
    impl_ = std::move(impl);
}

void MetricsServer::stop() {
    if (!impl_) return;
    impl_->io.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_.reset();  // destroys pending handlers and with them the sessions
}

}  // namespace tickgate
