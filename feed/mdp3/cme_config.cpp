#include "feed/mdp3/cme_config.hpp"

#include <fmt/format.h>
#include <pugixml.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <optional>

#include "tickgate/feed/capture.hpp"  // parse_ipv4
#include "tickgate/feed/config.hpp"   // ConfigError
#include "tickgate/text.hpp"

namespace tickgate::mdp3 {

namespace {

// The feeds tickgate joins, by CME's feed-type, and the keys they become.
struct FeedKind {
    std::string_view feed_type;
    std::string_view what;
    std::array<std::string_view, 2> keys;  // lines A, B
};
constexpr std::array<FeedKind, 3> kFeeds{{
    {"I", "incremental", {"a", "b"}},
    {"S", "snapshot", {"snapshot_a", "snapshot_b"}},
    {"N", "instrument replay", {"definition_a", "definition_b"}},
}};

struct Line {
    std::string group;
    std::uint16_t port = 0;
    std::vector<std::string> sources;  // the connection's own host-ips
};

// What the feeds imported so far use: group << 16 | port -> "channel N connection ID".
using Endpoints = std::map<std::uint64_t, std::string>;

class Reader {
public:
    Reader(std::string_view xml, const std::string& name) : xml_(xml), name_(name) {}

    [[noreturn]] void fail(std::ptrdiff_t offset, std::string_view what, std::string_view expected,
                           std::string_view got) const {
        throw ConfigError(fmt::format("{}:{}: {}: expected {}, got {}", name_, line_of(offset), what, expected, got));
    }
    [[noreturn]] void fail(const pugi::xml_node& node, std::string_view what, std::string_view expected,
                           std::string_view got) const {
        fail(node.offset_debug(), what, expected, got);
    }

    // The text of `node`'s child element `child`, or a ConfigError.
    std::string child_text(const pugi::xml_node& node, const char* child, std::string_view what) const {
        const pugi::xml_node c = node.child(child);
        if (!c) fail(node, what, fmt::format("a <{}> element", child), "none");
        return c.text().as_string();
    }

private:
    std::size_t line_of(std::ptrdiff_t offset) const {
        if (offset < 0) return 1;
        const auto end = xml_.begin() + std::min<std::size_t>(static_cast<std::size_t>(offset), xml_.size());
        return 1 + static_cast<std::size_t>(std::count(xml_.begin(), end, '\n'));
    }

