// The NATS client options the fan-out's publisher and consumer share:
// servers, credentials, reconnect policy. Private to feed/fanout/ (the
// installed headers do not include nats.h).
#pragma once

#include <nats/nats.h>

#include <string>
#include <vector>

namespace tickgate::fanout {

struct NatsAuth {
    std::string credentials_file;  // a NATS .creds file, or empty
    std::string user;              // with password_file, or empty
    std::string password_file;     // its first line is the password
    std::uint32_t reconnect_wait_ms = 100;
};

// Options for `servers` (nats://HOST:PORT): reconnect forever, `reconnect_wait_ms`
// apart, pings every 2 s (a silent node is noticed in 6 s; a killed one at
// once), the credentials read now. Throws std::runtime_error saying what
// failed (an unreadable password file names the file, never its content).
// The caller owns the result (natsOptions_Destroy).
natsOptions* make_nats_options(const std::vector<std::string>& servers, const NatsAuth& auth);

}  // namespace tickgate::fanout
