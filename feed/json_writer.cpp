#include "json_writer.hpp"

#include <string_view>

namespace tickgate::json {

namespace {

// Bytes -> the UTF-8 of the code points of the same values (ISO-8859-1), so
// that nlohmann, which reads strings as UTF-8, takes any byte string.
std::string code_points(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (const char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x80) {
            out += ch;
        } else {
            out += static_cast<char>(0xC0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3F));
        }
    }
    return out;
}

void write_string(std::string& out, std::string_view bytes) {
    // ensure_ascii: every code point beyond 0x7E (DEL included) as \u00HH;
    // the input is valid UTF-8 by construction, so strict never throws.
    out += Value(code_points(bytes)).dump(-1, ' ', true, nlohmann::json::error_handler_t::strict);
}

// A list of records (an array holding an object), or a container holding one.
bool expands(const Value& v) {
    if (v.is_array())
        for (const Value& e : v)
            if (e.is_object() || expands(e)) return true;
    if (v.is_object())
        for (const auto& [k, e] : v.items())
            if (expands(e)) return true;
    return false;
}

void write(std::string& out, const Value& v, std::size_t indent, bool top) {
    if (v.is_string()) return write_string(out, v.get_ref<const std::string&>());
    if (!v.is_structured()) {
        out += v.dump();
        return;
    }
    const bool object = v.is_object();
    out += object ? '{' : '[';
    if (v.empty()) {
        out += object ? '}' : ']';
        return;
    }
    const bool wide = top || expands(v);
    const std::string pad(indent + 2, ' ');
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += wide ? "," : ", ";
        first = false;
        if (wide) {
            out += '\n';
            out += pad;
        }
        if (object) {
            write_string(out, it.key());
            out += ": ";
        }
        write(out, *it, indent + 2, false);
    }
    if (wide) {
        out += '\n';
        out.append(indent, ' ');
    }
    out += object ? '}' : ']';
}

}  // namespace

std::string dump(const Value& v) {
    std::string out;
    write(out, v, 0, true);
    out += '\n';
    return out;
}

}  // namespace tickgate::json
