// Text that came from outside (a symbol learned off the wire, a file name)
// made safe to print on a terminal or in a log. Everything that shows such
// text there goes through printable(), so a hostile `I` definition cannot
// clear an operator's screen. (JSON has its own single rule, in the one JSON
// writer: feed/json_writer.hpp.) Standard library only (usable by
// tickgate_core).
#pragma once

#include <string>
#include <string_view>

namespace tickgate {

// For terminals and logs: printable ASCII (0x20..0x7e) is kept, a backslash
// is doubled, every other byte becomes the four characters `\xHH`. ESC, the
// 8-bit CSI 0x9b, BEL, DEL and every other control byte thus reach the
// screen as text and cannot move the cursor, clear the view or retitle the
// terminal; the result is one line of plain ASCII. Doubling the backslash
// keeps a symbol that literally reads `\x1b` distinguishable from one that
// holds an ESC byte.
inline void append_printable(std::string& out, std::string_view s) {
    constexpr char kHex[] = "0123456789abcdef";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\\') {
            out += "\\\\";
        } else if (c >= 0x20 && c <= 0x7e) {
            out += ch;
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0x0f];
        }
    }
}

[[nodiscard]] inline std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_printable(out, s);
    return out;
}

}  // namespace tickgate
