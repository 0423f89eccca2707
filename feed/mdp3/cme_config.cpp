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
};

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

Line read_line(const Reader& r, const pugi::xml_node& connection, std::string_view what) {
    Line line;
    line.group = r.child_text(connection, "ip", what);
    if (const auto ip = parse_ipv4(line.group); !ip || !is_multicast(*ip))
        r.fail(connection.child("ip"), what, "an IPv4 multicast group (224.0.0.0/4)", quoted(line.group));
    const std::string port = r.child_text(connection, "port", what);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
        r.fail(connection.child("port"), what, "a port in 1..65535", quoted(port));
    line.port = static_cast<std::uint16_t>(value);
    return line;
}

std::string toml_line(std::string_view key, const Line& line, std::string_view interface) {
    return fmt::format("{} = {{ group = \"{}\", port = {}, interface = \"{}\" }}\n", key, line.group, line.port,
                       interface);
}

// One channel's TOML: every feed of kFeeds with both lines, its sources.
std::string channel_toml(const Reader& r, const pugi::xml_node& channel, std::uint16_t id,
                         const CmeImportOptions& options) {
    const std::string label = channel.attribute("label").as_string();
    std::string out = fmt::format("\n[[channel]]\nid = {}\nprotocol = \"mdp3\"\n", id);
    if (!label.empty()) out = fmt::format("\n# {}{}", printable(label), out);
    std::vector<std::string> sources;
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
            slot = read_line(r, c, what);
            for (const pugi::xml_node& h : c.children("host-ip")) {
                const std::string host = h.text().as_string();
                if (const auto ip = parse_ipv4(host); !ip || is_multicast(*ip))
                    r.fail(h, what, "host-ip: an IPv4 unicast address", quoted(host));
                if (std::find(sources.begin(), sources.end(), host) == sources.end()) sources.push_back(host);
            }
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
        out += toml_line(kind.keys[0], *lines[0], options.interface);
        out += toml_line(kind.keys[1], *lines[1], options.interface);
    }
    if (options.sources && !sources.empty()) {
        out += "sources = [";
        for (std::size_t i = 0; i < sources.size(); ++i) out += fmt::format("{}\"{}\"", i ? ", " : "", sources[i]);
        out += "]\n";
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
        by_id.emplace(static_cast<std::uint16_t>(value), ch);
    }
    std::string out = fmt::format(
        "# CME MDP 3.0 channels imported by `tickgate config import-cme` from {}\n"
        "# (config.xml environment \"{}\", updated {}). Interface {} joins every line.\n",
        printable(name), printable(root.attribute("environment").as_string()),
        printable(root.attribute("updated").as_string()), options.interface);
    for (const std::uint16_t id : options.channels) {
        const auto it = by_id.find(id);
        if (it == by_id.end()) {
            std::string known;
            for (const auto& [k, _] : by_id) known += (known.empty() ? "" : ", ") + std::to_string(k);
            r.fail(root, "--channels", fmt::format("a channel of the file ({})", known.empty() ? "none" : known),
                   std::to_string(id));
        }
        out += channel_toml(r, it->second, id, options);
    }
    return out;
}

}  // namespace tickgate::mdp3
