// `channel[].glimpse` and `[glimpse]` (ITCH50.md "Snapshot recovery"):
// strictly validated, FILE:LINE errors, the password never in the config.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tickgate/feed/config.hpp"
#include "tickgate/feed/itch50/glimpse_client.hpp"

namespace tickgate {
namespace {

const std::string kChannel =
    "[[channel]]\nid = 7\nprotocol = \"itch50\"\n"
    "a = { group = \"239.255.10.1\", port = 31001 }\n"
    "b = { group = \"239.255.10.2\", port = 31002 }\n";
const std::string kSmall = "[itch]\nmax_orders = 4096\nmax_levels = 4096\n";

std::string error(const std::string& text) {
    try {
        (void)parse_config(text, "bad.toml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

TEST(GlimpseConfig, KeysAndDefaults) {
    const Config d = parse_config("", "d.toml");
    EXPECT_EQ(d.glimpse.min_interval_ms, 2'000u);
    EXPECT_EQ(d.glimpse.timeout_ms, 10'000u);
    EXPECT_EQ(d.glimpse.buffer_mb, 64u);
    EXPECT_FALSE(d.any_glimpse());
    const Config c = parse_config(kSmall +
                                      "[glimpse]\nusername = \"tg01\"\npassword_env = \"TG_GLIMPSE_PW\"\n"
                                      "min_interval_ms = 500\ntimeout_ms = 3000\nbuffer_mb = 2\n" +
                                      kChannel + "glimpse = \"127.0.0.1:31400\"\n",
                                  "c.toml");
    ASSERT_TRUE(c.any_glimpse());
    EXPECT_EQ(c.channels[0].glimpse_ip, 0x7F000001u);
    EXPECT_EQ(c.channels[0].glimpse_port, 31400u);
    EXPECT_EQ(c.glimpse.username, "tg01");
    EXPECT_EQ(c.glimpse.password_env, "TG_GLIMPSE_PW");
    EXPECT_EQ(c.glimpse.min_interval_ms, 500u);
    EXPECT_EQ(c.glimpse.timeout_ms, 3000u);
    EXPECT_EQ(c.glimpse.buffer_bytes, 2u << 20);
}

TEST(GlimpseConfig, BadValuesAreOneLineErrorsNamingTheKey) {
    const std::string creds = "[glimpse]\nusername = \"tg01\"\npassword_env = \"PW\"\n";
    EXPECT_EQ(error(creds + kChannel + "glimpse = \"239.1.1.1:31400\"\n"),
              "bad.toml:9: channel[0].glimpse: expected unicast IPv4 HOST:PORT (port 1..65535), got \"239.1.1.1:31400\"");
    EXPECT_NE(error(creds + kChannel + "glimpse = \"localhost:31400\"\n").find("bad.toml:9: channel[0].glimpse: expected"),
              std::string::npos);  // no names: nothing is resolved
    EXPECT_NE(error(creds + kChannel + "glimpse = \"127.0.0.1:0\"\n").find("channel[0].glimpse: expected"), std::string::npos);
    EXPECT_NE(error(creds + "[[channel]]\nid = 7\nprotocol = \"qfb1\"\na = { group = \"239.255.10.1\", port = 31001 }\n"
                            "b = { group = \"239.255.10.2\", port = 31002 }\nglimpse = \"127.0.0.1:31400\"\n")
                  .find("bad.toml:9: channel[0].glimpse: expected no GLIMPSE service on a qfb1 channel (itch50 only)"),
              std::string::npos);
    EXPECT_EQ(error(kChannel + "glimpse = \"127.0.0.1:31400\"\n"),
              "bad.toml:6: channel[0].glimpse: expected a [glimpse] table with username (the SoupBinTCP login), got none");
    EXPECT_EQ(error("[glimpse]\nusername = \"tg01\"\n" + kChannel + "glimpse = \"127.0.0.1:31400\"\n"),
              "bad.toml:8: channel[0].glimpse: expected exactly one of [glimpse] password_file and password_env, got neither");
    EXPECT_NE(error(creds + "password_file = \"" TICKGATE_SOURCE_DIR "/README.md\"\n" + kChannel + "glimpse = \"127.0.0.1:31400\"\n").find("got both"),
              std::string::npos);
    EXPECT_NE(error("[glimpse]\nusername = \"toolong7\"\n").find("bad.toml:2: glimpse.username: expected 1..6"),
              std::string::npos);
    EXPECT_NE(error("[glimpse]\nusername = \"a b\"\n").find("glimpse.username: expected"), std::string::npos);
    EXPECT_NE(error("[glimpse]\npassword_env = \"1PW\"\n").find("bad.toml:2: glimpse.password_env: expected"),
              std::string::npos);
    EXPECT_NE(error("[glimpse]\npassword_file = \"\"\n").find("glimpse.password_file: expected"), std::string::npos);
    EXPECT_NE(error("[glimpse]\nmin_interval_ms = 0\n").find("bad.toml:2: glimpse.min_interval_ms: expected"),
              std::string::npos);
    EXPECT_NE(error("[glimpse]\ntimeout_ms = -1\n").find("glimpse.timeout_ms: expected"), std::string::npos);
    EXPECT_NE(error("[glimpse]\nbuffer_mb = 0\n").find("glimpse.buffer_mb: expected"), std::string::npos);
    EXPECT_NE(error("[glimpse]\npassword = \"x\"\n").find("bad.toml:2: glimpse.password: unknown key"), std::string::npos);
}

// The client reads the password at start-up; a file it could not read is
// found at load instead, as a config error naming the key's line (exit 2).
TEST(GlimpseConfig, MissingOrUnreadablePasswordFileIsAConfigErrorAtLoad) {
    const std::string dir = ::testing::TempDir() + "tickgate_glimpse_pwdir_" + std::to_string(::getpid());
    const std::string missing = dir + "/missing";
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    const std::string empty = dir + "/empty";
    std::fclose(std::fopen(empty.c_str(), "w"));
    const std::string good = dir + "/good";
    FILE* f = std::fopen(good.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("pw\n", f);
    std::fclose(f);
    const auto keys = [&](const std::string& path) {
        return "[glimpse]\nusername = \"tg01\"\npassword_file = \"" + path + "\"\n" + kChannel +
               "glimpse = \"127.0.0.1:31400\"\n";
    };
    const std::string expected = "bad.toml:3: glimpse.password_file: expected a readable file whose first line is the GLIMPSE password, got \"";
    EXPECT_EQ(error(keys(missing)), expected + missing + "\" (No such file or directory)");
    EXPECT_EQ(error(keys(dir)), expected + dir + "\" (not a regular file)");
    EXPECT_EQ(error(keys(empty)), expected + empty + "\" (empty)");
    EXPECT_EQ(error(keys(good)), "no error");
    if (::geteuid() != 0) {  // root reads a file of mode 000
        ASSERT_EQ(::chmod(good.c_str(), 0), 0);
        EXPECT_EQ(error(keys(good)), expected + good + "\" (Permission denied)");
    }
    std::remove(good.c_str());
    std::remove(empty.c_str());
    ::rmdir(dir.c_str());
}

TEST(GlimpseConfig, MemoryEstimateCountsTheBufferAndTheStorage) {
    const Config c = parse_config(kSmall + "[glimpse]\nusername = \"tg01\"\npassword_env = \"PW\"\nbuffer_mb = 3\n" +
                                      kChannel + "glimpse = \"127.0.0.1:31400\"\n",
                                  "c.toml");
    const MemoryEstimate e = estimate_memory(c);
    std::uint64_t buffer = 0, storage = 0;
    for (const MemoryPart& p : e.parts) {
        if (p.what == "snapshot buffer") buffer = p.bytes;
        if (p.what == "snapshot storage") storage = p.bytes;
    }
    EXPECT_EQ(buffer, 3u << 20);
    EXPECT_EQ(storage, itch50::SnapshotStorage::bytes_for(4096));
    const Config none = parse_config(kSmall + kChannel, "n.toml");
    for (const MemoryPart& p : estimate_memory(none).parts) EXPECT_NE(p.what, "snapshot buffer");
}

TEST(GlimpseConfig, PasswordComesFromTheFileOrTheVariableAndErrorsNeverShowIt) {
    GlimpseConfig g;
    g.password_env = "TICKGATE_TEST_GLIMPSE_PW";
    ::setenv("TICKGATE_TEST_GLIMPSE_PW", "s3cret", 1);
    EXPECT_EQ(itch50::read_glimpse_password(g), "s3cret");
    ::unsetenv("TICKGATE_TEST_GLIMPSE_PW");
    try {
        (void)itch50::read_glimpse_password(g);
        FAIL() << "an unset variable is an error";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "[glimpse] password_env: TICKGATE_TEST_GLIMPSE_PW is not set");
    }
    const std::string path = ::testing::TempDir() + "tickgate_glimpse_pw_" + std::to_string(::getpid()) + ".txt";
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("filepw\nignored\n", f);
    std::fclose(f);
    GlimpseConfig h;
    h.password_file = path;
    EXPECT_EQ(itch50::read_glimpse_password(h), "filepw");
    std::remove(path.c_str());
}

}  // namespace
}  // namespace tickgate
