#include "tickgate/feed/itch50/live.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "../json_writer.hpp"
#include "tickgate/feed/clock.hpp"

namespace tickgate::itch50 {

LiveHandler::LiveHandler(const Config& cfg) : client_(cfg), core_(cfg, &client_), receiver_(cfg) {
    // poll_once hands on at most one batch per socket (two per channel).
    const std::size_t round = std::size_t{std::clamp<std::uint32_t>(cfg.receiver.batch, 1, 1024)} * 2 * cfg.channels.size();
    stash_bytes_.resize(round * Receiver::kSlotBytes);
    stash_.reserve(round);
    logged_.resize(cfg.channels.size());
    channel_ids_ = cfg.channel_ids();
}

void LiveHandler::log_state(StateLog& log, std::int64_t now_ns) noexcept {
    for (std::uint32_t ch = 0; ch < logged_.size(); ++ch) {
        const std::uint64_t lost = core_.channel(ch).counters.lost_messages.get();
        const std::uint64_t recovered = client_.counters(ch).messages_recovered.get();
        StateChange c;
        c.time_ns = now_ns;
        c.channel = channel_ids_[ch];
        if (lost != logged_[ch].lost) {
            c.kind = StateChangeKind::kHoleGivenUp;
            c.value = lost - logged_[ch].lost;
            (void)log.push(c);
        }
        if (recovered != logged_[ch].recovered) {
            c.kind = StateChangeKind::kRerequested;
            c.value = recovered - logged_[ch].recovered;
            (void)log.push(c);
        }
        logged_[ch] = {lost, recovered};
    }
}

int LiveHandler::poll(std::int64_t timeout_ns) {
    stash_.clear();
    int n = receiver_.poll_once(std::min(timeout_ns, kMaxWaitNs), [this](const RawDatagram& d) {
        if (stash_.size() == stash_.capacity()) [[unlikely]] return;  // cannot happen: sized for a round
        const auto slot = static_cast<std::uint32_t>(stash_.size());
        std::memcpy(stash_bytes_.data() + std::size_t{slot} * Receiver::kSlotBytes, d.payload.data(), d.payload.size());
        stash_.push_back({d.recv_ns, d.dst_ip, d.dst_port, static_cast<std::uint32_t>(d.payload.size()), slot});
    });
    // In place (std::stable_sort would allocate); equal times keep the receive order.
    std::sort(stash_.begin(), stash_.end(), [](const Stashed& a, const Stashed& b) {
        return a.recv_ns != b.recv_ns ? a.recv_ns < b.recv_ns : a.slot < b.slot;
    });
    for (const Stashed& s : stash_)
        core_.deliver({stash_bytes_.data() + std::size_t{s.slot} * Receiver::kSlotBytes, s.len}, s.dst_ip, s.dst_port,
                      s.recv_ns);
    n += client_.poll_answers(core_.stream(), core_.sink());
    if (const std::int64_t drained = receiver_.drained_until(); drained != 0) core_.expire(drained);
    client_.tick(realtime_ns(), core_.stream());
    return n;
}

namespace {
std::string lines_text(const Receiver& r) {
    std::string out = fmt::format("{:<4} {:<4} {:>21} {:>10} {:>10} {:>10}\n", "ch", "line", "group:port", "packets",
                                  "drops", "rejected");
    for (const auto& l : r.lines())
        out += fmt::format("{:<4} {:<4} {:>21} {:>10} {:>10} {:>10}\n", l->channel_id, l->line ? "B" : "A",
                           fmt::format("{}:{}", l->group, l->port), l->packets.get(), l->kernel_drops.get(),
                           l->rejected_source.get());
    return out;
}
}  // namespace

std::string LiveHandler::summary_json(std::int64_t now_ns) const {
    json::Value out = json::Value::parse(core_.summary_json({.now_ns = now_ns}));
    json::Value& lines = out["lines"] = json::Value::array();
    for (const auto& l : receiver_.lines())
        lines.push_back({{"channel", l->channel_id},
                         {"line", l->line ? "B" : "A"},
                         {"group", l->group},
                         {"port", l->port},
                         {"packets", l->packets.get()},
                         {"bytes", l->bytes.get()},
                         {"kernel_drops", l->kernel_drops.get()},
                         {"rejected_source", l->rejected_source.get()},
                         {"oversized", l->oversized.get()},
                         {"recv_errors", l->recv_errors.get()}});
    return json::dump(out);
}

std::string LiveHandler::live_view(std::int64_t now_ns, std::string_view config_path, double elapsed_s,
                                   bool terminal) const {
    return core_.live_view(now_ns, config_path, elapsed_s, lines_text(receiver_), terminal);
}

}  // namespace tickgate::itch50