    std::string_view xml_;
    const std::string& name_;
};

std::string quoted(std::string_view s) { return '"' + printable(s) + '"'; }

// One connection's line: its multicast group and port (not one another
// feed imported uses: tickgate tells lines apart by group:port), and its own
// host-ips as the line's sources — each a unicast host, each once, no more
// than a socket may join (config.cpp refuses the same when it loads);
// with `sources` false (--any-source) they are not written, nor checked.
Line read_line(const Reader& r, const pugi::xml_node& connection, std::string_view what, Endpoints& used,
               bool sources) {
    Line line;
    line.group = r.child_text(connection, "ip", what);
    const auto group = parse_ipv4(line.group);
    if (!group || !is_multicast(*group))
        r.fail(connection.child("ip"), what, "an IPv4 multicast group (224.0.0.0/4)", quoted(line.group));
    const std::string port = r.child_text(connection, "port", what);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
        r.fail(connection.child("port"), what, "a port in 1..65535", quoted(port));
    line.port = static_cast<std::uint16_t>(value);
    const auto endpoint = std::uint64_t{*group} << 16 | line.port;
    if (const auto [it, fresh] = used.emplace(endpoint, std::string(what)); !fresh)
        r.fail(connection.child("ip"), what, "a group:port no other feed imported uses",
               fmt::format("{}:{} (also {})", line.group, line.port, it->second));
    if (!sources) return line;
    for (const pugi::xml_node& h : connection.children("host-ip")) {
        const std::string host = h.text().as_string();
        const auto ip = parse_ipv4(host);
        // 0.0.0.0 is no sender; 224.0.0.0 and up (multicast, 240/4 reserved, broadcast) never one either.
        if (!ip || *ip == 0 || *ip >= 0xE000'0000u)
            r.fail(h, what, "host-ip: an IPv4 unicast host address (not 0.0.0.0, below 224.0.0.0)", quoted(host));
        if (std::find(line.sources.begin(), line.sources.end(), host) != line.sources.end())
            r.fail(h, what, "host-ip: each address once", quoted(host) + " twice");
        line.sources.push_back(host);
    }
    if (const std::uint32_t limit = max_sources_per_line(); line.sources.size() > limit)
        r.fail(connection, what,
               fmt::format("at most {} host-ip (the kernel's net.ipv4.igmp_max_msf: source filters per socket; "
                           "--any-source joins without them)",
                           limit),
               std::to_string(line.sources.size()));
    return line;
}

std::string toml_line(std::string_view key, const Line& line, const CmeImportOptions& options) {
    std::string sources;
    if (!line.sources.empty()) {
        sources = ", sources = [";
        for (std::size_t i = 0; i < line.sources.size(); ++i)
            sources += fmt::format("{}\"{}\"", i ? ", " : "", line.sources[i]);
        sources += "]";
    }
    return fmt::format("{} = {{ group = \"{}\", port = {}, interface = \"{}\"{} }}\n", key, line.group, line.port,
                       options.interface, sources);
}

// One channel's TOML: every feed of kFeeds with both lines, each line with
// its own connection's host-ips as sources (CME lists them per connection).
std::string channel_toml(const Reader& r, const pugi::xml_node& channel, std::uint16_t id,
                         const CmeImportOptions& options, Endpoints& used) {
    const std::string label = channel.attribute("label").as_string();
    std::string out = fmt::format("\n[[channel]]\nid = {}\nprotocol = \"mdp3\"\n", id);
    if (!label.empty()) out = fmt::format("\n# {}{}", printable(label), out);
    for (const FeedKind& kind : kFeeds) {
        std::array<std::optional<Line>, 2> lines;
        for (const pugi::xml_node& c : channel.child("connections").children("connection")) {
            if (std::string_view(c.child("type").attribute("feed-type").as_string()) != kind.feed_type) continue;
            const std::string cid = c.attribute("id").as_string();
            const std::string what = fmt::format("channel {} connection {}", id, printable(cid));
            const std::string feed = r.child_text(c, "feed", what);
            if (feed != "A" && feed != "B") r.fail(c.child("feed"), what, "feed A or B", quoted(feed));
            auto& slot = lines[feed == "A" ? 0 : 1];
            if (slot) r.fail(c, what, fmt::format("one {} feed {}", kind.what, feed), "a second one");
            slot = read_line(r, c, what, used, options.sources);
        }
        if (!lines[0] && !lines[1]) {
            // tickgate cannot run a channel without its incremental feed; the
            // snapshot and definition feeds are optional in its config.
            if (kind.feed_type == "I")
                r.fail(channel, fmt::format("channel {}", id), "incremental feeds A and B (feed-type I)", "none");
            continue;
        }
        if (!lines[0] || !lines[1])
            r.fail(channel, fmt::format("channel {}", id), fmt::format("{} feeds A and B", kind.what),
                   fmt::format("only {}", lines[0] ? "A" : "B"));
        out += toml_line(kind.keys[0], *lines[0], options);
        out += toml_line(kind.keys[1], *lines[1], options);
    }
    return out;
}

}  // namespace

std::string import_cme_channels(std::string_view xml, const std::string& name, const CmeImportOptions& options) {
    const Reader r(xml, name);
    pugi::xml_document doc;
    if (const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size()); !parsed)
        r.fail(parsed.offset, "config.xml", "well-formed XML", parsed.description());
    const pugi::xml_node root = doc.document_element();
    if (std::string_view(root.name()) != "configuration")
        r.fail(root, "config.xml", "CME's <configuration> root element", fmt::format("<{}>", printable(root.name())));

    std::map<std::uint16_t, pugi::xml_node> by_id;
    for (const pugi::xml_node& ch : root.children("channel")) {
        const std::string id = ch.attribute("id").as_string();
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
        if (ec != std::errc{} || end != id.data() + id.size() || value > 65535)
            r.fail(ch, "channel id", "an integer in 0..65535", quoted(id));
        if (!by_id.emplace(static_cast<std::uint16_t>(value), ch).second)
            r.fail(ch, "channel id", "each channel id once in the file", quoted(id) + " twice");
    }
    std::string out = fmt::format(
        "# CME MDP 3.0 channels imported by `tickgate config import-cme` from {}\n"
        "# (config.xml environment \"{}\", updated {}). Interface {} joins every line.\n",
        printable(name), printable(root.attribute("environment").as_string()),
        printable(root.attribute("updated").as_string()), options.interface);
    // `config check` refuses what `run` would; the interface is the caller's
    // to have checked (a host address), and a channel is imported once.
    Endpoints used;
    std::map<std::uint16_t, bool> imported;
    for (const std::uint16_t id : options.channels) {
        if (imported[id]) r.fail(root, "--channels", "each channel once", fmt::format("{} twice", id));
        imported[id] = true;
        const auto it = by_id.find(id);
        if (it == by_id.end()) {
            std::string known;
            for (const auto& [k, _] : by_id) known += (known.empty() ? "" : ", ") + std::to_string(k);
            r.fail(root, "--channels", fmt::format("a channel of the file ({})", known.empty() ? "none" : known),
                   std::to_string(id));
        }
        out += channel_toml(r, it->second, id, options, used);
    }
    // What is written loads: anything the checks above missed is refused
    // here rather than in `config check` or `run`.
    try {
        (void)parse_config(out, "import-cme output");
    } catch (const ConfigError& e) {
        r.fail(root, "config.xml", "channels tickgate's config accepts", e.what());
    }
    return out;
}

}  // namespace tickgate::mdp3
