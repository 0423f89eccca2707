// probe_capture (protocols.hpp): the first datagrams of a capture offered to every known protocol.
#include "tickgate/feed/capture.hpp"
#include "tickgate/feed/protocols.hpp"

namespace tickgate {

ProtocolProbe probe_capture(const std::string& path, std::uint64_t max_datagrams) {
    CaptureReader reader(path);
    FrameCounters frames;
    ProtocolProbe probe;
    while (probe.datagrams() < max_datagrams) {
        const auto rec = reader.next();
        if (!rec) break;
        if (const auto d = extract_udp(reader.link_type(), rec->frame, frames)) probe.offer(d->payload);
    }
    return probe;
}

}  // namespace tickgate
