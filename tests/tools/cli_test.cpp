// The tickgate CLI as a user meets it: bad input gives exit code 2 and one
// clear line on stderr (never a crash, nothing on stdout); help and version
// exit 0; the real exchange captures (none is QFB/1) replay cleanly as
// foreign traffic; `run` serves metrics where the config or --metrics says
// (scraped over TCP on 127.0.0.1; its lines join groups no other test uses,
// and nothing is sent to them). `capture`, `send`, and `run --json` fed by
// `sim` run on loopback multicast (interface 127.0.0.1, TTL 0, loop on), on
// groups of their own; `run --json` reports its line, A/B and ring counters.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "../support/http.hpp"
#include "../support/json.hpp"
#include "tickgate/feed/sender.hpp"
#include "tickgate/feed/qfb1/packet_builder.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/config.hpp"
#include "tickgate/feed/protocols.hpp"
#include "tickgate/feed/receiver.hpp"

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

// `tickgate ARGS` left running (stdin /dev/null, stdout and stderr to files
// in `dir`), for commands that run until interrupted. Killed if still alive
// when it goes out of scope.
class BackgroundCli {
public:
    BackgroundCli(std::vector<std::string> args, const TempDir& dir)
        : out_path_(dir.file("background.out")), err_path_(dir.file("background.err")) {
        args.insert(args.begin(), TICKGATE_BINARY);
        std::vector<char*> argv;
        for (std::string& arg : args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t files;
        posix_spawn_file_actions_init(&files);
        posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&files, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&files, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (::posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&files);
    }
    ~BackgroundCli() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    BackgroundCli(const BackgroundCli&) = delete;
    BackgroundCli& operator=(const BackgroundCli&) = delete;

    [[nodiscard]] bool started() const { return pid_ > 0; }
    [[nodiscard]] std::string err() const { return read_file(err_path_); }
    [[nodiscard]] std::string out() const { return read_file(out_path_); }

    // Waits up to `limit` for it to exit by itself: the exit code (128 +
    // signal if killed by one), or -1 if it is still running (then it is
    // killed when the object goes).
    int wait_exit(std::chrono::milliseconds limit) {
        for (auto waited = std::chrono::milliseconds(0); pid_ > 0 && waited < limit; waited += std::chrono::milliseconds(10)) {
            if (::waitpid(pid_, &status_, WNOHANG) == pid_) pid_ = -1;
            else std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (pid_ > 0) return -1;
        return WIFEXITED(status_) ? WEXITSTATUS(status_) : WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : -1;
    }

    // Waits up to 10 s for `text` on stderr; false if it exited or timed out first.
    bool wait_for_stderr(std::string_view text) {
        for (int i = 0; i < 1000; ++i) {
            if (err().find(text) != std::string::npos) return true;
            if (pid_ <= 0 || ::waitpid(pid_, &status_, WNOHANG) == pid_) {
                pid_ = -1;
                return err().find(text) != std::string::npos;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }

    // SIGINT, then the exit code (128 + signal if killed by one; -1 if it
    // does not stop within 10 s).
    int interrupt() {
        if (pid_ > 0) {
            ::kill(pid_, SIGINT);
            for (int i = 0; i < 1000 && pid_ > 0; ++i) {
                if (::waitpid(pid_, &status_, WNOHANG) == pid_) pid_ = -1;
                else std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            if (pid_ > 0) return -1;
        }
        return WIFEXITED(status_) ? WEXITSTATUS(status_) : WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : -1;
    }

private:
    std::string out_path_, err_path_;
    pid_t pid_ = -1;
    int status_ = 0;
};

// A TCP port on 127.0.0.1 held by a listening socket for the object's lifetime.
class HeldPort {
public:
    HeldPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(fd_, 1) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
            throw std::runtime_error("cannot hold a port on 127.0.0.1");
        port_ = ntohs(addr.sin_port);
    }
    ~HeldPort() { ::close(fd_); }
    HeldPort(const HeldPort&) = delete;
    HeldPort& operator=(const HeldPort&) = delete;
    [[nodiscard]] std::uint16_t port() const { return port_; }

private:
    int fd_;
    std::uint16_t port_ = 0;
};

// `dir`/`name`: one channel `id` (with `channel_keys`, TOML lines) on
// groups GROUPS.1 and GROUPS.2, ports `port` and `port` + 1, the state log in
// `dir`, and `tables` appended. Each test's groups and ports are its own.
std::string write_channel_config(const TempDir& dir, const std::string& name, int id, const std::string& groups,
                                 int port, std::string_view channel_keys = "", std::string_view tables = "") {
    const std::string path = dir.file(name);
    write_file(path, "[[channel]]\nid = " + std::to_string(id) + "\n" + std::string(channel_keys) +
                         "a = { group = \"" + groups + ".1\", port = " + std::to_string(port) + " }\n" +
                         "b = { group = \"" + groups + ".2\", port = " + std::to_string(port + 1) + " }\n" +
                         "[logging]\nsink = \"" + dir.file("state.log") + "\"\n" + std::string(tables));
    return path;
}

// A `run` config: one channel on groups of its own (nothing is sent to them),
// the state log in `dir`, and `metrics_table` appended.
std::string write_run_config(const TempDir& dir, std::string_view metrics_table) {
    return write_channel_config(dir, "run.toml", 9, "239.255.91", 39511, "", metrics_table);
}

// The port in run's "metrics: http://127.0.0.1:PORT/metrics" line, or 0.
std::uint16_t announced_metrics_port(const std::string& err) {
    const std::string_view prefix = "metrics: http://127.0.0.1:";
    const auto at = err.find(prefix);
    return at == std::string::npos ? 0 : static_cast<std::uint16_t>(std::atoi(err.c_str() + at + prefix.size()));
}

// Scrapes /metrics until channel 9's line A appears (the first publish), up to 5 s.
test::HttpResponse scrape_published(std::uint16_t port) {
    test::HttpResponse r;
    for (int i = 0; i < 50; ++i) {
        r = test::http_get(port, "/metrics");
        if (test::has_line(r.body, R"(tickgate_line_packets_total{channel="9",line="A"} 0)")) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r;
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

// A capture cut short mid-record (killed writer, full disk, file still being
// written) replays its intact records: the summary on stdout says
// "capture_truncated" and where, one warning line on stderr, exit code 3.
TEST(Cli, ReplayCutCaptureGivesTheSummaryOfItsIntactRecords) {
    for (const CaptureFormat format : {CaptureFormat::kPcapNano, CaptureFormat::kPcapMicro, CaptureFormat::kPcapng}) {
        TempDir tmp;
        const std::string intact = tmp.file("intact.pcap");
        write_capture(intact, 3, format);
        const std::string path = tmp.file("cut.pcap");
        write_capture(path, 4, format);
        const std::uintmax_t whole = fs::file_size(path);
        const std::uintmax_t record = whole - fs::file_size(intact);
        for (const std::uintmax_t missing : {record - 3, record / 2, std::uintmax_t{30}, std::uintmax_t{1}}) {
            SCOPED_TRACE(std::to_string(static_cast<int>(format)) + ": " + std::to_string(missing) + " bytes missing");
            write_capture(path, 4, format);
            fs::resize_file(path, whole - missing);
            const CliResult r = run_cli("replay --protocol qfb1 --json " + quoted(path));
            EXPECT_FALSE(r.signaled);
            EXPECT_EQ(r.exit, 3) << r.err;
            const Json s = Json::parse(r.out);
            EXPECT_EQ(s["packets"].as_int(), 3);
            EXPECT_EQ(s["frames"]["records"].as_int(), 3);
            EXPECT_TRUE(s["capture_truncated"].as_bool());
            EXPECT_EQ(s["capture_intact_bytes"].as_int(), static_cast<std::int64_t>(fs::file_size(intact)));
            EXPECT_EQ(s["capture_file_bytes"].as_int(), static_cast<std::int64_t>(whole - missing));
            ASSERT_EQ(s["instruments"].size(), 1u);
            EXPECT_EQ(s["instruments"][0]["last_seq"].as_int(), 3);
            EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
            EXPECT_EQ(r.err.rfind("tickgate: warning: " + path + ": cut short at byte ", 0), 0u) << r.err;
            EXPECT_NE(r.err.find("the 3 intact records were replayed"), std::string::npos) << r.err;

            const CliResult table = run_cli("replay " + quoted(path));
            EXPECT_EQ(table.exit, 3) << table.err;
            EXPECT_NE(table.out.find("capture cut short: 3 intact records replayed"), std::string::npos) << table.out;
        }
        write_capture(path, 4, format);
        const CliResult r = run_cli("replay --protocol qfb1 --json " + quoted(path));
        EXPECT_EQ(r.exit, 0) << r.err;
        EXPECT_FALSE(Json::parse(r.out)["capture_truncated"].as_bool());
        EXPECT_EQ(r.err, "");
    }
}

// A record claiming more than any capture allows is corruption, not a cut:
// exit 2 and nothing on stdout, as for any unreadable capture.
TEST(Cli, ReplayLyingRecordIsAnError) {
    TempDir tmp;
    const std::string path = tmp.file("lying.pcap");
    write_capture(path, 3);
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        const std::uint32_t huge = 300000;
        f.seekp(24 + 8);  // the first record's caplen
        f.write(reinterpret_cast<const char*>(&huge), 4);
    }
    expect_usage_error(run_cli("replay --json " + quoted(path)), {path, "record 1", "invalid packet capture length"});
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

// --protocol names the protocol of replay, run, capture, send and sim; a
// name no protocol has is a usage error naming the known ones.
TEST(Cli, ProtocolOptionChoosesAKnownProtocolOrIsAUsageError) {
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 3);
    const CliResult plain = run_cli("replay --json " + quoted(capture));
    const CliResult named = run_cli("replay --protocol qfb1 --json " + quoted(capture));
    ASSERT_EQ(named.exit, 0) << named.err;
    EXPECT_EQ(named.out, plain.out);
    expect_usage_error(run_cli("replay --protocol fix44 " + quoted(capture)), {"--protocol", "qfb1", "itch50", "fix44"});
}

// sim picks the ITCH simulator by --protocol itch50, or by a --config whose channels speak itch50.
TEST(Cli, SimOfAnItchConfigIsTheItchSimulator) {
    TempDir tmp;
    const std::string config = write_channel_config(tmp, "itch.toml", 4, "239.255.95", 39551, "protocol = \"itch50\"\n");
    const CliResult r = run_cli("sim --config " + quoted(config) + " --messages 50 --pcap " + quoted(tmp.file("s.pcap")));
    ASSERT_EQ(r.exit, 0) << r.err;
    EXPECT_EQ(Json::parse(r.out)["protocol"].as_string(), "itch50");
    const CliResult qfb = run_cli("sim --protocol qfb1 --config " + quoted(config) + " --messages 50");
    EXPECT_EQ(qfb.exit, 2) << qfb.err;  // the config's channel speaks itch50
}

// send --protocol itch50 re-publishes an ITCH capture and counts, against
// MoldUDP64's header, what it could not read: none of the simulator's
// packets (read as QFB/1, every one would be unreadable).
TEST(Cli, SendReadsAnItchCaptureAsMoldUdp64) {
    TempDir tmp;
    const std::string capture = tmp.file("itch.pcap");
    const CliResult sim = run_cli("sim --protocol itch50 --stocks 5 --messages 200 --pcap " + quoted(capture));
    ASSERT_EQ(sim.exit, 0) << sim.err;
    const CliResult sent = run_cli("send --protocol itch50 --max-speed " + quoted(capture));
    ASSERT_EQ(sent.exit, 0) << sent.err;
    EXPECT_NE(sent.err.find("(0 without a readable itch50 header)"), std::string::npos) << sent.err;
    const CliResult as_qfb = run_cli("send --max-speed " + quoted(capture));
    EXPECT_EQ(as_qfb.err.find("(0 without a readable"), std::string::npos) << as_qfb.err;
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

// Every help text that speaks of protocols names each one the code knows
// (kProtocolNames): a protocol added to the list and not to the help, or a
// help that still describes a one-protocol handler, fails here.
TEST(Cli, HelpNamesEveryKnownProtocol) {
    for (const char* args : {"--help", "replay --help", "run --help", "capture --help", "send --help", "sim --help"}) {
        SCOPED_TRACE(args);
        const CliResult r = run_cli(args);
        ASSERT_EQ(r.exit, 0) << r.err;
        for (const std::string_view name : kProtocolNames)
            EXPECT_NE(r.out.find(name), std::string::npos) << "no mention of " << name << " in:\n" << r.out;
    }
}

// The commands that take --protocol list the known protocols in their help
// from the protocol list, never by hand: a protocol added to the list shows
// in every one, and no placeholder is left in the text.
TEST(Cli, HelpTextsListTheKnownProtocols) {
    for (const std::string command : {"run", "capture", "replay", "send"}) {
        SCOPED_TRACE(command);
        const CliResult r = run_cli(command + " --help");
        ASSERT_EQ(r.exit, 0) << r.err;
        EXPECT_NE(r.out.find(protocol_list()), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find('%'), std::string::npos) << r.out;
    }
}

// Issue 22 item 5: `sim` and `config` take each protocol's additions from a
// registry (tools/command.hpp) that the protocol's file of tools/ fills, so
// the shared commands name none. Every protocol the code knows has its own
// simulator there (the reference protocol's is the default), a name none
// registered is a usage error naming those that are, and `config --help`
// carries each registered subcommand. A registration lost (a file dropped
// from the executable, an entry removed) fails here.
TEST(Cli, EveryKnownProtocolHasARegisteredSimulator) {
    std::set<std::string> helps;
    for (const std::string_view name : kProtocolNames) {
        SCOPED_TRACE(name);
        const CliResult r = run_cli("sim --protocol " + std::string(name) + " --help");
        ASSERT_EQ(r.exit, 0) << r.err;
        EXPECT_EQ(r.err, "");
        EXPECT_EQ(r.out.rfind("usage: tickgate sim", 0), 0u) << r.out;
        helps.insert(r.out);
    }
    EXPECT_EQ(helps.size(), kProtocolNames.size()) << "two protocols answered with the same simulator";
    EXPECT_EQ(run_cli("sim --help").out, run_cli("sim --protocol " + std::string(ReferenceProtocol::kName) + " --help").out);

    const CliResult unknown = run_cli("sim --protocol nope --messages 5");
    expect_usage_error(unknown, {"--protocol: expected", "(the protocols simulated), got 'nope'"});
    for (const std::string_view name : kProtocolNames)
        EXPECT_NE(unknown.err.find(name), std::string::npos) << "no mention of " << name << " in: " << unknown.err;

    // MDP3's `config import-cme`, registered from tools/cmd_sim_mdp3.cpp.
    const CliResult config_help = run_cli("config --help");
    ASSERT_EQ(config_help.exit, 0) << config_help.err;
    for (const std::string_view text : {"tickgate config import-cme CONFIG.XML --channels", "\nimport-cme:\n",
                                        "\nimport-cme options:\n  --channels ID[,ID...]", "--protocol NAME"})
        EXPECT_NE(config_help.out.find(text), std::string::npos) << text << " not in:\n" << config_help.out;
    expect_usage_error(run_cli("config import-cme"), {"`config import-cme CONFIG.XML --channels ...`"});
}

TEST(Cli, RunServesMetricsWhenTheConfigEnablesThem) {
    TempDir tmp;
    const std::string config = write_run_config(tmp, "[metrics]\nenabled = true\nlisten = \"127.0.0.1:0\"\n");
    BackgroundCli run({"run", "--config", config, "--quiet"}, tmp);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.wait_for_stderr("/metrics\n")) << run.err();
    const std::uint16_t port = announced_metrics_port(run.err());
    ASSERT_NE(port, 0) << run.err();
    const test::HttpResponse r = scrape_published(port);
    EXPECT_EQ(r.status, 200) << r.headers;
    EXPECT_TRUE(test::has_line(r.body, R"(tickgate_line_packets_total{channel="9",line="B"} 0)")) << r.body;
    EXPECT_EQ(run.interrupt(), 0) << run.err();
}

TEST(Cli, RunMetricsOptionTakesPrecedenceOverTheConfig) {
    TempDir tmp;
    // The config's address is taken, so serving there would fail the run.
    const HeldPort taken;
    const std::string config = write_run_config(
        tmp, "[metrics]\nenabled = true\nlisten = \"127.0.0.1:" + std::to_string(taken.port()) + "\"\n");
    const CliResult at_config = run_cli("run --quiet --duration 0.2 --config " + quoted(config));
    EXPECT_EQ(at_config.exit, 1) << at_config.err;
    EXPECT_NE(at_config.err.find("metrics: cannot bind 127.0.0.1:" + std::to_string(taken.port())), std::string::npos)
        << at_config.err;

    BackgroundCli run({"run", "--config", config, "--quiet", "--metrics", "127.0.0.1:0"}, tmp);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.wait_for_stderr("/metrics\n")) << run.err();
    const std::uint16_t port = announced_metrics_port(run.err());
    ASSERT_NE(port, 0) << run.err();
    EXPECT_NE(port, taken.port());
    EXPECT_EQ(scrape_published(port).status, 200);
    EXPECT_EQ(run.interrupt(), 0) << run.err();
}

TEST(Cli, RunMetricsAreOffByDefault) {
    TempDir tmp;
    for (const char* metrics_table : {"", "[metrics]\nenabled = false\nlisten = \"127.0.0.1:0\"\n"}) {
        SCOPED_TRACE(metrics_table);
        const std::string config = write_run_config(tmp, metrics_table);
        const CliResult r = run_cli("run --quiet --duration 0.2 --config " + quoted(config));
        EXPECT_EQ(r.exit, 0) << r.err;
        EXPECT_EQ(r.err.find("metrics:"), std::string::npos) << r.err;
    }
}

// The line table `run` prints at exit (and in its live view) has a column
// per line counter, the rule-7 and oversized drops included.
TEST(Cli, RunLineTableShowsEveryLineCounter) {
    TempDir tmp;
    const CliResult r = run_cli("run --quiet --duration 0.2 --config " + quoted(write_run_config(tmp, "")));
    ASSERT_EQ(r.exit, 0) << r.err;
    for (const char* column : {"packets", "gaps", "k-drops", "rejected", "foreign", "oversized", "rcv-errors"})
        EXPECT_NE(r.out.find(column), std::string::npos) << column << " not in:\n" << r.out;
}

// A CPU the config names but the machine does not have is a failed start
// (exit 1, the key and the CPU named), never a silently unpinned thread.
TEST(Cli, RunRefusesACpuItCannotPinTo) {
    TempDir tmp;
    for (const char* key : {"receiver_cpu", "engine_cpu"}) {
        SCOPED_TRACE(key);
        const std::string config = write_run_config(tmp, std::string("[threading]\n") + key + " = 1023\n");
        const CliResult r = run_cli("run --quiet --duration 0.2 --config " + quoted(config));
        EXPECT_EQ(r.exit, 1) << r.err;
        EXPECT_NE(r.err.find(std::string("tickgate: threading.") + key + " = 1023: cannot pin the thread to CPU 1023"),
                  std::string::npos)
            << r.err;
    }
}

TEST(Cli, RunBadMetricsOptionIsAUsageError) {
    TempDir tmp;
    const std::string config = write_run_config(tmp, "");
    for (const char* listen : {"127.0.0.1:", "127.0.0.1:70000", "10.0.0.1:9108", "0.0.0.0:9108", "localhost:9108"}) {
        SCOPED_TRACE(listen);
        expect_usage_error(run_cli("run --quiet --duration 0.2 --config " + quoted(config) + " --metrics " + listen),
                           {listen});
    }
    const std::string bad_config = write_run_config(tmp, "[metrics]\nlisten = \"0.0.0.0:9108\"\n");
    expect_usage_error(run_cli("run --quiet --config " + quoted(bad_config)), {bad_config, "metrics.listen"});
}

// `replay --arbitrate` merges lines A/B by packet; a protocol whose stream
// merges them by position (ITCH over MoldUDP64) has no packet arbitration:
// asked for it, a usage error naming the protocol, not a silent no-op. The
// same capture replays without it through the shared replay.
TEST(Cli, ReplayArbitrateIsRefusedWhereLinesMergeByStreamPosition) {
    const std::string path = TICKGATE_TEST_DATA_DIR "/captures/nasdaq-totalview-itch50-moldudp64-vlan.pcap";
    expect_usage_error(run_cli("replay --protocol itch50 --arbitrate " + quoted(path)),
                       {"--arbitrate", "ITCH 5.0", "stream position"});
    const CliResult r = run_cli("replay --protocol itch50 --json " + quoted(path));
    ASSERT_EQ(r.exit, 0) << r.err;
    EXPECT_GT(Json::parse(r.out)["messages"].as_uint(), 0u);
    EXPECT_EQ(run_cli("replay --protocol qfb1 --arbitrate --json " + quoted(path)).exit, 0);
}

// Real venues' captures: foreign traffic to a QFB/1 handler (--protocol
// qfb1). Every datagram is a malformed packet, counted; no instrument; exit 0.
TEST(Cli, RealExchangeCapturesAreForeignTraffic) {
    const std::string dir = TICKGATE_TEST_DATA_DIR "/captures/";
    const char* files[] = {"nasdaq-totalview-itch50-moldudp64-vlan.pcap", "asx-itch-moldudp64-heartbeat.pcap",
                           "cme-mdp3-v9.1-ab-example.pcap", "cme-mdp3-v6.1-ab.pcapng", "deribit-sbe-loopback.pcapng"};
    for (const char* name : files) {
        SCOPED_TRACE(name);
        const std::string path = dir + name;
        ASSERT_TRUE(fs::is_regular_file(path)) << "missing capture " << path;
        const auto [datagrams, with_payload] = count_datagrams(path);
        const CliResult r = run_cli("replay --protocol qfb1 --json " + quoted(path));
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

// Issue 26 item 5: `replay` of a CME capture without --protocol printed
// "messages 0 malformed 99" and exited 0. Without --protocol and a config
// (or with --protocol auto) the protocol is the one that reads the first
// datagrams cleanly, said on stderr; a capture none reads stays QFB/1.
TEST(Cli, ReplayRule5AutoPicksTheProtocolThatReadsTheCapture) {
    const std::string dir = TICKGATE_TEST_DATA_DIR "/captures/";
    const std::pair<const char*, const char*> cases[] = {
        {"nasdaq-totalview-itch50-moldudp64-vlan.pcap", "protocol: itch50 (auto: 100 of 100 datagrams read as ITCH 5.0)"},
        {"asx-itch-moldudp64-heartbeat.pcap", "protocol: itch50 (auto: 1 of 1 datagrams read as ITCH 5.0)"},
        {"cme-mdp3-v9.1-ab-example.pcap", "protocol: mdp3 (auto: 99 of 99 datagrams read as MDP3)"},
        {"cme-mdp3-v6.1-ab.pcapng", "protocol: mdp3 (auto: 1000 of 1000 datagrams read as MDP3)"},
        {"deribit-sbe-loopback.pcapng", "protocol: qfb1 (auto: none of 45 datagrams read as QFB/1, MDP3, ITCH 5.0)"},
    };
    for (const auto& [name, said] : cases) {
        SCOPED_TRACE(name);
        const CliResult r = run_cli("replay --json " + quoted(dir + name));
        ASSERT_EQ(r.exit, 0) << r.err;
        EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("use --protocol"), std::string::npos) << r.err;
        const Json s = Json::parse(r.out);
        if (std::string_view(name).starts_with("deribit")) continue;
        EXPECT_EQ(s["malformed_packets"].as_int(), 0) << r.out;
        EXPECT_EQ(run_cli("replay --protocol auto --json " + quoted(dir + name)).out, r.out);
    }
    TempDir tmp;
    const std::string qfb = tmp.file("qfb.pcap");
    write_capture(qfb, 5);
    const CliResult q = run_cli("replay " + quoted(qfb));
    ASSERT_EQ(q.exit, 0) << q.err;
    EXPECT_NE(q.err.find("protocol: qfb1 (auto: 5 of 5 datagrams read as QFB/1)"), std::string::npos) << q.err;
    // A config's channels name the protocol: nothing is detected.
    const std::string config = write_channel_config(tmp, "c.toml", 1, "239.1.1", 5001);
    EXPECT_EQ(run_cli("replay --config " + quoted(config) + " " + quoted(qfb)).err.find("auto"), std::string::npos);
}

// Issue 26 item 5: a protocol chosen by name that reads most of the first
// datagrams as foreign, while another reads them cleanly, says which
// (whatever its own counters show: MDP3 takes an ITCH datagram's header for
// a duplicate, not a malformed packet). The right choice says nothing.
TEST(Cli, ReplayRule5AWrongProtocolSaysWhichOneReadsTheCapture) {
    const std::string dir = TICKGATE_TEST_DATA_DIR "/captures/";
    const CliResult qfb = run_cli("replay --protocol qfb1 " + quoted(dir + "cme-mdp3-v9.1-ab-example.pcap"));
    ASSERT_EQ(qfb.exit, 0) << qfb.err;
    EXPECT_NE(qfb.err.find("99 of 99 datagrams are not QFB/1; they read as MDP3: use --protocol mdp3"),
              std::string::npos)
        << qfb.err;
    const CliResult mdp3 = run_cli("replay --protocol mdp3 " + quoted(dir + "nasdaq-totalview-itch50-moldudp64-vlan.pcap"));
    ASSERT_EQ(mdp3.exit, 0) << mdp3.err;
    EXPECT_NE(mdp3.err.find("100 of 100 datagrams are not MDP3; they read as ITCH 5.0: use --protocol itch50"),
              std::string::npos)
        << mdp3.err;
    const CliResult itch = run_cli("replay --protocol itch50 " + quoted(dir + "cme-mdp3-v6.1-ab.pcapng"));
    EXPECT_NE(itch.err.find("are not ITCH 5.0; they read as MDP3: use --protocol mdp3"), std::string::npos) << itch.err;
    const CliResult right = run_cli("replay --protocol mdp3 " + quoted(dir + "cme-mdp3-v9.1-ab-example.pcap"));
    EXPECT_EQ(right.err.find("use --protocol"), std::string::npos) << right.err;
}

// Issue 26 item 6: MDP3 without a config replays lines A and B as two
// channels, each reporting lost_packets the other line carried. Destinations
// with byte-identical packets get a hint naming them and how to pair them.
TEST(Cli, ReplayRule6IdenticalLinesWithoutAConfigGetAPairingHint) {
    const std::string dir = TICKGATE_TEST_DATA_DIR "/captures/";
    const CliResult r = run_cli("replay " + quoted(dir + "cme-mdp3-v6.1-ab.pcapng"));
    ASSERT_EQ(r.exit, 0) << r.err;
    EXPECT_NE(r.err.find("hint: 224.0.31.64:14340 and 224.0.32.64:15340 carry identical packets"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("config import-cme"), std::string::npos) << r.err;
    // ITCH's lines of the Nasdaq capture: one destination, nothing to pair.
    EXPECT_EQ(run_cli("replay " + quoted(dir + "nasdaq-totalview-itch50-moldudp64-vlan.pcap")).err.find("identical"),
              std::string::npos);
}

// Issue 26 item 6: the Nasdaq capture starts mid-session without a Stock
// Directory, so every row was a bare locate and SUSPECT without a reason.
// Add Order's stock names the locate; the reason is the late join.
TEST(Cli, ReplayRule6ItchAddsNameTheirStockAndRowsSayWhySuspect) {
    const std::string dir = TICKGATE_TEST_DATA_DIR "/captures/";
    const CliResult r = run_cli("replay " + quoted(dir + "nasdaq-totalview-itch50-moldudp64-vlan.pcap"));
    ASSERT_EQ(r.exit, 0) << r.err;
    EXPECT_NE(r.out.find("\nAAPL         32 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("SUSPECT  late_join"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('?'), std::string::npos) << r.out;
}

// Issue 26 item 7: `replay --book SYMBOL [--depth N]` prints one
// instrument's book instead of the table; a symbol no instrument shows
// is an error (exit 1) naming it; --depth without --book and --book with
// --json are usage errors.
TEST(Cli, ReplayRule7BookPrintsOneInstrumentsBook) {
    const std::string capture = TICKGATE_TEST_DATA_DIR "/captures/nasdaq-totalview-itch50-moldudp64-vlan.pcap";
    const CliResult r = run_cli("replay --book AAPL --depth 3 " + quoted(capture));
    ASSERT_EQ(r.exit, 0) << r.err;
    EXPECT_EQ(r.out.rfind("AAPL (id 32): SUSPECT late_join", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("bid_qty"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("172.6300"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("symbol "), std::string::npos) << "the book, not the table: " << r.out;
    const CliResult none = run_cli("replay --book ZZZZ " + quoted(capture));
    EXPECT_EQ(none.exit, 1) << none.err;
    EXPECT_NE(none.err.find("--book ZZZZ: no instrument"), std::string::npos) << none.err;
    expect_usage_error(run_cli("replay --depth 3 " + quoted(capture)), {"--depth"});
    expect_usage_error(run_cli("replay --json --book AAPL " + quoted(capture)), {"--book"});
    expect_usage_error(run_cli("replay --book AAPL --depth 0 " + quoted(capture)), {"--depth"});
}

// Issue 26 item 9: ITCH's `--stats` had no rate; every protocol prints the
// same line (with M messages/s) on request, and no progress line when
// stderr is not a terminal.
TEST(Cli, ReplayRule9StatsHaveTheRateForEveryProtocolAndNoProgressWhenPiped) {
    const std::string dir = TICKGATE_TEST_DATA_DIR "/captures/";
    for (const char* name : {"nasdaq-totalview-itch50-moldudp64-vlan.pcap", "cme-mdp3-v9.1-ab-example.pcap"}) {
        SCOPED_TRACE(name);
        const CliResult r = run_cli("replay --stats --json " + quoted(dir + name));
        ASSERT_EQ(r.exit, 0) << r.err;
        EXPECT_NE(r.err.find(" M messages/s\n"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
    }
}

// Issue 26 item 7: run --symbols takes symbols separated by commas; an
// empty or over-long one is a usage error before anything is joined.
TEST(Cli, RunRule7SymbolsOptionTakesOnlySymbols) {
    TempDir tmp;
    const std::string config = write_run_config(tmp, "");
    expect_usage_error(run_cli("run --quiet --duration 0.1 --symbols A,,B --config " + quoted(config)), {"--symbols"});
    expect_usage_error(run_cli("run --quiet --duration 0.1 --symbols ABCDEFGHIJKLMNOPQ --config " + quoted(config)),
                       {"--symbols"});
}

// `tickgate capture` flushes its file at least once a second: datagrams that
// arrived are in it, whole and readable, within about a second, while the
// capture still runs (before, they sat in stdio's buffer until exit).
TEST(Cli, CaptureIsReadableWhileItRuns) {
    TempDir tmp;
    const std::string config = tmp.file("capture.toml");
    write_file(config, "[[channel]]\nid = 7\n"
                       "a = { group = \"239.255.92.1\", port = 39521 }\n"
                       "b = { group = \"239.255.92.2\", port = 39522 }\n");
    const std::string out = tmp.file("live.pcap");
    BackgroundCli capture({"capture", "--config", config, "--out", out}, tmp);
    ASSERT_TRUE(capture.started());
    // The output file is created right after the lines are joined.
    for (int i = 0; i < 1000 && !fs::exists(out); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(out)) << capture.err();

    MulticastSender sender("127.0.0.1");
    for (std::uint64_t i = 1; i <= 5; ++i) {
        PacketBuilder pb(7, 1, i, 0);
        pb.quote(1, i, 0, 100, 1, 101, 1);
        ASSERT_TRUE(sender.send(*parse_ipv4("239.255.92.1"), 39521, pb.bytes()));
    }
    const auto sent = std::chrono::steady_clock::now();
    std::uint64_t in_file = 0;
    while (in_file < 5 && std::chrono::steady_clock::now() - sent < std::chrono::milliseconds(2500)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        try {
            in_file = count_datagrams(out).second;
        } catch (const CaptureError&) {
            // not even the file header flushed yet
        }
    }
    EXPECT_EQ(in_file, 5u) << "the running capture's file does not hold what arrived 2.5 s ago";
    EXPECT_EQ(capture.interrupt(), 0) << capture.err();
    EXPECT_EQ(count_datagrams(out).second, 5u);
}

// `send` stops at once on SIGINT even while it waits for a record 300 s
// after the first: exit 0 within 2 s of the signal (before, it slept the
// whole gap through).
TEST(Cli, SendStopsPromptlyOnSigintDuringALongWait) {
    TempDir tmp;
    const LineConfig line_a{"239.255.92.3", 39523, "127.0.0.1"};
    const LineConfig line_b{"239.255.92.4", 39524, "127.0.0.1"};
    const std::string capture = tmp.file("gap.pcap");
    {
        CaptureWriter w(capture);
        const std::int64_t t0 = 1'700'000'000'000'000'000;
        for (std::uint64_t i = 1; i <= 2; ++i) {
            const std::int64_t t = t0 + static_cast<std::int64_t>(i - 1) * 300'000'000'000;  // 300 s apart
            PacketBuilder pb(8, 1, i, t);
            pb.quote(1, i, t, 100, 1, 101, 1);
            w.write_udp(t, 0x7F000001, 40000, *parse_ipv4(line_a.group), line_a.port, pb.bytes());
        }
    }
    Config cfg;
    ChannelConfig ch;
    ch.id = 8;
    ch.a = line_a;
    ch.b = line_b;
    cfg.channels.push_back(ch);
    Receiver rx(cfg);

    BackgroundCli send({"send", capture}, tmp);
    ASSERT_TRUE(send.started());
    int received = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (received == 0 && std::chrono::steady_clock::now() < give_up)
        received = rx.poll_once(50'000'000, [](const RawDatagram&) {});
    ASSERT_EQ(received, 1) << "the first record never arrived: " << send.err();

    const auto signalled = std::chrono::steady_clock::now();
    EXPECT_EQ(send.interrupt(), 0) << send.err();
    EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(2))
        << "send ignored SIGINT while waiting for the next record";
    EXPECT_NE(send.err().find("send: 1 datagrams sent"), std::string::npos) << send.err();
}

// --------------------------------------------- config size and memory

TEST(Cli, ConfigCheckPrintsTheMemoryAConfigNeeds) {
    const CliResult ok = run_cli("config check " + quoted(TICKGATE_SOURCE_DIR "/configs/demo.toml"));
    EXPECT_EQ(ok.exit, 0) << ok.err;
    EXPECT_EQ(ok.err, "");
    for (const char* part : {"books", "recovery pool", "event ring", "per-instrument state", "receiver and arbiter"})
        EXPECT_NE(ok.out.find(part), std::string::npos) << part << " not in:\n" << ok.out;
    EXPECT_NE(ok.out.find("MiB reserved (every table full), "), std::string::npos) << ok.out;
    EXPECT_NE(ok.out.find("MiB resident at start-up; limit "), std::string::npos) << ok.out;
    EXPECT_NE(ok.out.find("MiB on the reserved figure (capacity.max_memory_mb"), std::string::npos) << ok.out;

    TempDir tmp;
    const std::string big = tmp.file("big.toml");
    write_file(big, "[capacity]\nmax_instruments = 16777216\nbook_depth = 1024\n");
    const auto start = std::chrono::steady_clock::now();
    const CliResult refused = run_cli("config check " + quoted(big));
    expect_usage_error(refused, {big + ":2: capacity.max_instruments: expected a config needing at most",
                                           "(capacity.max_memory_mb), got an estimated"});
    // run refuses it the same way, before allocating anything.
    expect_usage_error(run_cli("run --quiet --duration 1 --config " + quoted(big)), {big + ":2:", "max_memory_mb"});
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

    expect_usage_error(run_cli("config verify " + quoted(big)), {"config check FILE"});
}

// Item 9: the estimate checked is that of the protocol that will run. A
// channel-less config with a huge ITCH order store passed `config check` on
// the QFB/1 estimate, then `replay --protocol itch50` ended in
// std::bad_alloc (or reached 3 GB for 10^8 orders). Now: refused with what,
// the figure and the limit (exit 2) by config check and by replay; a QFB/1
// replay of it, which allocates no order store, still runs.
TEST(Cli, MemoryRuleEveryProtocolsEstimateIsCheckedBeforeAllocating) {
    TempDir tmp;
    const std::string big = tmp.file("orders.toml");
    write_file(big, "[capacity]\nmax_memory_mb = 2048\n[itch]\nmax_orders = 1000000000\n");
    const std::string limit = big + ":4: itch.max_orders: expected a config needing at most 2048 MiB "
                                    "(capacity.max_memory_mb), got an estimated ";
    expect_usage_error(run_cli("config check " + quoted(big)), {limit, "reserved as itch50", "order books"});
    expect_usage_error(run_cli("config check --protocol itch50 " + quoted(big)), {limit});
    const std::string capture = TICKGATE_SOURCE_DIR "/tests/data/captures/nasdaq-totalview-itch50-moldudp64-vlan.pcap";
    const CliResult itch = run_cli("replay --protocol itch50 --config " + quoted(big) + " " + quoted(capture));
    expect_usage_error(itch, {limit});
    EXPECT_EQ(itch.err.find("bad_alloc"), std::string::npos) << itch.err;
    const CliResult qfb = run_cli("config check --protocol qfb1 " + quoted(big));
    EXPECT_EQ(qfb.exit, 0) << qfb.err;
    EXPECT_NE(qfb.out.find("protocol qfb1 (--protocol)"), std::string::npos) << qfb.out;
    EXPECT_EQ(qfb.out.find("protocol itch50"), std::string::npos) << qfb.out;

    // Without --protocol every protocol is shown, each with both figures;
    // ITCH's order store is reserved, not resident.
    const std::string fine = tmp.file("fine.toml");
    write_file(fine, "[itch]\nmax_orders = 100000000\n");
    const CliResult all = run_cli("config check " + quoted(fine));
    ASSERT_EQ(all.exit, 0) << all.err;
    for (const char* p : {"protocol qfb1", "protocol mdp3", "protocol itch50"})
        EXPECT_NE(all.out.find(p), std::string::npos) << p << " not in:\n" << all.out;
    const auto at = all.out.find("  order books ");
    ASSERT_NE(at, std::string::npos) << all.out;
    unsigned reserved = 0, resident = 0;
    ASSERT_EQ(std::sscanf(all.out.c_str() + at, "  order books %u %u", &reserved, &resident), 2) << all.out;
    EXPECT_GT(reserved, 2800u);
    EXPECT_LT(resident, 16u);
}

// Item 11: `config import-cme` writes only what loads and runs. It wrote
// configs config check refused (--channels 310,310, --interface
// 255.255.255.255) and one config check took but run refused (all 12 of a
// channel's host-ips on every line, past the kernel's per-socket source
// filters). Now: refused with exit 2 (FILE:LINE for what the XML says),
// and what it writes passes config check with each line's own senders.
TEST(Cli, ImportRuleImportCmeWritesOnlyWhatConfigCheckAccepts) {
    const std::string xml = TICKGATE_SOURCE_DIR "/tests/feed/mdp3/cme_config_sample.xml";
    expect_usage_error(run_cli("config import-cme " + quoted(xml) + " --channels 310,310"),
                       {xml + ":6: --channels: expected each channel once, got 310 twice"});
    for (const char* bad : {"255.255.255.255", "240.0.0.1", "239.1.1.1"})
        expect_usage_error(run_cli("config import-cme " + quoted(xml) + " --channels 310 --interface " + bad),
                           {"--interface: expected an IPv4 unicast address (below 224.0.0.0), got '", bad});
    TempDir tmp;
    const std::string out = tmp.file("cme.toml");
    const CliResult imported = run_cli("config import-cme " + quoted(xml) + " --channels 310,311 --output " + quoted(out));
    ASSERT_EQ(imported.exit, 0) << imported.err;
    const CliResult check = run_cli("config check " + quoted(out));
    EXPECT_EQ(check.exit, 0) << check.err;
    const std::string toml = read_file(out);
    EXPECT_NE(toml.find("a = { group = \"224.0.31.1\", port = 14310, interface = \"127.0.0.1\", sources = "
                        "[\"205.209.223.70\", \"205.209.221.70\"] }"),
              std::string::npos)
        << toml;
}

// --config takes a regular file of at most 1 MiB: /dev/zero used to grow
// memory until the OOM killer came, a FIFO to hang start-up. Each is refused
// at once (the FIFO run is bounded: -1 would mean it still hangs).
TEST(Cli, ConfigMustBeARegularFileOfAtMostOneMebibyte) {
    TempDir tmp;
    const std::string fifo = tmp.file("fifo.toml");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string big = tmp.file("big.toml");
    write_file(big, "# " + std::string(2 << 20, 'x') + "\n");
    for (const std::string& command : {std::string("run"), std::string("sim"), std::string("config")}) {
        for (const std::string& path : {std::string("/dev/zero"), fifo, big}) {
            SCOPED_TRACE(command + " " + path);
            std::vector<std::string> args = {command, "--config", path, "--duration", "1"};
            if (command == "config") args = {"config", "check", path};
            BackgroundCli cli(args, tmp);
            ASSERT_TRUE(cli.started());
            EXPECT_EQ(cli.wait_exit(std::chrono::seconds(10)), 2) << cli.err();
            const std::string err = cli.err();
            EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
            EXPECT_NE(err.find(path + ": expected a"), std::string::npos) << err;
        }
    }
}

// ------------------------------------------------ exit codes and options

// One rule for every command: a value that is not exactly what the option
// takes is a usage error naming the option and what it expects.
TEST(Cli, OptionValuesAreTakenExactlyOrRefused) {
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 2);
    const std::string config = write_run_config(tmp, "");
    const std::string out = tmp.file("out.pcap");
    // Integer options: no fraction, no hex, no trailing text, no sign where
    // the range has none, nothing empty, no overflow.
    const std::string integer_options[] = {
        "replay " + quoted(capture) + " --stale-ms",
        "replay " + quoted(capture) + " --source-age-ms",
        "run --config " + quoted(config) + " --refresh-ms",
        "sim --duration 0.01 --instruments",
        "sim --duration 0.01 --port-a",
        "sim --duration 0.01 --seed",
    };
    for (const std::string& command : integer_options) {
        for (const char* value : {"1.9", "0x10", "10abc", "-5", "", "99999999999999999999", " 12", "+12"}) {
            SCOPED_TRACE(command + " '" + value + "'");
            const std::string option = command.substr(command.rfind(' ') + 1);
            expect_usage_error(run_cli(command + " " + quoted(value)), {option + ": expected an integer in"});
        }
    }
    // Decimal options (seconds, rates, factors): digits with an optional
    // fraction; no hex, exponent, inf/nan, trailing text or empty value.
    const std::string decimal_options[] = {
        "run --config " + quoted(config) + " --duration",
        "capture --config " + quoted(config) + " --out " + quoted(out) + " --duration",
        "send " + quoted(capture) + " --speed",
        "sim --rate",
        "sim --duration 0.01 --loss-a",
    };
    for (const std::string& command : decimal_options) {
        for (const char* value : {"0x10", "10abc", "-5", "", "1e3", "inf", "nan", "99999999999999999999", ".5", "1."}) {
            SCOPED_TRACE(command + " '" + value + "'");
            const std::string option = command.substr(command.rfind(' ') + 1);
            expect_usage_error(run_cli(command + " " + quoted(value)), {option + ": expected a decimal number in"});
        }
    }
    // Compound values use the same readers.
    expect_usage_error(run_cli("sim --duration 0.01 --burst-loss 0.1:0x10"), {"--burst-loss: expected an integer"});
    expect_usage_error(run_cli("sim --duration 0.01 --outage-a 0.1:0.2:0.3"), {"--outage-a: expected FROM:TO"});
    expect_usage_error(run_cli("sim --duration 0.01 --quiet 1.5"), {"--quiet: expected an integer"});
}

// sim --protocol mdp3: QFB/1-only options, a config channel of another
// protocol or without snapshot and definition lines, and bad GROUP:PORT
// values are bad usage; a run writes its capture and says "mdp3".
TEST(Cli, SimMdp3RefusesWhatItCannotSimulate) {
    const std::string sim = "sim --protocol mdp3 --messages 50 ";
    expect_usage_error(run_cli(sim + "--quiet 3"), {"--quiet/--silence: QFB/1's"});
    expect_usage_error(run_cli(sim + "--lagging-snapshots"), {"--lagging-snapshots: QFB/1's"});
    expect_usage_error(run_cli(sim + "--config " + quoted(TICKGATE_SOURCE_DIR "/configs/demo.toml")),
                       {"channel 1 speaks qfb1; this simulator speaks mdp3"});
    TempDir tmp;
    const std::string bare = tmp.path() + "/bare.toml";
    std::ofstream(bare) << "[[channel]]\nid = 7\nprotocol = \"mdp3\"\n"
                           "a = { group = \"239.255.20.1\", port = 14310 }\nb = { group = \"239.255.20.2\", port = 15310 }\n";
    expect_usage_error(run_cli(sim + "--config " + quoted(bare)), {"channel 7 has no snapshot_a/snapshot_b"});
    expect_usage_error(run_cli(sim + "--snapshot-a 239.255.20.3"), {"--snapshot-a: expected GROUP:PORT"});
    expect_usage_error(run_cli(sim + "--definition-b 10.0.0.1:1"), {"is not a 239.x.x.x multicast address"});
    const std::string pcap = tmp.path() + "/m.pcap";
    const CliResult ok = run_cli(sim + "--pcap " + quoted(pcap));
    EXPECT_EQ(ok.exit, 0) << ok.err;
    EXPECT_NE(ok.out.find("\"mdp3\""), std::string::npos) << ok.out;
    EXPECT_TRUE(std::filesystem::exists(pcap));
}

// A non-loopback --interface is bad usage for send as for sim (it used to
// fail at socket set-up in send: exit 1).
TEST(Cli, NonLoopbackInterfaceIsAUsageErrorForSendAndSim) {
    TempDir tmp;
    const std::string capture = tmp.file("ok.pcap");
    write_capture(capture, 2);
    for (const std::string& command : {"send --interface 10.0.0.1 " + quoted(capture),
                                       std::string("sim --duration 0.01 --interface 10.0.0.1"),
                                       "send --interface 127.0.0.01 " + quoted(capture)}) {
        SCOPED_TRACE(command);
        expect_usage_error(run_cli(command), {"--interface: expected an IPv4 loopback address"});
    }
}

// A config without a channel is a bad config for the commands that receive
// on channels (it used to be a runtime failure, exit 1, for run).
TEST(Cli, RunAndCaptureWithoutAChannelAreABadConfig) {
    TempDir tmp;
    const std::string config = tmp.file("no-channel.toml");
    write_file(config, "[gate]\nstale_ms = 250\n");
    expect_usage_error(run_cli("run --quiet --duration 0.2 --config " + quoted(config)),
                       {config + ":1: channel: expected at least one [[channel]]"});
    expect_usage_error(run_cli("capture --duration 0.2 --out " + quoted(tmp.file("x.pcap")) + " --config " +
                               quoted(config)),
                       {config + ":1: channel: expected at least one [[channel]]"});
}

// A GLIMPSE password file that cannot be read is found when the config
// loads: exit 2 with FILE:LINE for run and config check, as for any bad key
// (it used to be a start-up failure, exit 1, once run had opened the lines).
TEST(Cli, GlimpsePasswordFileMissingIsABadConfig) {
    TempDir tmp;
    const std::string config = tmp.file("glimpse.toml");
    const std::string missing = tmp.file("no-such-password");
    write_file(config, "[glimpse]\nusername = \"tg01\"\npassword_file = \"" + missing +
                           "\"\n[[channel]]\nid = 1\nprotocol = \"itch50\"\nglimpse = \"127.0.0.1:31400\"\n"
                           "a = { group = \"239.255.30.1\", port = 31301 }\nb = { group = \"239.255.30.2\", port = 31302 }\n");
    const std::string want = config + ":3: glimpse.password_file: expected a readable file";
    expect_usage_error(run_cli("run --quiet --duration 0.2 --config " + quoted(config)), {want, "No such file or directory"});
    expect_usage_error(run_cli("config check " + quoted(config)), {want});
}

// Writing an output file that fails (here: /dev/full, no space left) is a
// runtime failure, exit 1, for capture as for sim (capture used to exit 2).
TEST(Cli, OutputWriteFailureIsARuntimeFailureForCaptureAndSim) {
    TempDir tmp;
    const std::string config = write_run_config(tmp, "");
    for (const std::string& command : {"capture --duration 0.2 --out /dev/full --config " + quoted(config),
                                       std::string("sim --duration 0.05 --rate 1000 --pcap /dev/full")}) {
        SCOPED_TRACE(command);
        const CliResult r = run_cli(command);
        EXPECT_FALSE(r.signaled) << r.err;
        EXPECT_EQ(r.exit, 1) << r.err;
        EXPECT_EQ(r.err.rfind("tickgate: /dev/full: write failed: No space left on device\n", 0), 0u) << r.err;
    }
}

// ------------------------------------------------------- ITCH 5.0 live

// `run` and `capture` on an itch50 config, fed by `sim --protocol itch50`
// with loss on both lines and its re-request server: run's summary has
// nothing lost, the recovered messages and the simulator's books, and its
// metrics say the same; the capture holds both lines whole. Groups and
// ports of its own.
TEST(Cli, ItchRunAndCaptureAgainstTheSimulator) {
    TempDir tmp, tmp_capture;
    const std::string config = write_channel_config(
        tmp, "itch.toml", 4, "239.255.94", 39541, "protocol = \"itch50\"\nrerequest = \"127.0.0.1:39540\"\n",
        "[moldudp64]\nrecover_from_start = true\n[itch]\nmax_orders = 65536\nmax_levels = 16384\n");
    const std::string pcap = tmp_capture.file("itch.pcap");
    BackgroundCli run({"run", "--config", config, "--quiet", "--json", "--duration", "4", "--metrics", "127.0.0.1:0"},
                      tmp);
    BackgroundCli capture({"capture", "--config", config, "--out", pcap, "--duration", "4"}, tmp_capture);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(capture.started());
    ASSERT_TRUE(run.wait_for_stderr("/metrics\n")) << run.err();
    const std::uint16_t metrics_port = announced_metrics_port(run.err());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // both have joined the lines
    const CliResult sim = run_cli("sim --protocol itch50 --config " + quoted(config) +
                                  " --stocks 20 --messages 3000 --loss-a 0.05 --loss-b 0.05 --seed 3 --server-linger-ms 300");
    ASSERT_EQ(sim.exit, 0) << sim.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // two publishes after the last packet
    const test::HttpResponse scraped = test::http_get(metrics_port, "/metrics");
    ASSERT_EQ(run.wait_exit(std::chrono::seconds(15)), 0) << run.err();
    ASSERT_EQ(capture.wait_exit(std::chrono::seconds(15)), 0) << capture.err();
    const Json truth = Json::parse(sim.out);
    const Json summary = Json::parse(run.out());
    const Json& ch = summary["channels"][0];
    EXPECT_EQ(ch["lost_messages"].as_uint(), 0u);
    EXPECT_EQ(ch["late_join_messages"].as_uint(), 0u);
    EXPECT_EQ(ch["next_seq"].as_uint(), truth["sessions"][0]["messages"].as_uint() + 1);
    EXPECT_GE(ch["recovered_messages"].as_uint(), truth["sessions"][0]["dropped_both_messages"].as_uint());
    // The stream and re-request counters in the metrics, as in the summary.
    for (const auto& [family, value] :
         {std::pair{"tickgate_stream_packets_total", ch["packets"].as_uint()},
          std::pair{"tickgate_stream_recovered_messages_total", ch["recovered_messages"].as_uint()},
          std::pair{"tickgate_stream_lost_messages_total", std::uint64_t{0}},
          std::pair{"tickgate_rerequest_requests_sent_total", ch["rerequest"]["requests_sent"].as_uint()}})
        EXPECT_TRUE(test::has_line(scraped.body, std::string(family) + "{channel=\"4\"} " + std::to_string(value)))
            << family << " " << value << "\n" << scraped.body;
    EXPECT_TRUE(test::has_line(scraped.body, R"(tickgate_line_packets_total{channel="4",line="A"} )" +
                                                 std::to_string(summary["live"]["channels"][0]["lines"][0]["packets"].as_uint())))
        << scraped.body;
    ASSERT_EQ(summary["instruments"].size(), truth["instruments"].size());
    for (std::size_t i = 0; i < truth["instruments"].size(); ++i) {
        const Json& want = truth["instruments"][i];
        const Json& got = summary["instruments"][i];
        SCOPED_TRACE(want["symbol"].as_string());
        EXPECT_EQ(got["id"].as_uint(), want["id"].as_uint());
        EXPECT_EQ(got["orders"].as_uint(), want["orders"].as_uint());
        for (const char* side : {"bids", "asks"}) {
            ASSERT_EQ(got[side].size(), want[side].size());
            for (std::size_t l = 0; l < want[side].size(); ++l) {
                EXPECT_EQ(got[side][l][0].as_uint(), want[side][l][0].as_uint());  // price
                EXPECT_EQ(got[side][l][1].as_uint(), want[side][l][1].as_uint());  // shares
            }
        }
    }
    // The capture: every datagram both lines carried (the server's unicast answers are the handler's, not in it).
    const CliResult replayed = run_cli("replay --protocol itch50 --json --config " + quoted(config) + " " + quoted(pcap));
    ASSERT_EQ(replayed.exit, 0) << replayed.err;
    EXPECT_EQ(Json::parse(replayed.out)["channels"][0]["packets"].as_uint(),
              truth["sent_a"].as_uint() + truth["sent_b"].as_uint());
}

// ------------------------------------------------------- run --json live stats

// `run --json` fed by `sim` on both lines: the "live" object shows each line's
// counters, the A/B arbitration and the ring, so a script sees duplicates,
// losses, kernel drops and overflows without scraping metrics. Groups and
// ports of its own (no other test sends or listens there).
TEST(Cli, RunJsonShowsLineArbitrationAndRingCounters) {
    TempDir tmp;
    const std::string config = write_channel_config(tmp, "live.toml", 7, "239.255.93", 39531);
    BackgroundCli run({"run", "--config", config, "--quiet", "--json", "--duration", "4", "--metrics", "127.0.0.1:0"},
                      tmp);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.wait_for_stderr("/metrics\n")) << run.err();  // the lines are joined
    const CliResult sim = run_cli("sim --config " + quoted(config) + " --instruments 4 --rate 2000 --duration 0.5 "
                                  "--loss-a 0.1 --seed 11");
    ASSERT_EQ(sim.exit, 0) << sim.err;
    ASSERT_EQ(run.wait_exit(std::chrono::seconds(15)), 0) << run.err();
    const Json truth = Json::parse(sim.out);
    const Json summary = Json::parse(run.out());
    const Json& live = summary["live"];
    ASSERT_EQ(live["channels"].size(), 1u);
    const Json& channel = live["channels"][0];
    EXPECT_EQ(channel["id"].as_uint(), 7u);
    ASSERT_EQ(channel["lines"].size(), 2u);
    const Json& a = channel["lines"][0];
    const Json& b = channel["lines"][1];
    EXPECT_EQ(a["line"].as_string(), "A");
    EXPECT_EQ(b["line"].as_string(), "B");
    EXPECT_EQ(a["group"].as_string(), "239.255.93.1");
    EXPECT_EQ(b["port"].as_uint(), 39532u);
    // Loopback loses nothing at this rate: every packet the sim sent per line arrived.
    EXPECT_EQ(a["packets"].as_uint(), truth["packets"]["sent_a"].as_uint());
    EXPECT_EQ(b["packets"].as_uint(), truth["packets"]["sent_b"].as_uint());
    EXPECT_GT(a["bytes"].as_uint(), a["packets"].as_uint());
    EXPECT_GT(a["seq_gaps"].as_uint(), 0u);  // line A lost 10 %
    EXPECT_EQ(b["seq_gaps"].as_uint(), 0u);
    for (const Json* line : {&a, &b}) {
        EXPECT_EQ((*line)["kernel_drops"].as_uint(), 0u);
        EXPECT_EQ((*line)["rejected_source"].as_uint(), 0u);
    }
    const Json& arb = live["arbitration"];
    EXPECT_TRUE(arb["enabled"].as_bool());
    // Both lines carry the feed: each packet that came on both lines is
    // taken once and dropped once (B carries all, A 90 %).
    const std::uint64_t on_both = truth["packets"]["sent_a"].as_uint();
    EXPECT_GT(arb["duplicate_packets"].as_uint(), on_both * 9 / 10);
    EXPECT_LE(arb["duplicate_packets"].as_uint(), on_both);
    EXPECT_EQ(arb["lost_on_both"].as_uint(), 0u);
    for (const char* key : {"held_packets", "filled_holes", "unarbitrated", "unconfirmed_jumps"})
        EXPECT_NO_THROW((void)arb[key].as_uint()) << key;
    const Json& ring = live["ring"];
    EXPECT_EQ(ring["capacity"].as_uint(), 65536u);
    EXPECT_EQ(ring["overflow_packets"].as_uint(), 0u);
    EXPECT_EQ(ring["overflow_events"].as_uint(), 0u);
    EXPECT_EQ(ring["data_lost_marks"].as_uint(), 0u);
    EXPECT_NO_THROW((void)ring["fill"].as_uint());
}

// threading.pipeline = "inline": `run` receives and books on one thread, no
// ring. The same feed arrives whole (every packet on each line, each second
// copy dropped by the arbiter) and the JSON keeps its schema, the ring empty
// (capacity 0). Groups and ports of its own.
TEST(Cli, RunInlinePipelineTakesTheFeedWithoutARing) {
    TempDir tmp;
    const std::string config =
        write_channel_config(tmp, "inline.toml", 8, "239.255.96", 39611, "", "[threading]\npipeline = \"inline\"\n");
    BackgroundCli run({"run", "--config", config, "--quiet", "--json", "--duration", "3", "--metrics", "127.0.0.1:0"},
                      tmp);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.wait_for_stderr("/metrics\n")) << run.err();  // the lines are joined
    const CliResult sim = run_cli("sim --config " + quoted(config) + " --instruments 4 --rate 2000 --duration 0.5 --seed 5");
    ASSERT_EQ(sim.exit, 0) << sim.err;
    ASSERT_EQ(run.wait_exit(std::chrono::seconds(15)), 0) << run.err();
    const Json truth = Json::parse(sim.out);
    const Json summary = Json::parse(run.out());
    const Json& lines = summary["live"]["channels"][0]["lines"];
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0]["packets"].as_uint(), truth["packets"]["sent_a"].as_uint());
    EXPECT_EQ(lines[1]["packets"].as_uint(), truth["packets"]["sent_b"].as_uint());
    EXPECT_EQ(summary["live"]["arbitration"]["duplicate_packets"].as_uint(), truth["packets"]["sent_a"].as_uint());
    const Json& ring = summary["live"]["ring"];
    EXPECT_EQ(ring["capacity"].as_uint(), 0u);
    EXPECT_EQ(ring["overflow_packets"].as_uint(), 0u);
    ASSERT_EQ(summary["instruments"].size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(summary["instruments"][i]["lost"].as_uint(), 0u) << i;
        EXPECT_GT(summary["instruments"][i]["last_seq"].as_int(), 0) << i;
    }
}

// ------------------------------------------------------- run: gate rejections

// The value of the sample `series` (name{labels}) in a Prometheus text, or -1.
long long metric_value(const std::string& body, const std::string& series) {
    const std::string text = "\n" + body;
    const std::string prefix = "\n" + series + " ";
    const auto at = text.find(prefix);
    return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + prefix.size());
}

// `run` asks the gate about the instrument of every update that changed a
// book, as an engine pricing an order on each change would, and counts each
// refusal by reason. Here the channel's clock offset is 10 s off, so every
// price is stale at source: tickgate_gate_rejections_total must move.
TEST(Cli, RunCountsGateRejectionsByReason) {
    TempDir tmp;
    const std::string config =
        write_channel_config(tmp, "gate.toml", 8, "239.255.96", 39561, "clock_offset_ns = 10000000000\n");
    BackgroundCli run({"run", "--config", config, "--quiet", "--duration", "8", "--metrics", "127.0.0.1:0"}, tmp);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.wait_for_stderr("/metrics\n")) << run.err();  // the lines are joined
    const std::uint16_t port = announced_metrics_port(run.err());
    ASSERT_NE(port, 0) << run.err();
    const CliResult sim = run_cli("sim --config " + quoted(config) + " --instruments 4 --rate 2000 --duration 0.3 --seed 5");
    ASSERT_EQ(sim.exit, 0) << sim.err;
    const std::string stale_at_source = R"(tickgate_gate_rejections_total{reason="stale_at_source"})";
    test::HttpResponse r;
    for (int i = 0; i < 50 && metric_value(r.body, stale_at_source) <= 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        r = test::http_get(port, "/metrics");
    }
    EXPECT_GT(metric_value(r.body, stale_at_source), 0) << r.body;
    // Each check follows the update that made the price fresh: never stale, never unknown.
    EXPECT_EQ(metric_value(r.body, R"(tickgate_gate_rejections_total{reason="stale"})"), 0) << r.body;
    EXPECT_EQ(metric_value(r.body, R"(tickgate_gate_rejections_total{reason="unknown"})"), 0) << r.body;
    EXPECT_EQ(run.interrupt(), 0) << run.err();
}

// The fan-out's commands (issue 27): bad usage is one line and exit 2; a
// subscriber that finds no server says so and exits 1.
TEST(Cli, SubscribeUsage) {
    expect_usage_error(run_cli("subscribe --quiet"), {"SUBJECT"});
    expect_usage_error(run_cli("subscribe --pending-limit 0 'tickgate.>'"), {"--pending-limit"});
    TempDir tmp;
    const std::string config = tmp.file("bad.toml");
    write_file(config, "[fanout]\ndepth = 40\n");
    expect_usage_error(run_cli("subscribe --config " + quoted(config) + " 'tickgate.>'"), {config + ":2", "fanout.depth"});
    const CliResult r = run_cli("subscribe --servers nats://127.0.0.1:1 --duration 1 'tickgate.>'");
    EXPECT_EQ(r.exit, 1) << r.err;
    EXPECT_NE(r.err.find("fanout: cannot connect"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tickgate
