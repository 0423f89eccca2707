// TOML configuration. A mistake found here costs one start-up; the same
// mistake found on a live feed costs much more, so every value is type- and
// range-checked, unknown keys are errors (a typo must not silently fall back
// to a default), and each error is one line: "FILE:LINE: KEY: expected ...".
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/protocols.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>

#include "tickgate/feed/capture.hpp"  // parse_ipv4
#include "tickgate/text.hpp"

namespace tickgate {
namespace {

constexpr bool kRequired = true;
constexpr std::int64_t kMaxInstruments = 16'777'216;
// [mdp3] max_definitions: 4 Mi definitions reserve 201 MB (touched only as they arrive).
constexpr std::int64_t kMaxMdp3Definitions = 4'194'304;
constexpr std::int64_t kMaxMemoryMb = 16'777'216;  // 16 TiB
constexpr std::string_view kThreadModes[] = {"blocking", "busy_poll"};
constexpr std::string_view kMetricsInstruments[] = {"all", "subscribed", "none"};
constexpr std::string_view kBusyPollIdle[] = {"spin", "yield"};
constexpr std::string_view kPipelines[] = {"two_thread", "inline"};
constexpr std::string_view kBackends[] = {"sockets", "af_xdp"};
constexpr std::string_view kXdpModes[] = {"auto", "native", "generic"};
constexpr std::string_view kXdpZeroCopy[] = {"auto", "true", "false"};
constexpr std::string_view kXdpFallback[] = {"none", "sockets"};
constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error", "off"};

// Values and keys are echoed in messages; escape them so that what() stays
// one line of plain text whatever the file contains (the terminal sanitizer
// of text.hpp, plus the quote that delimits the value).
std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (const char ch : s) {
        if (ch == '"') out += "\\\"";
        else append_printable(out, std::string_view(&ch, 1));
    }
    return out + '"';
}

std::string key_text(std::string_view key) {
    const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
    return bare ? std::string(key) : quoted(key);
}

std::string join(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : std::string(path) + '.' + std::string(key);
}

std::string describe(const toml::node& n) {
    if (const auto* v = n.as_string()) return "string " + quoted(v->get());
    if (const auto* v = n.as_integer()) return "integer " + std::to_string(v->get());
    if (const auto* v = n.as_boolean()) return v->get() ? "boolean true" : "boolean false";
    std::ostringstream os;
    if (const auto* v = n.as_floating_point()) {
        os << "float " << *v;  // TOML form: 250.0, not 250
    } else {
        os << n.type();  // table, array, date, time, date-time
    }
    return os.str();
}

std::string list_text(std::span<const std::string_view> names) {
    std::string out;
    for (const auto name : names) out += (out.empty() ? "one of " : ", ") + quoted(name);
    return out;
}

std::string range_text(std::int64_t lo, std::int64_t hi) {
    using L = std::numeric_limits<std::int64_t>;
    if (lo == L::min() && hi == L::max()) return "integer";
    return "integer in " + std::to_string(lo) + ".." + std::to_string(hi);
}

// 240/4 is reserved (and holds the broadcast address): never a host.
constexpr bool is_host_range(std::uint32_t a) { return a < 0xE000'0000u; }

bool valid_group(std::string_view s) {
    const auto a = parse_ipv4(s);
    return a && is_multicast(*a);
}
// 0.0.0.0 is allowed: it lets the kernel pick the interface.
bool valid_interface(std::string_view s) {
    const auto a = parse_ipv4(s);
    return a && is_host_range(*a);
}
bool valid_source(std::string_view s) {
    const auto a = parse_ipv4(s);
    return a && *a != 0 && is_host_range(*a);
}
bool valid_symbol(std::string_view s) {
    return !s.empty() && s.size() <= 16 && std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}
bool not_empty(std::string_view s) { return !s.empty(); }
// Why the GLIMPSE client could not read its password from `path` (relative:
// to the working directory, as the client reads it), or "" if it can: a
// readable regular file with a first line. Checked at load, so a missing
// file is a config error and not a start-up failure. The content is not kept.
std::string unreadable_password_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::strerror(errno);
    struct stat st {};
    std::string why;
    char c = 0;
    if (::fstat(fd, &st) != 0) why = std::strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = "not a regular file";
    else if (const ssize_t n = ::read(fd, &c, 1); n < 0) why = std::strerror(errno);
    else if (n == 0) why = "empty";
    ::close(fd);
    return why;
}

// "A.B.C.D:PORT": a strict dotted quad and a decimal port 0..65535 (no sign,
// no leading zeros). Nothing is resolved: a name would need DNS at start-up.
std::optional<std::pair<std::uint32_t, std::uint16_t>> parse_host_port(std::string_view s) {
    const auto colon = s.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto host = parse_ipv4(s.substr(0, colon));
    const std::string_view port_text = s.substr(colon + 1);
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (!host || port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() ||
        port > 65535 || (port_text.size() > 1 && port_text.front() == '0'))
        return std::nullopt;
    return std::pair{*host, static_cast<std::uint16_t>(port)};
}
// Metrics name every instrument and line: they stay on the host (127.0.0.0/8),
// as MetricsServer insists unless told otherwise in code.
// A re-request server: a unicast IPv4 host (not 0.0.0.0, not multicast) and a port 1..65535.
bool valid_rerequest_server(std::string_view s) {
    const auto hp = parse_host_port(s);
    return hp && hp->first != 0 && is_host_range(hp->first) && hp->second != 0;
}
// An interface name as the kernel takes it (IFNAMSIZ - 1 characters).
bool valid_interface_name(std::string_view s) {
    return !s.empty() && s.size() <= 15 && s.find_first_of("/ \t:") == std::string_view::npos;
}
// A SoupBinTCP username: 1..6 printable ASCII characters, no space (the field is space padded).
bool valid_soup_username(std::string_view s) {
    return !s.empty() && s.size() <= 6 && std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c <= 0x7e; });
}
// An environment variable's name: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(std::string_view s) {
    const auto word = [](char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    return !s.empty() && !(s[0] >= '0' && s[0] <= '9') && std::all_of(s.begin(), s.end(), word);
}
// A NATS server of [fanout] servers: "nats://A.B.C.D:PORT", an IPv4 unicast
// literal (nothing is resolved at start-up) and a port 1..65535.
bool valid_nats_server(std::string_view s) {
    constexpr std::string_view kScheme = "nats://";
    return s.substr(0, kScheme.size()) == kScheme && valid_rerequest_server(s.substr(kScheme.size()));
}
bool subject_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}
// [fanout] prefix: 1..64 characters, tokens of [A-Za-z0-9_-] separated by single dots.
bool valid_subject_prefix(std::string_view s) {
    if (s.empty() || s.size() > 64 || s.front() == '.' || s.back() == '.' || s.find("..") != std::string_view::npos)
        return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return c == '.' || subject_char(c); });
}
// A JetStream stream name: 1..64 of [A-Za-z0-9_-].
bool valid_stream_name(std::string_view s) {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), subject_char);
}
// A NATS user name: 1..64 printable ASCII characters, no space.
bool valid_nats_user(std::string_view s) {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c <= 0x7e; });
}
bool valid_metrics_listen(std::string_view s) {
    const auto hp = parse_host_port(s);
    return hp && (hp->first >> 24) == 127;
}

