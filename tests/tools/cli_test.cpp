// The tickgate CLI as a user meets it: bad input gives exit code 2 and one
// clear line on stderr (never a crash, nothing on stdout); help and version
// exit 0; the real exchange captures (none is QFB/1) replay cleanly as
// foreign traffic.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "../support/json.hpp"
#include "tickgate/capture.hpp"

namespace tickgate {
namespace {

namespace fs = std::filesystem;
using test::Json;

// ------------------------------------------------------------------ helpers

class TempDir {
public:
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "tickgate-cli-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] std::string file(std::string_view name) const { return (path_ / name).string(); }
    [[nodiscard]] std::string path() const { return path_.string(); }

private:
    fs::path path_;
};

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, std::string_view text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

struct CliResult {
    int exit;       // exit status, or 128 + signal number
    bool signaled;  // killed by a signal (a crash)
    std::string out;
    std::string err;
};

// Runs `tickgate ARGS` (shell words), stdin from /dev/null, stdout captured,
// stderr to a temp file.
CliResult run_cli(const std::string& args) {
    TempDir tmp;
    const std::string err_path = tmp.file("stderr");
    const std::string cmd = quoted(TICKGATE_BINARY) + " " + args + " </dev/null 2>" + quoted(err_path);
    CliResult r{-1, false, "", ""};
    if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
        std::array<char, 65536> buf;
        for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
        const int status = ::pclose(p);
        r.signaled = WIFSIGNALED(status);
        r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : r.signaled ? 128 + WTERMSIG(status) : -1;
    }
    r.err = read_file(err_path);
    return r;
}

// Exit code 2, nothing on stdout, one line on stderr containing every `names`.
void expect_usage_error(const CliResult& r, std::initializer_list<std::string_view> names) {
    EXPECT_FALSE(r.signaled) << "crashed: exit " << r.exit << ", stderr: " << r.err;
    EXPECT_EQ(r.exit, 2) << "stderr: " << r.err;
    EXPECT_EQ(r.out, "") << "stdout should stay empty";
    ASSERT_FALSE(r.err.empty()) << "no message on stderr";
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_EQ(r.err.rfind("tickgate: ", 0), 0u) << r.err;
    for (const std::string_view name : names)
        EXPECT_NE(r.err.find(name), std::string::npos) << "'" << name << "' not named in: " << r.err;
}

// A small valid QFB/1 capture of `n` records.
void write_capture(const std::string& path, int n, CaptureFormat format = CaptureFormat::kPcapNano) {
    CaptureWriter w(path, format);
    for (int i = 1; i <= n; ++i) {
        const std::int64_t t = 1'700'000'000'000'000'000 + i * 1'000'000;
        PacketBuilder pb(1, 1, static_cast<std::uint64_t>(i), t);
        pb.quote(1, static_cast<std::uint64_t>(i), t, 1000 + i, 5, 1010 + i, 5);
        w.write_udp(t, 0x0A000001, 40000, 0xEF010101, 5001, pb.bytes());
    }
    w.flush();
}

// UDP datagrams of a capture, counted by the reader: all, and with a payload.
std::pair<std::uint64_t, std::uint64_t> count_datagrams(const std::string& path) {
    CaptureReader reader(path);
    FrameCounters frames;
    std::uint64_t all = 0, with_payload = 0;
    while (const auto rec = reader.next()) {
        if (const auto d = extract_udp(reader.link_type(), rec->frame, frames)) {
            ++all;
            with_payload += d->payload.empty() ? 0 : 1;
        }
    }
    return {all, with_payload};
}

// ------------------------------------------------------------------- tests

TEST(Cli, ReplayGarbageFile) {
    TempDir tmp;
    const std::string path = tmp.file("garbage.pcap");
    write_file(path, "this is not a capture, just some text that goes on for a while\n");
    expect_usage_error(run_cli("replay " + quoted(path)), {path});
}

TEST(Cli, ReplayEmptyFile) {
    TempDir tmp;
    const std::string path = tmp.file("empty.pcap");
    write_file(path, "");
    expect_usage_error(run_cli("replay --json " + quoted(path)), {path, "empty"});
}

TEST(Cli, ReplayTruncatedCapture) {
    for (const CaptureFormat format : {CaptureFormat::kPcapNano, CaptureFormat::kPcapMicro, CaptureFormat::kPcapng}) {
        SCOPED_TRACE(static_cast<int>(format));
        TempDir tmp;
        const std::string path = tmp.file("cut.pcap");
        write_capture(path, 4, format);
        const std::uintmax_t size = fs::file_size(path);
        fs::resize_file(path, size - 30);  // mid-way through the last record's QFB/1 payload
        expect_usage_error(run_cli("replay --json " + quoted(path)), {path});
    }
}

TEST(Cli, ReplayDirectory) {
    TempDir tmp;
    expect_usage_error(run_cli("replay " + quoted(tmp.path())), {tmp.path(), "directory"});
}

TEST(Cli, ReplayMissingFile) {
    TempDir tmp;
    const std::string path = tmp.file("no-such.pcap");
    expect_usage_error(run_cli("replay --json " + quoted(path)), {path});
}

TEST(Cli, ReplayBadConfig) {
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 2);
    const std::string config = tmp.file("bad.toml");
    write_file(config, "[gate]\nstale_ms = 250\nfrobnicate = 1\n");
    expect_usage_error(run_cli("replay --json --config " + quoted(config) + " " + quoted(capture)),
                       {config, "frobnicate"});
}

