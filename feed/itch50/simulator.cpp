// ITCH 5.0 venue simulator: the order flow, the MoldUDP64 packets, the
// handler model behind the ground truth and the re-request server; the
// shared driver applies the line faults and sends or writes the schedule.
#include "tickgate/feed/itch50/simulator.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "../json_writer.hpp"
#include "../sim_random.hpp"
#include "tickgate/endian.hpp"
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/clock.hpp"
#include "tickgate/feed/itch50/decoder.hpp"
#include "tickgate/feed/sender.hpp"

namespace tickgate::itch50 {

namespace {

constexpr std::size_t kMaxDatagram = 1400;       // a downstream packet, server answers included
constexpr std::uint32_t kTick = 100;             // $0.01 at 4 implied decimals
constexpr std::int64_t kRestartPauseNs = 100'000'000;  // between an end of session and the next session
constexpr std::int64_t kNsPerDay = 86'400'000'000'000;

void fail(const std::string& what) { throw std::invalid_argument(what); }

std::string stock_symbol(std::uint32_t i) {  // 1 -> "AAAB", ...: four letters, unique below 26^4
    std::string s(4, 'A');
    for (int k = 3; k >= 0; --k, i /= 26) s[static_cast<std::size_t>(k)] = static_cast<char>('A' + i % 26);
    return s;
}

// "SIM0000001" -> "SIM0000002": the trailing digits counted up.
std::string next_session(std::string s) {
    for (std::size_t i = s.size(); i-- > 0;) {
        if (s[i] < '0' || s[i] > '9') break;
        if (s[i] != '9') {
            ++s[i];
            return s;
        }
        s[i] = '0';
    }
    return s;
}

struct Order {
    std::uint64_t ref;
    std::uint32_t shares, price;
    char side;
};

struct Stock {
    std::uint32_t mid;
    std::vector<Order> orders;
    std::uint64_t messages = 0;
};

// A packet before faults: time, session, positions, and what kind it is.
struct Raw {
    std::uint32_t index;       // into packets
    std::int64_t t;
    std::uint32_t session;
    std::uint64_t seq, count;  // count 0: heartbeat or end of session (seq = next)
    bool exempt;               // end of session: never dropped, duplicated or reordered
    bool late;                 // an old session's packet again on line B after a restart
};

class Generator {
public:
    explicit Generator(const SimOptions& o) : o_(o), flow_(o.seed) {
        total_ = o.messages ? o.messages : static_cast<std::uint64_t>(std::llround(o.rate * o.duration_s));
        total_ = std::max<std::uint64_t>(total_, 1);
        stocks_.resize(o.stocks + 1);
        for (std::uint32_t i = 1; i <= o.stocks; ++i) stocks_[i].mid = static_cast<std::uint32_t>(5 + flow_.below(496)) * 10'000;
    }