ConfigError error_at(const std::string& file, const toml::source_region& where, std::string_view key,
                     std::string_view message) {
    const auto line = std::max<toml::source_index>(where.begin.line, 1);
    return ConfigError(file + ':' + std::to_string(line) + ": " + std::string(key) + ": " + std::string(message));
}

// One TOML table being read: knows its file and dotted path, rejects keys
// outside its schema up front (so a misspelt key is reported as such rather
// than as the missing key it was meant to be), and reads typed, ranged values.
// Absent optional keys leave `out` untouched, so defaults stay in the structs.
class Table {
public:
    Table(const std::string& file, const toml::table& t, std::string path, std::initializer_list<std::string_view> keys)
        : file_(&file), t_(&t), path_(std::move(path)) {
        for (auto&& [key, value] : t) {
            if (std::find(keys.begin(), keys.end(), key.str()) == keys.end())
                throw error_at(file, key.source(), join(path_, key_text(key.str())), "unknown key");
        }
    }

    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    // The node of `key`, or nullptr when absent.
    [[nodiscard]] const toml::node* node(std::string_view key) const { return t_->get(key); }

    // At the node's line, or the table's own line when n is null (missing
    // key). An empty key names the table itself.
    [[noreturn]] void expected(const toml::node* n, std::string_view key, std::string_view what,
                               std::string_view got) const {
        throw error_at(*file_, n ? n->source() : t_->source(), key.empty() ? path_ : join(path_, key),
                       "expected " + std::string(what) + ", got " + std::string(got));
    }

    template <class T>
    const toml::node* integer(std::string_view key, T& out, std::int64_t lo, std::int64_t hi,
                              bool required = false, std::string_view why = {}) const {
        const auto what = range_text(lo, hi) + std::string(why);
        const toml::node* n = find(key, what, required);
        if (!n) return nullptr;
        const auto* v = n->as_integer();
        if (!v) expected(n, key, what, describe(*n));
        if (v->get() < lo || v->get() > hi) expected(n, key, what, std::to_string(v->get()));
        out = static_cast<T>(v->get());
        return n;
    }

    // An integer in lo..hi, or the string `word` (out: nullopt).
    template <class T>
    void integer_or_word(std::string_view key, std::optional<T>& out, std::int64_t lo, std::int64_t hi,
                         std::string_view word) const {
        const auto what = range_text(lo, hi) + " or \"" + std::string(word) + "\"";
        const toml::node* n = find(key, what, false);
        if (!n) return;
        if (const auto* s = n->as_string()) {
            if (s->get() != word) expected(n, key, what, describe(*n));
            out.reset();
            return;
        }
        const auto* v = n->as_integer();
        if (!v) expected(n, key, what, describe(*n));
        if (v->get() < lo || v->get() > hi) expected(n, key, what, std::to_string(v->get()));
        out = static_cast<T>(v->get());
    }

