// `tickgate config import-cme`: CME Globex publishes every MDP 3.0 channel's
// feeds (multicast groups, ports, source hosts) in its config.xml; this
// turns the channels asked for into tickgate `[[channel]]` tables, so that
// nobody types a group or a port by hand. Start-up tooling, not the hot path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tickgate::mdp3 {

struct CmeImportOptions {
    std::vector<std::uint16_t> channels;   // CME channel ids, in the order wanted
    std::string interface = "127.0.0.1";   // local address joining every line
    bool sources = true;                   // write the feeds' host-ip as `sources` (source-specific joins)
};

// Reads config.xml's text (`name` is its file, for messages) and returns the
// TOML of one `[[channel]]` per channel asked for: incremental (feed-type I)
// as lines a/b, snapshot (S) as snapshot_a/b, instrument replay (N) as
// definition_a/b; TCP historical replay (H) and MBO snapshots (SMBO) are
// left out (tickgate implements neither). Throws ConfigError
// ("NAME:LINE: WHAT: expected ..., got ...") for XML that is not CME's
// layout, a channel the file lacks, or a feed without both lines.
[[nodiscard]] std::string import_cme_channels(std::string_view xml, const std::string& name,
                                              const CmeImportOptions& options);

}  // namespace tickgate::mdp3