    SimSchedule run() {
        start_session(0, o_.session);
        const std::uint64_t restart = o_.restart_at ? static_cast<std::uint64_t>(*o_.restart_at * static_cast<double>(total_)) : total_;
        for (std::uint64_t i = 0; i < total_; ++i) {
            if (i == restart && i > 0) restart_session(i);
            flow_message(time_of(i));
        }
        end_session(time_of(total_), true);
        // The line faults (the driver's); outages are fractions of the order flow.
        SimFaultStage faults(o_, o_.seed ^ 0x5EEDFA17ULL,
                             std::max<std::int64_t>(time_of(total_), 1), s_.truth);
        std::deque<SimCopy> copies;
        for (std::uint32_t i = 0; i < raws_.size(); ++i) {
            const Raw& r = raws_[i];
            SimDatagram d;
            d.time_ns = r.t, d.session = r.session, d.exempt = r.exempt, d.late = r.late, d.tag = i;
            model(r, faults.push(std::move(d), copies));
            schedule(copies);
        }
        faults.finish(copies);
        schedule(copies);
        s_.truth.duration_ns = t_last_;
        stock_truth();
        return std::move(s_);
    }

private:
    [[nodiscard]] std::int64_t time_of(std::uint64_t flow_index) const {
        return static_cast<std::int64_t>(static_cast<double>(flow_index) / o_.rate * 1e9) + shift_ns_;
    }
    [[nodiscard]] std::int64_t venue_ns(std::int64_t t) const {
        const std::int64_t v = (o_.epoch_ns + t + std::int64_t{o_.utc_offset_minutes} * 60'000'000'000) % kNsPerDay;
        return v < 0 ? v + kNsPerDay : v;
    }

    // ---- messages and packets
    void push(Bytes m, std::int64_t t) {
        if (pending_.empty()) pending_t_ = t;
        pending_.push_back(std::move(m));
        if (pending_.size() >= o_.batch) flush();
    }
    void flush() {
        if (pending_.empty()) return;
        heartbeats_until(pending_t_);
        const std::uint64_t seq = s_.store[session_].size() + 1;
        for (const Bytes& m : pending_) s_.store[session_].push_back(m);
        add_raw(mold_packet(s_.sessions[session_], seq, pending_), pending_t_, seq, pending_.size(), false);
        pending_.clear();
    }
    // Heartbeats (count 0, the next position) while the line would be idle for heartbeat_ms.
    void heartbeats_until(std::int64_t t) {
        const std::int64_t period = std::int64_t{o_.heartbeat_ms} * 1'000'000;
        while (t - t_last_ > period) {
            const std::uint64_t next = s_.store[session_].size() + 1;
            add_raw(mold_heartbeat(s_.sessions[session_], next), t_last_ + period, next, 0, false);
            ++s_.truth.heartbeats;
        }
    }
    void add_raw(Bytes d, std::int64_t t, std::uint64_t seq, std::uint64_t count, bool exempt) {
        raws_.push_back({static_cast<std::uint32_t>(s_.packets.size()), t, session_, seq, count, exempt, false});
        s_.packets.push_back(std::move(d));
        t_last_ = t;
    }

    void start_session(std::int64_t t, const std::string& name) {
        session_ = static_cast<std::uint32_t>(s_.sessions.size());
        s_.sessions.push_back(name);
        s_.store.emplace_back();
        for (Stock& st : stocks_) st.orders.clear();
        push(system_event('O', venue_ns(t)), t);
        for (std::uint32_t i = 1; i <= o_.stocks; ++i) {
            push(stock_directory(static_cast<std::uint16_t>(i), stock_symbol(i), venue_ns(t)), t);
            ++stocks_[i].messages;
        }
        push(system_event('S', venue_ns(t)), t);
        push(system_event('Q', venue_ns(t)), t);
    }
    void end_session(std::int64_t t, bool last) {
        for (const char code : {'M', 'E', 'C'}) push(system_event(code, venue_ns(t)), t);
        flush();
        // A few idle periods of heartbeats, then the end of session (never lost: it reveals any tail hole).
        heartbeats_until(t + 3 * std::int64_t{o_.heartbeat_ms} * 1'000'000);
        add_raw(mold_heartbeat(s_.sessions[session_], s_.store[session_].size() + 1, true),
                t_last_ + std::int64_t{o_.heartbeat_ms} * 1'000'000 / 2, s_.store[session_].size() + 1, 0, true);
        if (!last) last_old_data_ = last_data_packet();
    }
    // End of session, a pause, then the next session from 1 with empty books;
    // the flow from message `i` on moves after the pause.
    void restart_session(std::uint64_t i) {
        const std::int64_t t = time_of(i);
        end_session(t, false);
        const std::int64_t t_new = t_last_ + kRestartPauseNs;
        t_last_ = t_new;  // no heartbeat of the new session before its first packet
        start_session(t_new, next_session(s_.sessions[session_]));
        flush();
        shift_ns_ += t_new - t;
        if (last_old_data_) {  // one packet of the old session, late, on line B
            Raw late = *last_old_data_;
            late.t = t_last_;
            late.late = true;
            raws_.push_back(late);
        }
    }
    [[nodiscard]] std::optional<Raw> last_data_packet() const {
        for (auto it = raws_.rbegin(); it != raws_.rend(); ++it)
            if (it->count > 0) return *it;
        return std::nullopt;
    }

    // ---- the order flow: adds (with and without MPID), executions (with and
    // without price), cancels, deletes, replaces; a mid that wanders.
    // A new order never crosses or locks the stock's book: a venue would have
    // matched it. The mid wanders while resting orders stay, so a bid is kept
    // a tick below the best ask and an ask a tick above the best bid (issue
    // 26: after 2 M messages every book was crossed).
    std::uint32_t price_for(const Stock& st, char side) {
        const std::uint32_t away = static_cast<std::uint32_t>(1 + flow_.below(10)) * kTick;
        if (side == 'B') {
            std::uint32_t price = st.mid - away;
            for (const Order& o : st.orders)
                if (o.side == 'S' && o.price <= price) price = o.price - kTick;
            return price;
        }
        std::uint32_t price = st.mid + away;
        for (const Order& o : st.orders)
            if (o.side == 'B' && o.price >= price) price = o.price + kTick;
        return price;
    }
    void flow_message(std::int64_t t) {
        const auto locate = static_cast<std::uint16_t>(1 + flow_.below(o_.stocks));
        Stock& st = stocks_[locate];
        ++st.messages;
        const std::int64_t ts = venue_ns(t);
        if (flow_.uniform() < 0.02) st.mid = std::max<std::uint32_t>(st.mid + (flow_.below(2) ? kTick : 0u) - (flow_.below(2) ? kTick : 0u), 20 * kTick);
        if (st.orders.empty() || flow_.uniform() < 0.42) {
            const char side = flow_.below(2) ? 'B' : 'S';
            const Order o{next_ref_++, static_cast<std::uint32_t>(1 + flow_.below(10)) * 100, price_for(st, side), side};
            st.orders.push_back(o);
            // Its stock, as Nasdaq's adds carry it: a handler joined after the directory still names it.
            push(add_order(locate, o.ref, side, o.shares, o.price, ts, flow_.uniform() < 0.15, stock_symbol(locate)), t);
            return;
        }
        const std::size_t k = flow_.below(st.orders.size());
        Order& o = st.orders[k];
        const double r = flow_.uniform();
        if (r < 0.15) {  // executed, partly or whole (E, or C with a printed price)
            const std::uint32_t n = std::min<std::uint32_t>(o.shares, static_cast<std::uint32_t>(1 + flow_.below(5)) * 100);
            push(r < 0.11 ? executed(locate, o.ref, n, ts) : executed_with_price(locate, o.ref, n, o.price + kTick, ts), t);
            o.shares -= n;
        } else if (r < 0.30) {  // cancel part
            const std::uint32_t cut = o.shares > 100 ? static_cast<std::uint32_t>(1 + flow_.below(o.shares / 100 - 1)) * 100 : o.shares;
            push(cancel(locate, o.ref, cut, ts), t);
            o.shares -= cut;
        } else if (r < 0.70) {
            push(delete_order(locate, o.ref, ts), t);
            o.shares = 0;
        } else {  // replace: new reference, shares and price, same side
            const Order u{next_ref_++, static_cast<std::uint32_t>(1 + flow_.below(10)) * 100, price_for(st, o.side), o.side};
            push(replace(locate, o.ref, u.ref, u.shares, u.price, ts), t);
            o = u;
        }
        if (o.shares == 0) {
            o = st.orders.back();
            st.orders.pop_back();
        }
    }

    // The copies the driver let through, one send per line, in order.
    void schedule(std::deque<SimCopy>& copies) {
        for (const SimCopy& c : copies) {
            const Raw& p = raws_[c.tag];
            for (const bool line_b : {false, true}) {
                if (!(line_b ? c.line_b : c.line_a)) continue;
                s_.sends.push_back({p.index, c.time_ns, line_b});
                s_.send_session.push_back(p.session);
                s_.send_published.push_back(p.count ? p.seq + p.count - 1 : p.seq - 1);
            }
        }
        copies.clear();
    }

    // The handler's view: a session's first carried packet decides its late
    // join; after it, positions neither line carried are what a handler
    // without a re-request server loses (the end of session reveals the tail).
    void model(const Raw& p, bool carried) {
        if (p.late) return;
        while (s_.truth.sessions.size() <= p.session) s_.truth.sessions.push_back({s_.sessions[s_.truth.sessions.size()], 0, 0, 0});
        SimTruth::SessionTruth& st = s_.truth.sessions[p.session];
        st.messages = s_.store[p.session].size();
        if (p.count == 0) {
            if (carried && !seen_.count(p.session)) {
                seen_.insert(p.session);
                st.late_join = p.seq - 1;
            }
            return;
        }
        if (!carried) {
            if (seen_.count(p.session)) st.dropped_both += p.count;
            return;
        }
        if (!seen_.count(p.session)) {
            seen_.insert(p.session);
            st.late_join = p.seq - 1;
        }
    }

    void stock_truth() {
        for (std::uint32_t i = 1; i <= o_.stocks; ++i) {
            SimStockTruth t{static_cast<std::uint16_t>(i), stock_symbol(i), stocks_[i].messages, stocks_[i].orders.size(), {}, {}};
            std::map<std::uint32_t, SimLevel> bids, asks;
            for (const Order& o : stocks_[i].orders) {
                SimLevel& l = (o.side == 'B' ? bids : asks)[o.price];
                l.price = o.price;
                l.shares += o.shares;
                ++l.orders;
            }
            for (auto it = bids.rbegin(); it != bids.rend(); ++it) t.bids.push_back(it->second);
            for (const auto& [price, l] : asks) t.asks.push_back(l);
            s_.truth.stocks.push_back(std::move(t));
        }
        s_.truth.packets = s_.packets.size();
    }

    const SimOptions& o_;
    Rng flow_;
    std::uint64_t total_ = 0;
    std::vector<Stock> stocks_;
    std::uint64_t next_ref_ = 1;
    SimSchedule s_;
    std::vector<Raw> raws_;
    std::vector<Bytes> pending_;
    std::int64_t pending_t_ = 0, t_last_ = 0, shift_ns_ = 0;
    std::uint32_t session_ = 0;
    std::optional<Raw> last_old_data_;
    std::set<std::uint32_t> seen_;
};

}  // namespace

void SimOptions::validate() const {
    if (stocks < 1 || stocks > 65535) fail("--stocks: expected 1..65535");
    if (!(rate > 0)) fail("--rate: expected a positive rate");
    if (batch < 1 || batch > 32) fail("--batch: expected 1..32");
    if (heartbeat_ms < 1) fail("--heartbeat-ms: expected at least 1");
    if (session.size() != 10) fail("--session: expected 10 characters, got '" + session + "'");
    SimLineFaults::validate();
    if (!(server_partial >= 0 && server_partial <= 1)) fail("--server-partial: expected 0..1");
    if (restart_at && !(*restart_at > 0 && *restart_at < 1)) fail("--restart-at: expected a fraction in (0, 1)");
    lines().validate();
}

SimLinePair SimOptions::lines() const { return {{group_a, port_a, interface}, {group_b, port_b, interface}}; }

SimSchedule simulate(const SimOptions& o) {
    o.validate();
    return Generator(o).run();
}

// ------------------------------------------------------------------ server

struct RerequestServer::Impl {
    const SimOptions& o;
    const SimSchedule& schedule;
    int fd = -1;
    std::uint16_t port = 0;
    std::vector<std::atomic<std::uint64_t>> published;
    std::atomic<bool> stop{false};
    std::thread thread;
    Rng rng;
    std::uint64_t requests = 0, rejected = 0, answers = 0, answered_messages = 0;