    void boolean(std::string_view key, bool& out) const {
        if (const toml::node* n = find(key, "boolean", false)) {
            const auto* v = n->as_boolean();
            if (!v) expected(n, key, "boolean", describe(*n));
            out = v->get();
        }
    }

    const toml::node* string(std::string_view key, std::string& out, std::string_view what,
                             bool (*valid)(std::string_view), bool required = false) const {
        const toml::node* n = find(key, what, required);
        if (!n) return nullptr;
        check_string(n, key, what, valid);
        out = n->as_string()->get();
        return n;
    }

    // Returns the matching entry of `names` (static storage), or nullopt if absent.
    std::optional<std::string_view> choice(std::string_view key, std::span<const std::string_view> names) const {
        const auto what = list_text(names);
        const toml::node* n = find(key, what, false);
        if (!n) return std::nullopt;
        const auto* v = n->as_string();
        const auto it = v ? std::find(names.begin(), names.end(), v->get()) : names.end();
        if (it == names.end()) expected(n, key, what, describe(*n));
        return *it;
    }

    const toml::node* strings(std::string_view key, std::vector<std::string>& out, std::string_view what,
                              bool (*valid)(std::string_view)) const {
        const toml::node* n = find(key, "", false);
        if (!n) return nullptr;
        const auto* arr = n->as_array();
        if (!arr) expected(n, key, "array of " + std::string(what) + " strings", describe(*n));
        out.clear();
        for (std::size_t i = 0; i < arr->size(); ++i) {
            check_string(arr->get(i), element(key, i), what, valid);
            out.emplace_back(arr->get(i)->as_string()->get());
        }
        return n;
    }

    // An array of integers, each in lo..hi.
    template <class T>
    const toml::node* integers(std::string_view key, std::vector<T>& out, std::int64_t lo, std::int64_t hi) const {
        const toml::node* n = find(key, "", false);
        if (!n) return nullptr;
        const auto* arr = n->as_array();
        const auto what = "array of integers in " + range_text(lo, hi);
        if (!arr) expected(n, key, what, describe(*n));
        out.clear();
        for (std::size_t i = 0; i < arr->size(); ++i) {
            const auto* v = arr->get(i)->as_integer();
            if (!v) expected(arr->get(i), element(key, i), "integer in " + range_text(lo, hi), describe(*arr->get(i)));
            if (v->get() < lo || v->get() > hi)
                expected(arr->get(i), element(key, i), "integer in " + range_text(lo, hi), std::to_string(v->get()));
            out.push_back(static_cast<T>(v->get()));
        }
        return n;
    }

    std::optional<Table> table(std::string_view key, std::initializer_list<std::string_view> keys,
                               bool required = false) const {
        const toml::node* n = find(key, "table", required);
        if (!n) return std::nullopt;
        const auto* t = n->as_table();
        if (!t) expected(n, key, "table", describe(*n));
        return Table(*file_, *t, join(path_, key), keys);
    }

    // [[key]]: calls f(Table) for each element.
    template <class F>
    void tables(std::string_view key, std::initializer_list<std::string_view> keys, F&& f) const {
        const toml::node* n = find(key, "", false);
        if (!n) return;
        const auto* arr = n->as_array();
        if (!arr) expected(n, key, "array of tables ([[" + std::string(key) + "]])", describe(*n));
        for (std::size_t i = 0; i < arr->size(); ++i) {
            const toml::node& e = *arr->get(i);
            const auto path = join(path_, key) + '[' + std::to_string(i) + ']';
            if (!e.is_table()) throw error_at(*file_, e.source(), path, "expected table, got " + describe(e));
            f(Table(*file_, *e.as_table(), path, keys));
        }
    }

private:
    const toml::node* find(std::string_view key, std::string_view what, bool required) const {
        const toml::node* n = t_->get(key);
        if (!n && required) expected(nullptr, key, what, "nothing (missing)");
        return n;
    }

    // `key` is relative to this table, possibly with an [index] suffix.
    void check_string(const toml::node* n, std::string_view key, std::string_view what,
                      bool (*valid)(std::string_view)) const {
        const auto* v = n->as_string();
        if (!v) expected(n, key, what, describe(*n));
        if (!valid(v->get())) expected(n, key, what, quoted(v->get()));
    }

    std::string element(std::string_view key, std::size_t i) const {
        return std::string(key) + '[' + std::to_string(i) + ']';
    }

    const std::string* file_;
    const toml::table* t_;
    std::string path_;
};

}  // namespace

