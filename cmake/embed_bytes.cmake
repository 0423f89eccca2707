# cmake -DINPUT=file -DOUTPUT=file.cpp -DSYMBOL=name -P embed_bytes.cmake
# Writes a C++ source defining `std::span<const std::byte> SYMBOL()` over
# the bytes of INPUT (the XDP program's object, built at build time).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/embed_bytes.cmake: do not edit.
#include <cstddef>
#include <span>
namespace tickgate {
namespace {
alignas(8) const unsigned char kBytes[] = {
${bytes}
};
}  // namespace
std::span<const std::byte> ${SYMBOL}() noexcept { return std::as_bytes(std::span(kBytes)); }
}  // namespace tickgate
")
