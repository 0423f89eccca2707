// Text that came from outside (a symbol learned off the wire, a file name)
// made safe to print: one sanitizer for terminals and logs, one escaper for
// JSON. Everything that shows such text goes through these two, so a
// hostile `I` definition cannot clear an operator's screen or break a
// consumer's JSON parser. Standard library only (usable by tickgate_core).
#pragma once

#include <string>
#include <string_view>

namespace tickgate {

namespace text_detail {
// Printable ASCII is kept, a byte of `specials` gets a backslash before it,
// every other byte becomes `prefix` and two hex digits.
inline void append_escaped(std::string& out, std::string_view s, std::string_view specials,
                           std::string_view prefix) {
    constexpr char kHex[] = "0123456789abcdef";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (specials.find(ch) != std::string_view::npos) {
            out += '\\';
            out += ch;
        } else if (c >= 0x20 && c <= 0x7e) {
            out += ch;
        } else {
            out += prefix;
            out += kHex[c >> 4];
            out += kHex[c & 0x0f];
        }
    }
}
}  // namespace text_detail

// For terminals and logs: printable ASCII (0x20..0x7e) is kept, a backslash
// is doubled, every other byte becomes the four characters `\xHH`. ESC, the
// 8-bit CSI 0x9b, BEL, DEL and every other control byte thus reach the
// screen as text and cannot move the cursor, clear the view or retitle the
// terminal; the result is one line of plain ASCII. Doubling the backslash
// keeps a symbol that literally reads `\x1b` distinguishable from one that
// holds an ESC byte.
inline void append_printable(std::string& out, std::string_view s) {
    text_detail::append_escaped(out, s, "\\", "\\x");
}

[[nodiscard]] inline std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_printable(out, s);
    return out;
}

// For the body of a JSON string (without the quotes): `"` and `\` escaped,
// every control byte (< 0x20), DEL and every byte >= 0x80 as `\u00HH`. A
// symbol is 16 bytes, not UTF-8 text, so each byte maps to the code point of
// the same value: the output is plain ASCII and always valid JSON, and a
// reader gets the original bytes back as code points U+0000..U+00FF.
inline void append_json_escaped(std::string& out, std::string_view s) {
    text_detail::append_escaped(out, s, "\"\\", "\\u00");
}

[[nodiscard]] inline std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_json_escaped(out, s);
    return out;
}

}  // namespace tickgate