TEST(Cli, ReplayUnknownOption) {
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 2);
    expect_usage_error(run_cli("replay --frobnicate " + quoted(capture)), {"--frobnicate"});
}

TEST(Cli, ReplayMissingArgument) {
    expect_usage_error(run_cli("replay --json"), {"CAPTURE"});
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 2);
    expect_usage_error(run_cli("replay " + quoted(capture) + " --stale-ms"), {"--stale-ms"});
    expect_usage_error(run_cli("replay " + quoted(capture) + " --config"), {"--config"});
}

TEST(Cli, ReplayBadNumber) {
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 2);
    expect_usage_error(run_cli("replay --stale-ms abc " + quoted(capture)), {"--stale-ms", "abc"});
    expect_usage_error(run_cli("replay --source-age-ms -5 " + quoted(capture)), {"--source-age-ms", "-5"});
}

TEST(Cli, ReplayValidCaptureSucceeds) {
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 3);
    const CliResult r = run_cli("replay --json " + quoted(capture));
    ASSERT_EQ(r.exit, 0) << r.err;
    const Json s = Json::parse(r.out);
    EXPECT_EQ(s["packets"].as_int(), 3);
    ASSERT_EQ(s["instruments"].size(), 1u);
    EXPECT_EQ(s["instruments"][0]["last_seq"].as_int(), 3);
}

TEST(Cli, HelpAndVersion) {
    for (const char* args : {"--help", "replay --help", "--version"}) {
        SCOPED_TRACE(args);
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit, 0) << r.err;
        EXPECT_FALSE(r.out.empty());
        EXPECT_EQ(r.err, "");
    }
    EXPECT_NE(run_cli("--help").out.find("replay"), std::string::npos);
    EXPECT_NE(run_cli("replay --help").out.find("--stale-ms"), std::string::npos);
    EXPECT_EQ(run_cli("--version").out.rfind("tickgate ", 0), 0u);
}

// Real venues' captures: foreign traffic to a QFB/1 handler. Every datagram
// is a malformed packet, counted; no instrument; exit 0.
TEST(Cli, RealExchangeCapturesAreForeignTraffic) {
    const std::string dir = TICKGATE_SHARED_DIR "/captures/";
    const char* files[] = {"nasdaq-totalview-itch50-moldudp64-vlan.pcap", "asx-itch-moldudp64-heartbeat.pcap",
                           "cme-mdp3-v9.1-ab-example.pcap", "cme-mdp3-v6.1-ab.pcapng", "deribit-sbe-loopback.pcapng"};
    for (const char* name : files) {
        SCOPED_TRACE(name);
        const std::string path = dir + name;
        ASSERT_TRUE(fs::is_regular_file(path)) << "missing capture " << path;
        const auto [datagrams, with_payload] = count_datagrams(path);
        const CliResult r = run_cli("replay --json " + quoted(path));
        EXPECT_FALSE(r.signaled);
        ASSERT_EQ(r.exit, 0) << r.err;
        const Json s = Json::parse(r.out);
        EXPECT_EQ(s["malformed_packets"].as_uint(), with_payload);
        EXPECT_EQ(s["packets"].as_uint(), datagrams);
        EXPECT_EQ(s["frames"]["udp_datagrams"].as_uint(), datagrams);
        EXPECT_EQ(s["instruments"].size(), 0u);
        EXPECT_EQ(s["unknown_messages"].as_int(), 0);
        EXPECT_EQ(s["stale_session_packets"].as_int(), 0);
        if (std::string_view(name).starts_with("asx")) {
            EXPECT_EQ(with_payload, 1u);
        } else {
            EXPECT_GT(with_payload, 0u);
        }
    }
}

}  // namespace
}  // namespace tickgate