std::uint32_t max_sources_per_line() noexcept {
    constexpr std::uint32_t kKernelDefault = 10;
    std::FILE* f = std::fopen("/proc/sys/net/ipv4/igmp_max_msf", "r");
    if (f == nullptr) return kKernelDefault;
    long v = 0;
    const bool ok = std::fscanf(f, "%ld", &v) == 1 && v >= 0 && v <= 1'000'000;
    std::fclose(f);
    return ok ? static_cast<std::uint32_t>(v) : kKernelDefault;
}

namespace {

// A list of sources (a channel's or a line's): each once, and no more than
// a socket may join (max_sources_per_line), which `run` would find out only
// as "IP_ADD_SOURCE_MEMBERSHIP failed: No buffer space available".
void check_sources(const Table& t, const toml::node* n, const std::vector<std::string>& sources) {
    if (!n) return;
    std::map<std::uint32_t, std::size_t> seen;
    for (std::size_t i = 0; i < sources.size(); ++i)
        if (const auto [it, fresh] = seen.emplace(*parse_ipv4(sources[i]), i); !fresh)
            t.expected(n, "sources", "each source once", quoted(sources[i]) + " twice");
    const std::uint32_t limit = max_sources_per_line();
    if (sources.size() > limit)
        t.expected(n, "sources",
                   "at most " + std::to_string(limit) +
                       " sources per line (the kernel's net.ipv4.igmp_max_msf: source filters per socket)",
                   std::to_string(sources.size()));
}

// `used` maps group << 16 | port to the first line using it: A/B arbitration
// and channel demultiplexing key on (group, port), so no two lines may share one.
// A line without its own `sources` takes the channel's.
LineConfig read_line(const Table& channel, std::string_view key, std::map<std::uint64_t, std::string>& used,
                     const std::vector<std::string>& channel_sources) {
    LineConfig line;
    const auto t = channel.table(key, {"group", "port", "interface", "sources"}, kRequired);
    t->string("group", line.group, "IPv4 multicast group (224.0.0.0/4)", valid_group, kRequired);
    t->integer("port", line.port, 1, 65535, kRequired);
    t->string("interface", line.interface, "IPv4 interface address", valid_interface);
    if (const toml::node* n = t->strings("sources", line.sources, "IPv4 unicast address", valid_source))
        check_sources(*t, n, line.sources);
    else
        line.sources = channel_sources;
    const auto endpoint = std::uint64_t{*parse_ipv4(line.group)} << 16 | line.port;
    if (const auto [it, fresh] = used.emplace(endpoint, t->path()); !fresh)
        t->expected(nullptr, "", "a group:port not used by another line",
                    line.group + ':' + std::to_string(line.port) + " (also " + it->second + ")");
    return line;
}

// An optional pair of lines (MDP3's snapshot or definition feed): both or
// neither, and only on a channel that speaks mdp3.
void read_line_pair(const Table& channel, const ChannelConfig& ch, std::string_view key_a, std::string_view key_b,
                    std::optional<LineConfig>& a, std::optional<LineConfig>& b,
                    std::map<std::uint64_t, std::string>& used) {
    const toml::node* na = channel.node(key_a);
    const toml::node* nb = channel.node(key_b);
    if (!na && !nb) return;
    if (ch.protocol != "mdp3")
        channel.expected(na ? na : nb, na ? key_a : key_b,
                         "no such key on a channel of protocol " + quoted(ch.protocol) +
                             " (snapshot and definition lines are MDP3's: protocol = \"mdp3\")",
                         describe(na ? *na : *nb));
    if (!na || !nb)
        channel.expected(nullptr, na ? key_b : key_a,
                         "table (" + std::string(key_a) + " and " + std::string(key_b) + " go together)",
                         "nothing (missing)");
    a = read_line(channel, key_a, used, ch.sources);
    b = read_line(channel, key_b, used, ch.sources);
}

void read_channels(const Table& root, Config& c) {
    std::map<std::uint16_t, std::string> ids;        // id -> path of first use
    std::map<std::uint64_t, std::string> endpoints;
    root.tables("channel",
                {"id", "protocol", "clock_offset_ns", "sources", "a", "b", "rerequest", "glimpse", "snapshot_a", "snapshot_b",
                 "definition_a", "definition_b"},
                [&](const Table& t) {
        ChannelConfig ch;
        const auto* id = t.integer("id", ch.id, 0, 65535, kRequired);
        if (const auto [it, fresh] = ids.emplace(ch.id, t.path()); !fresh)
            t.expected(id, "id", "a unique channel id", std::to_string(ch.id) + " (also " + it->second + ")");
        if (const auto p = t.choice("protocol", kProtocolNames)) ch.protocol = *p;
        if (!c.channels.empty() && ch.protocol != c.channels.front().protocol)
            t.expected(nullptr, "protocol",
                       "the protocol of the other channels (one handler speaks one): " + c.channels.front().protocol,
                       ch.protocol);
        t.integer("clock_offset_ns", ch.clock_offset_ns, std::numeric_limits<std::int64_t>::min(),
                  std::numeric_limits<std::int64_t>::max());
        check_sources(t, t.strings("sources", ch.sources, "IPv4 unicast address", valid_source), ch.sources);
        if (const auto* n = t.string("rerequest", ch.rerequest, "unicast IPv4 HOST:PORT (port 1..65535)",
                                     valid_rerequest_server)) {
            if (ch.protocol != "itch50")  // only MoldUDP64 has a re-request server
                t.expected(n, "rerequest", "no re-request server on a " + ch.protocol + " channel (itch50 only)",
                           quoted(ch.rerequest));
            const auto hp = parse_host_port(ch.rerequest);
            ch.rerequest_ip = hp->first;
            ch.rerequest_port = hp->second;
        }
        if (const auto* n = t.string("glimpse", ch.glimpse, "unicast IPv4 HOST:PORT (port 1..65535)",
                                     valid_rerequest_server)) {
            if (ch.protocol != "itch50")  // GLIMPSE is Nasdaq ITCH's snapshot service
                t.expected(n, "glimpse", "no GLIMPSE service on a " + ch.protocol + " channel (itch50 only)",
                           quoted(ch.glimpse));
            // The credentials it logs in with: [glimpse] username and one password source.
            const GlimpseConfig& g = c.glimpse;
            if (g.username.empty())
                t.expected(n, "glimpse", "a [glimpse] table with username (the SoupBinTCP login)", "none");
            if (g.password_file.empty() == g.password_env.empty())
                t.expected(n, "glimpse", "exactly one of [glimpse] password_file and password_env",
                           g.password_file.empty() ? "neither" : "both");
            const auto hp = parse_host_port(ch.glimpse);
            ch.glimpse_ip = hp->first;
            ch.glimpse_port = hp->second;
        }
        ch.a = read_line(t, "a", endpoints, ch.sources);
        ch.b = read_line(t, "b", endpoints, ch.sources);
        read_line_pair(t, ch, "snapshot_a", "snapshot_b", ch.snapshot_a, ch.snapshot_b, endpoints);
        read_line_pair(t, ch, "definition_a", "definition_b", ch.definition_a, ch.definition_b, endpoints);
        c.channels.push_back(std::move(ch));
    });
}

void read_instruments(const Table& root, Config& c) {
    if (const auto t = root.table("instruments", {"learn", "subscribe"})) {
        t->boolean("learn", c.learn_instruments);
        const auto* n = t->strings("subscribe", c.subscribe, "1..16 printable ASCII characters", valid_symbol);
        std::map<std::string_view, int> unique;
        for (const std::string& s : c.subscribe)
            if (++unique[s] > 1) t->expected(n, "subscribe", "each symbol once", quoted(s) + " twice");
        if (c.subscribe.size() > c.capacity.max_instruments)
            t->expected(n, "subscribe", "at most capacity.max_instruments symbols",
                        std::to_string(c.subscribe.size()));
    }
    std::map<std::uint32_t, std::string> ids;
    std::map<std::string, std::string> symbols;
    root.tables("instrument", {"id", "symbol", "price_exponent"}, [&](const Table& t) {
        InstrumentConfig ins;
        const auto* id = t.integer("id", ins.id, 0, std::int64_t{c.capacity.max_instruments} - 1, kRequired,
                                   " (below capacity.max_instruments)");
        if (const auto [it, fresh] = ids.emplace(ins.id, t.path()); !fresh)
            t.expected(id, "id", "a unique instrument id", std::to_string(ins.id) + " (also " + it->second + ")");
        const auto* symbol = t.string("symbol", ins.symbol, "1..16 printable ASCII characters", valid_symbol, kRequired);
        if (const auto [it, fresh] = symbols.emplace(ins.symbol, t.path()); !fresh)
            t.expected(symbol, "symbol", "a unique symbol", quoted(ins.symbol) + " (also " + it->second + ")");
        t.integer("price_exponent", ins.price_exponent, -18, 18);
        c.instruments.push_back(std::move(ins));
    });
}

constexpr std::string_view kFanoutStorage[] = {"memory", "file"};

// [fanout] (FanoutConfig): the keys `tickgate run --fanout` publishes with.
// Files named for credentials must be readable now, so a typo is a config
// error rather than a publisher that never logs in; their content is not kept.
void read_fanout(const Table& root, Config& c) {
    const auto t = root.table("fanout", {"servers", "prefix", "depth", "stream", "replicas", "storage",
                                         "credentials_file", "user", "password_file", "reconnect_wait_ms",
                                         "heartbeat_ms"});
    if (!t) return;
    FanoutConfig& f = c.fanout;
    f.configured = true;
    if (const auto* n = t->strings("servers", f.servers, "nats://A.B.C.D:PORT (IPv4, port 1..65535)", valid_nats_server)) {
        if (f.servers.empty()) t->expected(n, "servers", "at least one server", "[]");
        for (std::size_t i = 0; i < f.servers.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (f.servers[i] == f.servers[j]) t->expected(n, "servers", "each server once", quoted(f.servers[i]) + " twice");
    }
    t->string("prefix", f.prefix, "subject prefix: tokens of [A-Za-z0-9_-] joined by '.', 1..64 characters",
              valid_subject_prefix);
    t->integer("depth", f.depth, 1, 32);
    t->string("stream", f.stream, "JetStream stream name: 1..64 of [A-Za-z0-9_-]", valid_stream_name);
    t->integer("replicas", f.replicas, 1, 5);
    if (const auto storage = t->choice("storage", kFanoutStorage)) f.memory_storage = *storage == "memory";
    const auto readable = [&](std::string_view key, std::string& out, std::string_view what) {
        const auto* n = t->string(key, out, "non-empty path", not_empty);
        if (n)
            if (const std::string why = unreadable_password_file(out); !why.empty())
                t->expected(n, key, what, quoted(out) + " (" + why + ")");
        return n;
    };
    const auto* creds = readable("credentials_file", f.credentials_file, "a readable NATS credentials (.creds) file");
    const auto* user = t->string("user", f.user, "1..64 printable ASCII characters, no space", valid_nats_user);
    const auto* password = readable("password_file", f.password_file, "a readable file whose first line is the NATS password");
    if (creds && (user || password))
        t->expected(user ? user : password, user ? "user" : "password_file",
                    "either credentials_file or user with password_file, not both", "both");
    if ((user != nullptr) != (password != nullptr))
        t->expected(user ? user : password, user ? "password_file" : "user",
                    "user and password_file together", "only " + std::string(user ? "user" : "password_file"));
    t->integer("reconnect_wait_ms", f.reconnect_wait_ms, 1, 60'000);
    t->integer("heartbeat_ms", f.heartbeat_ms, 10, 60'000);
}

// Each key within its own range can still add up to more memory than the
// machine has (16777216 instruments × 1024 levels is 512 GiB of books): the
// whole is estimated from what the constructors allocate and refused here,
// before anything is allocated, at the line of a key of the largest part.
// `protocol` empty on a channel-less config: every protocol's estimate must
// fit (`config check` cannot know which --protocol it will be run with).
void check_memory(const toml::table& doc, const std::string& file, const Config& c, std::string_view protocol) {
    if (!c.channels.empty()) protocol = c.protocol();
    else if (!protocol.empty() && std::find(kProtocolNames.begin(), kProtocolNames.end(), protocol) == kProtocolNames.end())
        throw std::invalid_argument("parse_config: unknown protocol " + std::string(protocol));
    for (const std::string_view p : kProtocolNames) {
        if (!protocol.empty() && p != protocol) continue;
        const MemoryEstimate e = estimate_memory(c, p);
        if (mib_ceil(e.total_bytes) <= c.max_memory_mb) continue;
        const MemoryPart& big = e.largest();
        std::string_view key = "capacity.max_memory_mb";
        toml::source_region where{};
        for (const std::string_view k : big.keys) {
            if (const toml::node* n = doc.at_path(k).node()) {
                key = k;
                where = n->source();
                break;
            }
        }
        if (key == "capacity.max_memory_mb")
            if (const toml::node* n = doc.at_path(key).node()) where = n->source();
        std::string keys;
        for (const std::string_view k : big.keys) keys += (keys.empty() ? "" : " x ") + std::string(k);
        const std::string as = c.channels.empty() ? " as " + std::string(p) + (protocol.empty() ? " (no channels: any --protocol)" : "")
                                                  : std::string();
        throw error_at(file, where, key,
                       "expected a config needing at most " + std::to_string(c.max_memory_mb) +
                           " MiB (capacity.max_memory_mb), got an estimated " + std::to_string(mib_ceil(e.total_bytes)) +
                           " MiB reserved" + as + ", of which " + std::string(big.what) +
                           (keys.empty() ? std::string() : " (" + keys + ")") + " " + std::to_string(mib_ceil(big.bytes)) +
                           " MiB");
    }
}

}  // namespace

Config parse_config(std::string_view toml_text, const std::string& name, std::string_view protocol) {
    toml::table doc;
    try {
        doc = toml::parse(toml_text, std::string_view{name});
    } catch (const toml::parse_error& e) {
        auto description = std::string(e.description());
        std::replace(description.begin(), description.end(), '\n', ' ');
        throw error_at(name, e.source(), "TOML syntax error", description);
    }

    Config c;
    c.source = name;
    const Table root(name, doc, "",
                     {"instruments", "instrument", "channel", "capacity", "gate", "receiver", "threading", "logging",
                      "metrics", "moldudp64", "itch", "glimpse", "mdp3", "fanout"});

    // Capacity first: instrument ids are checked against it.
    if (const auto t = root.table("capacity", {"max_instruments", "book_depth", "recovery_depth", "recovery_instruments",
                                               "max_memory_mb"})) {
        t->integer("max_instruments", c.capacity.max_instruments, 1, kMaxInstruments);
        t->integer("book_depth", c.capacity.book_depth, 1, 1024);
        t->integer("recovery_depth", c.capacity.recovery_depth, 0, 65536);
        t->integer("recovery_instruments", c.capacity.recovery_instruments, 0, kMaxInstruments);
        t->integer("max_memory_mb", c.max_memory_mb, 1, kMaxMemoryMb);
    }
    if (const auto t = root.table("gate", {"stale_ms", "source_age_ms"})) {
        t->integer("stale_ms", c.gate.stale_ms, 1, 86'400'000);
        t->integer("source_age_ms", c.gate.source_age_ms, 1, 86'400'000);
    }
    if (const auto t = root.table("receiver", {"backend", "af_xdp", "ring_size", "rcvbuf_bytes", "batch",
                                               "arbitration", "arbitration_hold_us", "arbitration_window"})) {
        if (const auto backend = t->choice("backend", kBackends))
            c.receiver.backend = *backend == "af_xdp" ? ReceiveBackend::kAfXdp : ReceiveBackend::kSockets;
        if (const auto x = t->table("af_xdp", {"interface", "queues", "mode", "zero_copy", "frames", "fallback"})) {
            AfXdpConfig& a = c.receiver.af_xdp;
            x->string("interface", a.interface, "network interface name (1..15 characters, no '/' or space)",
                      valid_interface_name);
            const auto* queues = x->integers("queues", a.queues, 0, 255);
            if (queues && a.queues.empty()) x->expected(queues, "queues", "at least one RX queue", "[]");
            for (std::size_t i = 0; i < a.queues.size(); ++i)
                for (std::size_t j = 0; j < i; ++j)
                    if (a.queues[i] == a.queues[j])
                        x->expected(queues, "queues", "each queue once", "queue " + std::to_string(a.queues[i]) + " twice");
            if (const auto mode = x->choice("mode", kXdpModes)) a.mode = *mode;
            if (const auto zc = x->choice("zero_copy", kXdpZeroCopy)) a.zero_copy = *zc;
            const auto* frames = x->integer("frames", a.frames, 64, 262'144);
            if (!std::has_single_bit(a.frames))
                x->expected(frames, "frames", "a power of two in 64..262144", std::to_string(a.frames));
            if (const auto fb = x->choice("fallback", kXdpFallback)) a.fallback_to_sockets = *fb == "sockets";
        }
        if (c.receiver.backend == ReceiveBackend::kAfXdp && c.receiver.af_xdp.interface.empty())
            t->expected(t->node("backend"), "af_xdp.interface", "the interface to attach to (backend = \"af_xdp\")",
                        "nothing (missing)");
        // The ring indexes with a mask.
        const auto* ring = t->integer("ring_size", c.receiver.ring_size, 1024, 67'108'864);
        if (!std::has_single_bit(c.receiver.ring_size))
            t->expected(ring, "ring_size", "a power of two in 1024..67108864", std::to_string(c.receiver.ring_size));
        t->integer("rcvbuf_bytes", c.receiver.rcvbuf_bytes, 65'536, 1'073'741'824);
        t->integer("batch", c.receiver.batch, 1, 1024);
        t->boolean("arbitration", c.receiver.arbitration);
        t->integer("arbitration_hold_us", c.receiver.arbitration_hold_us, 1, 1'000'000);
        const auto* window = t->integer("arbitration_window", c.receiver.arbitration_window, 2, 4096);
        if (!std::has_single_bit(c.receiver.arbitration_window))
            t->expected(window, "arbitration_window", "a power of two in 2..4096",
                        std::to_string(c.receiver.arbitration_window));
    }
    if (const auto t = root.table("threading", {"mode", "busy_poll_idle", "receiver_cpu", "engine_cpu", "pipeline"})) {
        if (const auto mode = t->choice("mode", kThreadModes))
            c.threading.mode = *mode == "busy_poll" ? ThreadMode::kBusyPoll : ThreadMode::kBlocking;
        if (const auto idle = t->choice("busy_poll_idle", kBusyPollIdle)) c.threading.busy_poll_yield = *idle == "yield";
        t->integer("receiver_cpu", c.threading.receiver_cpu, -1, 1023);
        t->integer("engine_cpu", c.threading.engine_cpu, -1, 1023);
        if (const auto pipeline = t->choice("pipeline", kPipelines))
            c.threading.pipeline = *pipeline == "inline" ? PipelineMode::kInline : PipelineMode::kTwoThread;
    }
    if (const auto t = root.table("logging", {"level", "sink"})) {
        if (const auto level = t->choice("level", kLogLevels)) c.logging.level = *level;
        t->string("sink", c.logging.sink, "non-empty string (\"stderr\" or a file path)", not_empty);
    }
    if (const auto t = root.table("metrics", {"enabled", "listen", "instruments"})) {
        t->boolean("enabled", c.metrics.enabled);
        if (const auto which = t->choice("instruments", kMetricsInstruments))
            c.metrics.instruments = *which == "none"         ? MetricsInstruments::kNone
                                    : *which == "subscribed" ? MetricsInstruments::kSubscribed
                                                             : MetricsInstruments::kAll;
        std::string listen;
        if (t->string("listen", listen, "IPv4 loopback HOST:PORT (127.0.0.0/8, port 0..65535)",
                      valid_metrics_listen)) {
            c.metrics.address = listen.substr(0, listen.rfind(':'));
            c.metrics.port = parse_host_port(listen)->second;
        }
    }
    if (const auto t = root.table("moldudp64", {"gap_timeout_ms", "max_held_packets", "max_request_messages",
                                                "request_timeout_ms", "max_requests", "max_requests_per_s",
                                                "recover_from_start"})) {
        t->integer("gap_timeout_ms", c.moldudp64.gap_timeout_ms, 1, 3'600'000);
        t->integer("max_held_packets", c.moldudp64.max_held_packets, 1, 1'048'576);
        // A request's MessageCount is a u16 and 0xFFFF means end of session.
        t->integer("max_request_messages", c.moldudp64.max_request_messages, 1, 65'534);
        t->integer("request_timeout_ms", c.moldudp64.request_timeout_ms, 1, 60'000);
        t->integer("max_requests", c.moldudp64.max_requests, 1, 1'000);
        t->integer("max_requests_per_s", c.moldudp64.max_requests_per_s, 1, 1'000'000);
        t->boolean("recover_from_start", c.moldudp64.recover_from_start);
    }
    if (const auto t = root.table("itch", {"max_orders", "max_levels", "utc_offset_minutes"})) {
        t->integer("max_orders", c.itch.max_orders, 1, 1'073'741'824);
        t->integer("max_levels", c.itch.max_levels, 1, 1'073'741'824);
        // Venue time minus UTC, wrapped into ±12 h as the spec's estimate is.
        t->integer_or_word("utc_offset_minutes", c.itch.utc_offset_minutes, -720, 720, "auto");
    }
    if (const auto t = root.table("glimpse", {"username", "password_file", "password_env", "min_interval_ms",
                                              "timeout_ms", "buffer_mb"})) {
        // The password itself is never in the config: a file or a variable names it.
        t->string("username", c.glimpse.username, "1..6 printable ASCII characters, no space", valid_soup_username);
        if (const auto* n = t->string("password_file", c.glimpse.password_file, "non-empty path", not_empty))
            if (const std::string why = unreadable_password_file(c.glimpse.password_file); !why.empty())
                t->expected(n, "password_file", "a readable file whose first line is the GLIMPSE password",
                            quoted(c.glimpse.password_file) + " (" + why + ")");
        t->string("password_env", c.glimpse.password_env, "environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
                  valid_env_name);
        t->integer("min_interval_ms", c.glimpse.min_interval_ms, 1, 3'600'000);
        t->integer("timeout_ms", c.glimpse.timeout_ms, 1, 3'600'000);
        t->integer("buffer_mb", c.glimpse.buffer_mb, 1, 65'536);
        c.glimpse.buffer_bytes = std::uint64_t{c.glimpse.buffer_mb} << 20;
    }
    if (const auto t = root.table("mdp3", {"book_depth", "max_definitions"})) {
        t->integer("book_depth", c.mdp3.book_depth, 1, c.capacity.book_depth, false, " (at most capacity.book_depth)");
        t->integer("max_definitions", c.mdp3.max_definitions, 1, kMaxMdp3Definitions);
    }
    read_fanout(root, c);
    read_instruments(root, c);
    read_channels(root, c);
    if (c.channels.empty() && !protocol.empty()) c.default_protocol = std::string(protocol);
    check_memory(doc, name, c, protocol);
    return c;
}

namespace {
std::string file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}
}  // namespace

// Only a regular file of at most kMaxConfigBytes: `--config /dev/zero` would
// otherwise grow memory until the OOM killer came, and a FIFO would hang
// start-up waiting for a writer (hence O_NONBLOCK on open; the file is
// checked before anything is read).
Config load_config(const std::string& path, std::string_view protocol) {
    const auto cannot_read = [&](int err) { return ConfigError(path + ": cannot read: " + std::strerror(err)); };
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw cannot_read(errno);
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } const close_at_exit{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) throw cannot_read(errno);
    if (!S_ISREG(st.st_mode)) throw ConfigError(path + ": expected a regular file, got " + file_kind(st.st_mode));
    const auto too_large = [&](const std::string& got) {
        return ConfigError(path + ": expected a config file of at most " + std::to_string(kMaxConfigBytes) +
                           " bytes, got " + got);
    };
    if (static_cast<std::uint64_t>(st.st_size) > kMaxConfigBytes)
        throw too_large(std::to_string(st.st_size) + " bytes");
    std::string text;
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw cannot_read(errno);
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > kMaxConfigBytes) throw too_large("more (it grew while being read)");
    }
    return parse_config(text, path, protocol);
}

}  // namespace tickgate
