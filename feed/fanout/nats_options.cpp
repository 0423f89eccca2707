#include "nats_options.hpp"

#include <fstream>
#include <stdexcept>

namespace tickgate::fanout {

natsOptions* make_nats_options(const std::vector<std::string>& servers, const NatsAuth& auth) {
    natsOptions* o = nullptr;
    if (natsOptions_Create(&o) != NATS_OK) throw std::runtime_error("fanout: cannot create NATS options");
    const auto check = [&](natsStatus s, const char* what) {
        if (s == NATS_OK) return;
        natsOptions_Destroy(o);
        throw std::runtime_error(std::string("fanout: ") + what + ": " + natsStatus_GetText(s));
    };
    std::vector<const char*> urls;
    for (const std::string& s : servers) urls.push_back(s.c_str());
    check(natsOptions_SetServers(o, urls.data(), static_cast<int>(urls.size())), "servers");
    check(natsOptions_SetNoRandomize(o, true), "server order");
    check(natsOptions_SetMaxReconnect(o, -1), "reconnect");
    check(natsOptions_SetReconnectWait(o, auth.reconnect_wait_ms), "reconnect wait");
    check(natsOptions_SetPingInterval(o, 2000), "ping interval");
    check(natsOptions_SetMaxPingsOut(o, 3), "pings out");
    check(natsOptions_SetTimeout(o, 2000), "connect timeout");
    if (!auth.credentials_file.empty())
        check(natsOptions_SetUserCredentialsFromFiles(o, auth.credentials_file.c_str(), nullptr), "credentials_file");
    if (!auth.user.empty()) {
        std::ifstream in(auth.password_file);
        std::string password;
        if (!std::getline(in, password) || password.empty()) {
            natsOptions_Destroy(o);
            throw std::runtime_error("fanout: password_file " + auth.password_file + ": no password on its first line");
        }
        check(natsOptions_SetUserInfo(o, auth.user.c_str(), password.c_str()), "user");
    }
    return o;
}

}  // namespace tickgate::fanout
