// An MDP3 channel with all its lines on loopback for the tests: incremental
// A/B, snapshot A/B and definition A/B on groups PREFIX1..PREFIX6, ports
// `port`, port + 1000, port + 1, port + 1001, port + 2, port + 1002 (CME's
// habit: A and B a thousand apart), interface 127.0.0.1. The simulator
// publishes it with mdp3::SimOptions::use_channel.
#pragma once

#include <cstdint>
#include <string>

#include "tickgate/feed/config.hpp"

namespace tickgate::test {

inline ChannelConfig mdp3_loopback_channel(const std::string& group_prefix, std::uint16_t port) {
    const auto line = [&](int n, int port_offset) {
        return LineConfig{group_prefix + std::to_string(n), static_cast<std::uint16_t>(port + port_offset), "127.0.0.1"};
    };
    ChannelConfig ch;
    ch.id = 310;
    ch.protocol = "mdp3";
    ch.a = line(1, 0);
    ch.b = line(2, 1000);
    ch.snapshot_a = line(3, 1);
    ch.snapshot_b = line(4, 1001);
    ch.definition_a = line(5, 2);
    ch.definition_b = line(6, 1002);
    return ch;
}

}  // namespace tickgate::test
