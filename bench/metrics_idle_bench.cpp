// Scrapes under idle clients: holds N loopback connections that never send
// anything (reopening each one the server closes, as a client that keeps
// reconnecting would) and meanwhile scrapes GET /metrics every 500 ms,
// printing how long each scrape took. Either tickgate's MetricsServer or
// prometheus-cpp's pull Exposer (civetweb), the latter with the civetweb
// options given. The measurement behind the README's "Not prometheus-cpp"
// paragraph; both serve a small registry, so the time is all waiting.
//
// usage: metrics_idle_bench [--server tickgate|prometheus-cpp] [--idle N]
//                           [--seconds S] [--civetweb KEY=VALUE,...]
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "../tests/support/http.hpp"
#include "tickgate/feed/metrics.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string server = "tickgate";
    std::size_t idle = 200;
    double seconds = 6;
    std::vector<std::string> civetweb;  // key, value, key, value...
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "metrics_idle_bench: %s\nusage: metrics_idle_bench [--server tickgate|prometheus-cpp] [--idle N] "
                 "[--seconds S] [--civetweb KEY=VALUE,...]\n",
                 why);
    std::exit(2);
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        if (i + 1 >= argc) usage(("missing value for " + opt).c_str());
        const std::string value = argv[++i];
        if (opt == "--server") {
            if (value != "tickgate" && value != "prometheus-cpp") usage("--server: tickgate or prometheus-cpp");
            a.server = value;
        } else if (opt == "--idle") {
            a.idle = std::strtoul(value.c_str(), nullptr, 10);
        } else if (opt == "--seconds") {
            a.seconds = std::strtod(value.c_str(), nullptr);
        } else if (opt == "--civetweb") {
            std::stringstream in(value);
            for (std::string kv; std::getline(in, kv, ',');) {
                const auto eq = kv.find('=');
                if (eq == std::string::npos) usage("--civetweb: KEY=VALUE,...");
                a.civetweb.push_back(kv.substr(0, eq));
                a.civetweb.push_back(kv.substr(eq + 1));
            }
        } else {
            usage(("unknown option " + opt).c_str());
        }
    }
    if (a.seconds <= 0) usage("--seconds must be positive");
    return a;
}

// Connect that gives up after 200 ms: a server whose accept queue is full
// must not stall the holder.
int connect_quickly(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    timeval tv{0, 200'000};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Keeps `n` idle connections open until `stop`; returns how many it reopened.
std::size_t hold_idle(std::uint16_t port, std::size_t n, const std::atomic<bool>& stop) {
    std::vector<pollfd> fds;
    for (std::size_t i = 0; i < n; ++i)
        if (const int fd = connect_quickly(port); fd >= 0) fds.push_back({fd, POLLIN, 0});
    std::size_t reopened = 0;
    while (!stop.load()) {
        if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
        for (pollfd& p : fds) {
            if (p.revents == 0) continue;
            char buf[512];
            if (::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT) > 0) continue;  // the server never sends unasked
            ::close(p.fd);
            p.fd = connect_quickly(port);  // -1: poll ignores it; the next pass does not retry
            p.revents = 0;
            ++reopened;
        }
    }
    for (const pollfd& p : fds)
        if (p.fd >= 0) ::close(p.fd);
    return reopened;
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = parse(argc, argv);
    // Two descriptors per idle client in this process (client and server side).
    rlimit fd_limit{};
    ::getrlimit(RLIMIT_NOFILE, &fd_limit);
    fd_limit.rlim_cur = fd_limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &fd_limit);

    std::uint16_t port = 0;
    std::unique_ptr<tickgate::MetricsRegistry> registry;
    std::unique_ptr<tickgate::MetricsServer> server;
    std::shared_ptr<prometheus::Registry> prom_registry;
    std::unique_ptr<prometheus::Exposer> exposer;
    if (args.server == "tickgate") {
        registry = std::make_unique<tickgate::MetricsRegistry>(4, 0);
        server = std::make_unique<tickgate::MetricsServer>(*registry, tickgate::MetricsServerOptions{"127.0.0.1", 0});
        server->start();
        port = server->port();
    } else {
        std::vector<std::string> options{"listening_ports", "127.0.0.1:0"};
        options.insert(options.end(), args.civetweb.begin(), args.civetweb.end());
        exposer = std::make_unique<prometheus::Exposer>(options);
        prom_registry = std::make_shared<prometheus::Registry>();
        prometheus::BuildCounter().Name("bench_total").Help("A counter.").Register(*prom_registry).Add({}).Increment();
        exposer->RegisterCollectable(prom_registry);
        port = static_cast<std::uint16_t>(exposer->GetListeningPorts().at(0));
    }

    std::atomic<bool> stop{false};
    std::size_t reopened = 0;
    std::thread holder([&] { reopened = hold_idle(port, args.idle, stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the idle clients first

    std::vector<double> ok_ms;
    std::size_t scrapes = 0;
    std::string each;
    const auto end = Clock::now() + std::chrono::duration<double>(args.seconds);
    while (Clock::now() < end) {
        const auto t0 = Clock::now();
        const tickgate::test::HttpResponse r = tickgate::test::http_get(port, "/metrics");  // gives up after 5 s
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        ++scrapes;
        if (r.status == 200) ok_ms.push_back(ms);
        char line[64];
        std::snprintf(line, sizeof line, " %s:%.0fms", r.status == 200 ? "200" : r.status ? "other" : "failed", ms);
        each += line;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    stop = true;
    holder.join();

    std::string options_text;
    for (std::size_t i = 0; i + 1 < args.civetweb.size(); i += 2)
        options_text += (options_text.empty() ? "" : ",") + args.civetweb[i] + "=" + args.civetweb[i + 1];
    std::printf("server=%s%s%s idle=%zu: %zu/%zu scrapes answered", args.server.c_str(),
                options_text.empty() ? "" : " civetweb=", options_text.c_str(), args.idle, ok_ms.size(), scrapes);
    if (!ok_ms.empty()) {
        std::sort(ok_ms.begin(), ok_ms.end());
        std::printf(", ms min/median/max %.1f/%.1f/%.1f", ok_ms.front(), ok_ms[ok_ms.size() / 2], ok_ms.back());
    }
    std::printf("; idle connections reopened %zu\n  each:%s\n", reopened, each.c_str());
    return 0;
}
