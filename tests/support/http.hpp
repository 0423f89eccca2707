// A minimal HTTP/1.1 client for tests: one request over a real TCP
// connection to 127.0.0.1 (Connection: close, read to EOF), so a test sees
// exactly what a scraper would.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace tickgate::test {

struct HttpResponse {
    int status = 0;  // 0: no connection or no valid HTTP/1.1 response
    std::string headers;
    std::string body;
};

// A TCP connection to 127.0.0.1:port whose receives give up after 5 s; the
// descriptor, or -1.
inline int connect_loopback(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// `method path` to 127.0.0.1:port; waits up to 5 s for the answer.
inline HttpResponse http_get(std::uint16_t port, const std::string& path, const std::string& method = "GET") {
    HttpResponse r;
    const int fd = connect_loopback(port);
    if (fd < 0) return r;
    const std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
        ::close(fd);
        return r;
    }
    std::string raw;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        raw.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    const auto end = raw.find("\r\n\r\n");
    if (end == std::string::npos || raw.compare(0, 9, "HTTP/1.1 ") != 0) return r;
    r.status = std::atoi(raw.c_str() + 9);
    r.headers = raw.substr(0, end);
    r.body = raw.substr(end + 4);
    return r;
}

// True if `text` has `line` as one whole line.
inline bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace tickgate::test
