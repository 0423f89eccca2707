// fuzz_glimpse: arbitrary bytes as what a GLIMPSE 5.0 server sends over
// SoupBinTCP: the framing reader (soupbintcp::read_frame), the Login
// Request/Accepted fields, `M`'s sequence number and the spin storage
// (itch50::SnapshotStorage, 16 orders so a full store is reachable).
//
// Input: byte 0 picks where the stream is cut into reads (split and merged
// TCP reads); the rest is the stream. Checks: reading the stream in those
// pieces (the client's way: a 256-byte buffer, whole packets taken from the
// front, the rest kept) gives the same packets as reading it whole; no
// frame reaches past the bytes it was read from or the buffer; a storage
// never holds more than its capacity; an `M` accepted reads back its own
// position once written as 20 digits.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_common.hpp"
#include "tickgate/feed/itch50/glimpse.hpp"
#include "tickgate/feed/itch50/snapshot.hpp"
#include "tickgate/feed/soupbintcp/wire.hpp"

namespace {

using namespace tickgate;
constexpr std::size_t kMaxPacket = 256;

struct Seen {
    char type;
    std::size_t size;
    std::uint32_t hash;
};

std::uint32_t hash(std::span<const std::byte> b) {
    std::uint32_t h = 2166136261u;
    for (const std::byte x : b) h = (h ^ static_cast<std::uint8_t>(x)) * 16777619u;
    return h;
}

// Takes whole packets from the front of `s`; false once the stream is unusable.
bool take(std::span<const std::byte> s, std::size_t& used, std::vector<Seen>& out, itch50::SnapshotStorage& storage) {
    for (;;) {
        const soupbintcp::Frame f = soupbintcp::read_frame(s.subspan(used), kMaxPacket);
        if (f.status == soupbintcp::FrameStatus::kNeedMore) return true;
        if (f.status != soupbintcp::FrameStatus::kPacket) return false;
        FUZZ_CHECK(f.size <= kMaxPacket && used + f.size <= s.size());
        FUZZ_CHECK(f.payload.data() >= s.data() && f.payload.data() + f.payload.size() <= s.data() + s.size());
        out.push_back({f.type, f.size, hash(f.payload)});
        used += f.size;
        if (f.type == soupbintcp::type::kLoginAccepted && f.payload.size() >= soupbintcp::kLoginAcceptedPayload) {
            std::uint64_t seq = 0;
            (void)soupbintcp::trimmed(f.payload.subspan(0, soupbintcp::kSessionSize));
            (void)soupbintcp::parse_numeric(f.payload.subspan(soupbintcp::kSessionSize, soupbintcp::kSequenceSize), seq);
        }
        if (f.type == soupbintcp::type::kLoginRequest) {
            soupbintcp::LoginRequest r;
            if (soupbintcp::parse_login_request(f.payload, r))
                FUZZ_CHECK(r.username.size() <= soupbintcp::kUsernameSize && r.password.size() <= soupbintcp::kPasswordSize);
        }
        if (f.type == soupbintcp::type::kSequencedData) {
            const auto t = storage.take(f.payload);
            FUZZ_CHECK(storage.orders().size() <= 16);
            FUZZ_CHECK(storage.states().size() <= itch50::SnapshotStorage::kMaxStates);
            if (t == itch50::SnapshotStorage::Take::kEnd) {
                FUZZ_CHECK(storage.position() != 0);
                std::byte m[itch50::kSnapshotSize];
                m[0] = std::byte{'M'};
                soupbintcp::detail::numeric(m + 1, storage.position(), soupbintcp::kSequenceSize);
                const itch50::SnapshotEnd e = itch50::parse_snapshot_end(m);
                FUZZ_CHECK(e.result == itch50::SnapshotParse::kOk && e.position == storage.position());
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t step = 1 + data[0] % 97;  // the size of each read
    const std::span<const std::byte> stream(reinterpret_cast<const std::byte*>(data + 1), size - 1);

    // Whole: every packet from one buffer.
    static itch50::SnapshotStorage whole_storage(16), split_storage(16);
    whole_storage.reset();
    split_storage.reset();
    std::vector<Seen> whole, split;
    std::size_t used = 0;
    const bool whole_ok = take(stream, used, whole, whole_storage);

    // Split: reads of `step` bytes into a kMaxPacket * 2 buffer, the client's way.
    std::vector<std::byte> buf(kMaxPacket * 2);
    std::size_t have = 0, fed = 0;
    bool split_ok = true;
    while (fed < stream.size() && split_ok) {
        const std::size_t n = std::min({step, stream.size() - fed, buf.size() - have});
        std::memcpy(buf.data() + have, stream.data() + fed, n);
        have += n;
        fed += n;
        std::size_t at = 0;
        split_ok = take({buf.data(), have}, at, split, split_storage);
        std::memmove(buf.data(), buf.data() + at, have - at);
        have -= at;
        FUZZ_CHECK(have < buf.size() || !split_ok);
    }
    // The same packets, in order, up to where either found the stream unusable.
    const std::size_t n = std::min(whole.size(), split.size());
    for (std::size_t i = 0; i < n; ++i)
        FUZZ_CHECK(whole[i].type == split[i].type && whole[i].size == split[i].size && whole[i].hash == split[i].hash);
    if (whole_ok && split_ok) FUZZ_CHECK(whole.size() == split.size());
    FUZZ_CHECK(whole_storage.orders().size() == split_storage.orders().size() || !whole_ok || !split_ok);
    return 0;
}
