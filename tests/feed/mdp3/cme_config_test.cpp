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
    // The UDP feeds' host-ip, each once, in file order; the TCP replay host
    // (205.209.220.72) and the MBO snapshot hosts (205.209.222.108, ...) are not.
    const auto* sources = c310["sources"].as_array();
    ASSERT_NE(sources, nullptr);
    std::vector<std::string> got;
    for (const auto& s : *sources) got.push_back(s.value_or(std::string{}));
    EXPECT_EQ(got, (std::vector<std::string>{"205.209.223.70", "205.209.221.70", "205.209.212.70", "205.209.211.70",
                                             "205.209.222.87", "205.209.222.77", "205.209.213.52", "205.209.214.52",
                                             "205.209.222.85", "205.209.222.73", "205.209.214.48", "205.209.213.48"}));
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
    EXPECT_EQ(ch.sources.size(), 12u);
}

TEST(CmeConfigImport, AnySourceLeavesSourcesOut) {
    const toml::table doc = toml::parse(import(sample_text(), {310}, false));
    EXPECT_FALSE((*doc["channel"].as_array())[0].as_table()->contains("sources"));
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
