// A fan-out consumer's options from a config's [fanout] table (servers,
// stream, credentials, reconnect wait): `tickgate subscribe --config` and
// `example_engine --fanout` read them the same way.
#pragma once

#include "tickgate/fanout/consumer.hpp"
#include "tickgate/feed/config.hpp"

namespace tickgate::cli {

[[nodiscard]] inline fanout::ConsumerOptions consumer_options(const FanoutConfig& f) {
    fanout::ConsumerOptions o;
    o.servers = f.servers;
    o.stream = f.stream;
    o.credentials_file = f.credentials_file;
    o.user = f.user;
    o.password_file = f.password_file;
    o.reconnect_wait_ms = f.reconnect_wait_ms;
    return o;
}

}  // namespace tickgate::cli
