// `tickgate config import-cme` (feed/mdp3/cme_config.cpp) on an abridged copy
// of CME's published config.xml (cme_config_sample.xml, next to this file).
// Expected groups, ports and hosts are read off the sample by eye: e.g.
// connection 310IA is <ip>224.0.31.1</ip> <port>14310</port>.
#include "feed/mdp3/cme_config.hpp"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tickgate/feed/config.hpp"

namespace tickgate::mdp3 {
namespace {

const std::string kSample = TICKGATE_SOURCE_DIR "/tests/feed/mdp3/cme_config_sample.xml";

std::string sample_text() {
    std::ifstream in(kSample);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string import(std::string_view xml, std::vector<std::uint16_t> channels, bool sources = true) {
    CmeImportOptions o;
    o.channels = std::move(channels);
    o.sources = sources;
    return import_cme_channels(xml, "config.xml", o);
}

// The message of the ConfigError that `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

void expect_line(const toml::table& channel, std::string_view key, std::string_view group, int port) {
    SCOPED_TRACE(std::string(key));
    const auto* line = channel[key].as_table();
    ASSERT_NE(line, nullptr);
    EXPECT_EQ((*line)["group"].value_or(std::string{}), group);
    EXPECT_EQ((*line)["port"].value_or(0), port);
    EXPECT_EQ((*line)["interface"].value_or(std::string{}), "127.0.0.1");
}

TEST(CmeConfigImport, ChannelsBecomeIncrementalSnapshotAndDefinitionLinesInTheOrderAsked) {
    const toml::table doc = toml::parse(import(sample_text(), {311, 310}));
    const auto* channels = doc["channel"].as_array();
    ASSERT_NE(channels, nullptr);
    ASSERT_EQ(channels->size(), 2u);
    const toml::table& c311 = *(*channels)[0].as_table();
    const toml::table& c310 = *(*channels)[1].as_table();
    EXPECT_EQ(c311["id"].value_or(0), 311);
    EXPECT_EQ(c310["id"].value_or(0), 310);
    EXPECT_EQ(c310["protocol"].value_or(std::string{}), "mdp3");
    expect_line(c310, "a", "224.0.31.1", 14310);
    expect_line(c310, "b", "224.0.32.1", 15310);
    expect_line(c310, "snapshot_a", "224.0.31.22", 14310);
    expect_line(c310, "snapshot_b", "224.0.32.22", 15310);
    expect_line(c310, "definition_a", "224.0.31.43", 14310);
    expect_line(c310, "definition_b", "224.0.32.43", 15310);
    expect_line(c311, "a", "224.0.31.2", 14311);
    expect_line(c311, "snapshot_b", "224.0.32.23", 15311);
    // Each line gets its own connection's host-ip, in file order (CME lists
    // them per connection); the TCP replay host (205.209.220.72) and the MBO
    // snapshot hosts (205.209.222.108, ...) are nowhere, and the channel has
    // no `sources` of its own.
    const auto sources_of = [](const toml::table& ch, std::string_view key) {
        std::vector<std::string> got;
        if (const auto* a = (*ch[key].as_table())["sources"].as_array())
            for (const auto& s : *a) got.push_back(s.value_or(std::string{}));
        return got;
    };
    using V = std::vector<std::string>;
    EXPECT_EQ(sources_of(c310, "a"), (V{"205.209.223.70", "205.209.221.70"}));
    EXPECT_EQ(sources_of(c310, "b"), (V{"205.209.212.70", "205.209.211.70"}));
    EXPECT_EQ(sources_of(c310, "snapshot_a"), (V{"205.209.222.87", "205.209.222.77"}));
    EXPECT_EQ(sources_of(c310, "snapshot_b"), (V{"205.209.213.52", "205.209.214.52"}));
    EXPECT_EQ(sources_of(c310, "definition_a"), (V{"205.209.222.85", "205.209.222.73"}));
    EXPECT_EQ(sources_of(c310, "definition_b"), (V{"205.209.214.48", "205.209.213.48"}));
    EXPECT_FALSE(c310.contains("sources"));
}

// What it writes is a config tickgate loads as it is: the same lines.
TEST(CmeConfigImport, TheOutputIsAValidConfig) {
    const Config c = parse_config(import(sample_text(), {310, 311}), "cme.toml");
    ASSERT_EQ(c.channels.size(), 2u);
    EXPECT_EQ(c.protocol(), "mdp3");
    const ChannelConfig& ch = c.channels[0];
    EXPECT_EQ(ch.id, 310);
    EXPECT_EQ(ch.a.group, "224.0.31.1");
    ASSERT_TRUE(ch.snapshot_a && ch.snapshot_b && ch.definition_a && ch.definition_b);
    EXPECT_EQ(ch.snapshot_b->group, "224.0.32.22");
    EXPECT_EQ(ch.snapshot_b->port, 15310);
    EXPECT_EQ(ch.definition_a->group, "224.0.31.43");
    // Every line joins its own two senders: within the kernel's per-socket
    // source-filter limit (12 on one socket failed in run with ENOBUFS).
    for (const LineConfig* line : ch.lines()) {
        ASSERT_NE(line, nullptr);
        EXPECT_EQ(line->sources.size(), 2u) << line->group;
    }
    EXPECT_EQ(ch.a.sources, (std::vector<std::string>{"205.209.223.70", "205.209.221.70"}));
    EXPECT_TRUE(ch.sources.empty());
}

TEST(CmeConfigImport, AnySourceLeavesSourcesOut) {
    const std::string toml = import(sample_text(), {310}, false);
    EXPECT_EQ(toml.find("sources"), std::string::npos) << toml;
    const Config cfg = parse_config(toml, "any.toml");  // lines() points into it: keep it alive
    for (const LineConfig* line : cfg.channels[0].lines()) EXPECT_TRUE(line->sources.empty());
}

// Item 11: import writes only what `config check` and `run` accept. Each
// of these was written and then refused by config check (or, for 12
// sources on one line, by run: IP_ADD_SOURCE_MEMBERSHIP ENOBUFS); now the
// import refuses it with the XML's FILE:LINE.
TEST(CmeConfigImport, ImportRuleWritesOnlyWhatLoadsAndRuns) {
    const auto replaced = [](std::string from, std::string_view what, std::string_view by) {
        from.replace(from.find(what), what.size(), by);
        return from;
    };
    // A channel asked twice.
    EXPECT_EQ(error_of([] { (void)import(sample_text(), {310, 310}); }),
              "config.xml:6: --channels: expected each channel once, got 310 twice");
    // host-ips that are no sender (line 29: 310IA's first host-ip).
    for (const char* bad : {"0.0.0.0", "240.0.0.1", "255.255.255.255", "224.0.0.1", "205.209.223"}) {
        SCOPED_TRACE(bad);
        const std::string xml = replaced(sample_text(), "205.209.223.70", bad);
        EXPECT_EQ(error_of([&] { (void)import(xml, {310}); }),
                  std::string("config.xml:29: channel 310 connection 310IA: expected host-ip: an IPv4 unicast host "
                              "address (not 0.0.0.0, below 224.0.0.0), got \"") +
                      bad + "\"");
        EXPECT_NO_THROW((void)import(xml, {310}, false)) << "--any-source writes no sources";
    }
    // The same host-ip twice on a connection.
    EXPECT_EQ(error_of([&] { (void)import(replaced(sample_text(), "205.209.221.70", "205.209.223.70"), {310}); }),
              "config.xml:30: channel 310 connection 310IA: expected host-ip: each address once, got "
              "\"205.209.223.70\" twice");
    // A group:port two feeds share (310's snapshot A made 310's incremental A).
    EXPECT_EQ(error_of([&] { (void)import(replaced(sample_text(), "<ip>224.0.31.22</ip>", "<ip>224.0.31.1</ip>"), {310}); }),
              "config.xml:64: channel 310 connection 310SA: expected a group:port no other feed imported uses, got "
              "224.0.31.1:14310 (also channel 310 connection 310IA)");
    // More host-ips on one connection than a socket may join.
    const std::uint32_t limit = max_sources_per_line();
    std::string many;
    for (std::uint32_t i = 0; i <= limit; ++i) many += "<host-ip>10.0.0." + std::to_string(i + 1) + "</host-ip>\n";
    const std::string xml = replaced(sample_text(), "<host-ip>205.209.223.70</host-ip>", many);
    const std::string msg = error_of([&] { (void)import(xml, {310}); });
    EXPECT_EQ(msg.rfind("config.xml:25: channel 310 connection 310IA: expected at most " + std::to_string(limit) +
                            " host-ip (the kernel's net.ipv4.igmp_max_msf",
                        0),
              0u)
        << msg;
    EXPECT_NE(msg.find("got " + std::to_string(limit + 2)), std::string::npos) << msg;
    EXPECT_NO_THROW((void)import(xml, {310}, false));
}

TEST(CmeConfigImport, AChannelTheFileLacksIsAnErrorListingThoseItHas) {
    EXPECT_EQ(error_of([] { (void)import(sample_text(), {310, 344}); }),
              "config.xml:6: --channels: expected a channel of the file (310, 311, 312), got 344");
}

TEST(CmeConfigImport, BrokenXmlNamesItsLine) {
    EXPECT_EQ(error_of([] { (void)import("<configuration>\n<channel id=\"1\">\n</configuration>\n", {1}); }),
              "config.xml:3: config.xml: expected well-formed XML, got Start-end tags mismatch");
    EXPECT_EQ(error_of([] { (void)import("<html/>", {1}); }),
              "config.xml:1: config.xml: expected CME's <configuration> root element, got <html>");
}

TEST(CmeConfigImport, AFeedWithOneLineOrABadGroupIsAnError) {
    std::string xml = sample_text();
    // Drop 310's incremental feed B: the channel cannot be arbitrated.
    const auto b = xml.find("<connection id=\"310IB\">");
    xml.erase(b, xml.find("</connection>", b) + 13 - b);
    EXPECT_EQ(error_of([&] { (void)import(xml, {310}); }),
              "config.xml:7: channel 310: expected incremental feeds A and B, got only A");
    std::string unicast = sample_text();
    unicast.replace(unicast.find("224.0.31.22"), 11, "10.0.31.22");
    EXPECT_NE(error_of([&] { (void)import(unicast, {310}); })
                  .find("channel 310 connection 310SA: expected an IPv4 multicast group (224.0.0.0/4), got \"10.0.31.22\""),
              std::string::npos);
}

}  // namespace
}  // namespace tickgate::mdp3