    Impl(const SimOptions& opt, const SimSchedule& s)
        : o(opt), schedule(s), published(s.sessions.size()), rng(opt.seed ^ 0x5E4E4ULL) {}

    void serve() {
        std::byte buf[64];
        while (!stop.load(std::memory_order_relaxed)) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            sockaddr_in from{};
            socklen_t len = sizeof from;
            const ssize_t n = ::recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
            if (n < 0) continue;
            ++requests;
            const std::uint32_t src = ntohl(from.sin_addr.s_addr);
            // 20 bytes from a loopback requester; anything else is refused unanswered.
            if (n != static_cast<ssize_t>(moldudp64::kRequestSize) || (src >> 24) != 127) {
                ++rejected;
                continue;
            }
            if (o.server_silent) continue;
            answer(std::span<const std::byte>(buf, static_cast<std::size_t>(n)), from);
        }
    }

    void answer(std::span<const std::byte> req, const sockaddr_in& to) {
        const moldudp64::Key k = moldudp64::read_key(req, 0);
        const auto it = std::find_if(schedule.sessions.begin(), schedule.sessions.end(),
                                     [&](const std::string& s) { return std::equal(s.begin(), s.end(), k.session.begin()); });
        if (it == schedule.sessions.end() || k.seq == 0) {
            ++rejected;
            return;
        }
        const auto si = static_cast<std::size_t>(it - schedule.sessions.begin());
        const std::uint64_t last = published[si].load(std::memory_order_acquire);
        if (k.seq > last) return;  // nothing of it published yet
        std::uint64_t count = std::min<std::uint64_t>(k.count, last - k.seq + 1);
        if (o.server_partial > 0 && rng.uniform() < o.server_partial) count = std::max<std::uint64_t>(count / 2, 1);
        if (o.server_delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(o.server_delay_ms));
        const std::vector<Bytes>& store = schedule.store[si];
        std::vector<Bytes> batch;
        std::size_t size = moldudp64::kHeaderSize;
        std::uint64_t first = k.seq;
        const auto send_batch = [&] {
            if (batch.empty()) return;
            const Bytes d = mold_packet(*it, first, batch);
            ::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
            ++answers;
            answered_messages += batch.size();
            first += batch.size();
            batch.clear();
            size = moldudp64::kHeaderSize;
        };
        for (std::uint64_t seq = k.seq; seq < k.seq + count; ++seq) {
            const Bytes& m = store[seq - 1];
            if (size + moldudp64::kBlockHeaderSize + m.size() > kMaxDatagram) send_batch();
            batch.push_back(m);
            size += moldudp64::kBlockHeaderSize + m.size();
        }
        send_batch();
    }
};

RerequestServer::RerequestServer(const SimOptions& o, const SimSchedule& schedule)
    : impl_(std::make_unique<Impl>(o, schedule)) {
    Impl& m = *impl_;
    m.fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (m.fd < 0) throw std::runtime_error(std::string("re-request server socket: ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7F000001);  // 127.0.0.1 only: nothing answers off the host
    a.sin_port = htons(o.server_port);
    socklen_t len = sizeof a;
    if (::bind(m.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(m.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        const std::string err = std::strerror(errno);
        ::close(m.fd);
        throw std::runtime_error(fmt::format("re-request server 127.0.0.1:{}: {}", o.server_port, err));
    }
    m.port = ntohs(a.sin_port);
    m.thread = std::thread([&m] { m.serve(); });
}

RerequestServer::~RerequestServer() {
    stop();
    ::close(impl_->fd);
}

std::uint16_t RerequestServer::port() const noexcept { return impl_->port; }

void RerequestServer::publish(std::uint32_t session, std::uint64_t seq) noexcept {
    std::atomic<std::uint64_t>& p = impl_->published[session];
    if (seq > p.load(std::memory_order_relaxed)) p.store(seq, std::memory_order_release);
}

std::pair<std::uint32_t, std::uint64_t> RerequestServer::latest() const noexcept {
    for (std::size_t i = impl_->published.size(); i-- > 0;)
        if (const std::uint64_t p = impl_->published[i].load(std::memory_order_acquire); p > 0)
            return {static_cast<std::uint32_t>(i), p};
    return {0, 0};
}

GlimpseSpin glimpse_spin(const SimSchedule& s, std::uint32_t session, std::uint64_t last) {
    struct Order {
        std::uint16_t locate;
        char side;
        std::uint32_t shares, price;
        std::int64_t timestamp_ns;  // of the add (or replace) that made it: a spin's adds carry it
    };
    std::map<std::uint64_t, Order> orders;
    std::map<std::uint16_t, Bytes> directory, trading;
    Bytes system;
    const std::vector<Bytes>& store = s.store[session];
    last = std::min<std::uint64_t>(last, store.size());
    for (std::uint64_t i = 0; i < last; ++i) {
        const Bytes& m = store[i];
        const OrderMessage o = decode_message(m, i + 1);
        switch (o.action) {
            case Action::kSystemEvent: system = m; break;
            case Action::kStockDirectory: directory[o.stock_locate] = m; break;
            case Action::kTradingAction: trading[o.stock_locate] = m; break;
            case Action::kAdd: orders[o.order_ref] = {o.stock_locate, o.side, o.shares, o.price, o.timestamp_ns}; break;
            case Action::kExecute:
            case Action::kCancel:
                if (auto it = orders.find(o.order_ref); it != orders.end()) {
                    if (o.shares >= it->second.shares) orders.erase(it);
                    else it->second.shares -= o.shares;
                }
                break;
            case Action::kDelete: orders.erase(o.order_ref); break;
            case Action::kReplace:
                if (auto it = orders.find(o.order_ref); it != orders.end()) {
                    const Order was = it->second;
                    orders.erase(it);
                    orders[o.new_order_ref] = {was.locate, was.side, o.shares, o.price, o.timestamp_ns};
                }
                break;
            default: break;
        }
    }
    GlimpseSpin spin;
    if (!system.empty()) spin.messages.push_back(system);
    for (auto& [locate, m] : directory) spin.messages.push_back(m);
    for (auto& [locate, m] : trading) spin.messages.push_back(m);
    for (const auto& [ref, o] : orders)
        spin.messages.push_back(add_order(o.locate, ref, o.side, o.shares, o.price, o.timestamp_ns));
    spin.next_position = last + 1;
    return spin;
}

void RerequestServer::stop() {
    impl_->stop.store(true);
    if (impl_->thread.joinable()) impl_->thread.join();
}

void RerequestServer::add_to(SimTruth& t) const {
    t.requests = impl_->requests;
    t.rejected_requests = impl_->rejected;
    t.answers = impl_->answers;
    t.answered_messages = impl_->answered_messages;
    t.server_port = impl_->port;
}

// ------------------------------------------------------------------ sinks

namespace {

// The schedule's sends as the driver's copies, one line each; tag = the send's index.
SimSource sends_of(const SimSchedule& s) {
    return [&s, i = std::size_t{0}](SimCopy& c) mutable {
        if (i == s.sends.size()) return false;
        const SimSend& p = s.sends[i];
        c.bytes = s.packets[p.packet];
        c.time_ns = p.time_ns;
        c.line_a = !p.line_b;
        c.line_b = p.line_b;
        c.tag = static_cast<std::uint32_t>(i++);
        return true;
    };
}

}  // namespace

SimTruth publish(const SimOptions& o, const SimSchedule& s, RerequestServer& server, GlimpseServer* glimpse) {
    // The server may answer a position once a line has carried it.
    (void)send_paced({o.lines()}, sends_of(s),
                     [&](const SimCopy& c) { server.publish(s.send_session[c.tag], s.send_published[c.tag]); });
    std::this_thread::sleep_for(std::chrono::milliseconds(o.server_linger_ms));
    server.stop();
    SimTruth t = s.truth;
    server.add_to(t);
    if (glimpse != nullptr) {
        glimpse->stop();
        t.glimpse_connections = glimpse->connections();
        t.glimpse_served = glimpse->snapshots_served();
        t.glimpse_rejected = glimpse->logins_rejected();
        t.glimpse_port = glimpse->port();
    }
    t.output = "sockets";
    return t;
}

SimTruth simulate_to_sockets(SimOptions o) {
    o.epoch_ns = realtime_ns();
    const SimSchedule s = simulate(o);
    RerequestServer server(o, s);
    fmt::print(stderr, "sim: re-request server on 127.0.0.1:{}\n", server.port());
    std::unique_ptr<GlimpseServer> glimpse;
    if (!o.glimpse_off) {
        GlimpseServerOptions g;
        g.port = o.glimpse_port;
        g.delay_ms = o.glimpse_delay_ms;
        g.drop_after = o.glimpse_drop_after;
        g.reject = o.glimpse_reject;
        g.any_credentials = true;
        // The book as published so far: the re-request server knows how far that is.
        glimpse = std::make_unique<GlimpseServer>(g, [&s, &server] {
            const auto [session, last] = server.latest();
            return glimpse_spin(s, session, last);
        });
        fmt::print(stderr, "sim: GLIMPSE server on 127.0.0.1:{}\n", glimpse->port());
    }
    return publish(o, s, server, glimpse.get());
}

SimTruth simulate_to_capture(const SimOptions& o, const std::string& path) {
    const SimSchedule s = simulate(o);
    write_pcap(path, o.epoch_ns, {o.lines()}, sends_of(s));
    SimTruth t = s.truth;
    t.output = "pcap:" + path;
    return t;
}

// ------------------------------------------------------------------ JSON

std::string SimTruth::to_json(const SimOptions& o) const {
    std::uint64_t late_join = 0, dropped = 0, messages = 0;
    json::Value sess = json::Value::array();
    for (const SessionTruth& s : sessions) {
        sess.push_back({{"session", s.session}, {"messages", s.messages}, {"late_join_messages", s.late_join},
                        {"dropped_both_messages", s.dropped_both}});
        late_join += s.late_join;
        dropped += s.dropped_both;
        messages += s.messages;
    }
    // What a handler listening from before time 0 must count, by how it recovers.
    const bool served = output == "sockets" && !o.server_silent;
    const auto expect = [](std::uint64_t lost, std::uint64_t late, bool clean) {
        return json::Value{{"lost_messages", lost}, {"late_join_messages", late}, {"books_equal", clean}};
    };
    json::Value out = {{"protocol", "itch50"}, {"output", output},       {"stocks", o.stocks},
                       {"seed", o.seed},        {"epoch_ns", o.epoch_ns}, {"duration_ns", duration_ns},
                       {"packets", packets},    {"heartbeats", heartbeats}, {"messages", messages},
                       {"sent_a", sent_a},      {"sent_b", sent_b},       {"dropped_a", dropped_a},
                       {"dropped_b", dropped_b}, {"dropped_both", dropped_both}, {"duplicated", duplicated_a + duplicated_b},
                       {"reordered", reordered_a + reordered_b}, {"stale_session_packets", late_old_session}};
    out["sessions"] = sess;
    out["glimpse"] = {{"off", o.glimpse_off},         {"port", glimpse_port},
                      {"delay_ms", o.glimpse_delay_ms}, {"reject", o.glimpse_reject},
                      {"drop_after", o.glimpse_drop_after == UINT64_MAX ? json::Value() : json::Value(o.glimpse_drop_after)},
                      {"connections", glimpse_connections}, {"snapshots_served", glimpse_served},
                      {"logins_rejected", glimpse_rejected}};
    out["server"] = {{"port", server_port},          {"silent", o.server_silent},
                     {"delay_ms", o.server_delay_ms}, {"partial", o.server_partial},
                     {"requests", requests},         {"rejected_requests", rejected_requests},
                     {"answers", answers},           {"answered_messages", answered_messages}};
    // Partial answers are asked again for the rest, max_requests times: exact only without them.
    const json::Value unserved = expect(dropped, late_join, dropped == 0 && late_join == 0);
    out["expected"] = {{"without_server", unserved},
                       {"with_server", served ? expect(0, late_join, late_join == 0) : unserved},
                       {"with_server_recover_from_start", served ? expect(0, 0, true) : unserved},
                       {"exact", o.server_partial == 0}};
    json::Value st = json::Value::array();
    const auto levels = [](const std::vector<SimLevel>& ls) {
        json::Value a = json::Value::array();
        for (const SimLevel& l : ls) a.push_back(json::Value::array({l.price, l.shares, l.orders}));
        return a;
    };
    for (const SimStockTruth& s : stocks)
        st.push_back({{"id", s.locate}, {"symbol", s.symbol}, {"messages", s.messages}, {"orders", s.open_orders},
                      {"bids", levels(s.bids)}, {"asks", levels(s.asks)}});
    out["instruments"] = st;
    return json::dump(out);
}

}  // namespace tickgate::itch50
