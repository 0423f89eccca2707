// Summary fields every protocol's JSON summary shares (private to the
// library: feed/replay.cpp, feed/itch50/replay.cpp).
#pragma once

#include "json_writer.hpp"
#include "tickgate/feed/replay.hpp"

namespace tickgate {

// With ctx.frames (a replay): "frames" and "capture_truncated", and where
// the capture was cut, into `out`.
void put_capture_fields(json::Value& out, const SummaryContext& ctx);
// run --json: the "live" object (per line, A/B arbitration, ring and
// receiver counters) into `summary`.
void put_live(json::Value& summary, const FeedStats& live);

}  // namespace tickgate
