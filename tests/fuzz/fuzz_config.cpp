// fuzz_config: the input as TOML text through parse_config().
// ConfigError is the expected failure; its what() must be one line of the
// form "fuzz.toml:LINE: KEY: ..." (config.hpp). Any other exception type
// escapes and is a finding. A config that parses must satisfy every range and
// uniqueness rule configs/README.md states, and every line's group must also
// be readable by tickgate::parse_ipv4 (the parser replay uses to match lines),
// so a config can never name a line that replay silently ignores.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_common.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"

namespace {

using namespace tickgate;

const std::string kName = "fuzz.toml";

bool printable_symbol(const std::string& s) {
    return !s.empty() && s.size() <= 16 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

void check_line(const LineConfig& l, std::set<std::pair<std::uint32_t, std::uint16_t>>& endpoints) {
    const auto g = parse_ipv4(l.group);
    FUZZ_CHECK(g.has_value());
    FUZZ_CHECK(is_multicast(*g));
    FUZZ_CHECK(l.port >= 1);
    const auto i = parse_ipv4(l.interface);
    FUZZ_CHECK(i.has_value());
    FUZZ_CHECK(*i < 0xE000'0000u);
    FUZZ_CHECK(endpoints.emplace(*g, l.port).second);  // no two lines share group:port
    // What run joins: each source once, valid, no more than a socket may hold.
    FUZZ_CHECK(l.sources.size() <= tickgate::max_sources_per_line());
    std::set<std::uint32_t> sources;
    for (const std::string& s : l.sources) {
        const auto a = parse_ipv4(s);
        FUZZ_CHECK(a.has_value() && *a != 0 && *a < 0xE000'0000u);
        FUZZ_CHECK(sources.insert(*a).second);
    }
}

void check_config(const Config& c) {
    FUZZ_CHECK(c.source == kName);
    const Capacity& cap = c.capacity;
    FUZZ_CHECK(cap.max_instruments >= 1 && cap.max_instruments <= 16'777'216);
    FUZZ_CHECK(cap.book_depth >= 1 && cap.book_depth <= 1024);
    FUZZ_CHECK(cap.recovery_depth <= 65536);
    FUZZ_CHECK(cap.recovery_instruments <= 16'777'216);
    FUZZ_CHECK(c.gate.stale_ms >= 1 && c.gate.stale_ms <= 86'400'000);
    FUZZ_CHECK(c.gate.source_age_ms >= 1 && c.gate.source_age_ms <= 86'400'000);
    const ReceiverConfig& r = c.receiver;
    FUZZ_CHECK(std::has_single_bit(r.ring_size) && r.ring_size >= 1024 && r.ring_size <= 67'108'864);
    FUZZ_CHECK(r.rcvbuf_bytes >= 65'536 && r.rcvbuf_bytes <= 1'073'741'824);
    FUZZ_CHECK(r.batch >= 1 && r.batch <= 1024);
    FUZZ_CHECK(r.arbitration_hold_us >= 1 && r.arbitration_hold_us <= 1'000'000);
    FUZZ_CHECK(std::has_single_bit(r.arbitration_window) && r.arbitration_window >= 2 &&
               r.arbitration_window <= 4096);
    FUZZ_CHECK(c.threading.receiver_cpu >= -1 && c.threading.receiver_cpu <= 1023);
    FUZZ_CHECK(c.threading.engine_cpu >= -1 && c.threading.engine_cpu <= 1023);
    FUZZ_CHECK(c.threading.mode == ThreadMode::kBlocking || c.threading.mode == ThreadMode::kBusyPoll);
    // The metrics endpoint can only ever listen on loopback.
    FUZZ_CHECK(c.metrics.address.rfind("127.", 0) == 0 && parse_ipv4(c.metrics.address).has_value());
    static constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
    FUZZ_CHECK(std::find(std::begin(kLevels), std::end(kLevels), c.logging.level) != std::end(kLevels));
    FUZZ_CHECK(!c.logging.sink.empty());

    std::set<std::uint32_t> ids;
    std::set<std::string> symbols;
    for (const InstrumentConfig& ins : c.instruments) {
        FUZZ_CHECK(ins.id < cap.max_instruments);
        FUZZ_CHECK(ids.insert(ins.id).second);
        FUZZ_CHECK(printable_symbol(ins.symbol));
        FUZZ_CHECK(symbols.insert(ins.symbol).second);
        FUZZ_CHECK(ins.price_exponent >= -18 && ins.price_exponent <= 18);
    }

    std::set<std::uint16_t> channels;
    std::set<std::pair<std::uint32_t, std::uint16_t>> endpoints;
    for (const ChannelConfig& ch : c.channels) {
        FUZZ_CHECK(channels.insert(ch.id).second);
        check_line(ch.a, endpoints);
        check_line(ch.b, endpoints);
        for (const std::string& s : ch.sources) {
            const auto a = parse_ipv4(s);
            FUZZ_CHECK(a.has_value() && *a != 0 && *a < 0xE000'0000u);
        }
    }
}

void check_error(const ConfigError& e) {
    const std::string_view w = e.what();
    FUZZ_CHECK(w.find('\n') == std::string_view::npos);  // one line, whatever the file holds
    // "fuzz.toml:LINE: KEY: ..."
    FUZZ_CHECK(w.substr(0, kName.size() + 1) == kName + ":");
    std::size_t i = kName.size() + 1;
    const std::size_t digits_from = i;
    while (i < w.size() && w[i] >= '0' && w[i] <= '9') ++i;
    FUZZ_CHECK(i > digits_from);
    FUZZ_CHECK(w.substr(i, 2) == ": ");
    FUZZ_CHECK(w[digits_from] != '0');  // lines are 1-based
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // libFuzzer's buffer is an exact-size heap block: ASan catches a read past the text.
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const Config c = parse_config(text, kName);
        check_config(c);
    } catch (const ConfigError& e) {
        check_error(e);
    }
    return 0;
}
