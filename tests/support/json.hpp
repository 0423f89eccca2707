// A small, strict JSON reader for tests (RFC 8259): objects, arrays, strings
// with escapes, exact 64-bit integers, doubles, booleans, null. Throws
// JsonError on malformed input and on a wrong-kind or missing access.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tickgate::test {

class JsonError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Json {
public:
    using Array = std::vector<Json>;
    using Object = std::vector<std::pair<std::string, Json>>;  // in document order
    using Value = std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, double, std::string, Array, Object>;

    static Json parse(std::string_view text) {
        Parser p{text};
        Json v = p.value(0);
        p.ws();
        if (p.pos != text.size()) p.fail("trailing characters");
        return v;
    }

    [[nodiscard]] bool is_null() const noexcept { return std::holds_alternative<std::nullptr_t>(v_); }
    [[nodiscard]] bool has(std::string_view key) const { return find(key) != nullptr; }
    [[nodiscard]] std::size_t size() const {
        if (const auto* a = std::get_if<Array>(&v_)) return a->size();
        return get<Object>("array or object").size();
    }
    const Json& operator[](std::string_view key) const {
        if (const Json* v = find(key)) return *v;
        throw JsonError("json: no key \"" + std::string(key) + "\" in " + dump());
    }
    const Json& operator[](std::size_t i) const {
        const Array& a = get<Array>("array");
        if (i >= a.size()) throw JsonError("json: index " + std::to_string(i) + " past " + dump());
        return a[i];
    }
    [[nodiscard]] const Object& items() const { return get<Object>("object"); }
    [[nodiscard]] std::int64_t as_int() const { return get<std::int64_t>("int64"); }
    [[nodiscard]] std::uint64_t as_uint() const {
        if (const auto* i = std::get_if<std::int64_t>(&v_); i && *i >= 0) return static_cast<std::uint64_t>(*i);
        return get<std::uint64_t>("uint64");
    }
    [[nodiscard]] double as_double() const {
        if (const auto* i = std::get_if<std::int64_t>(&v_)) return static_cast<double>(*i);
        if (const auto* u = std::get_if<std::uint64_t>(&v_)) return static_cast<double>(*u);
        return get<double>("number");
    }
    [[nodiscard]] bool as_bool() const { return get<bool>("bool"); }
    [[nodiscard]] const std::string& as_string() const { return get<std::string>("string"); }

    friend bool operator==(const Json& a, const Json& b) { return a.v_ == b.v_; }

    // Compact text (strings unescaped), for failure messages.
    [[nodiscard]] std::string dump() const {
        if (is_null()) return "null";
        if (const auto* b = std::get_if<bool>(&v_)) return *b ? "true" : "false";
        if (const auto* i = std::get_if<std::int64_t>(&v_)) return std::to_string(*i);
        if (const auto* u = std::get_if<std::uint64_t>(&v_)) return std::to_string(*u);
        if (const auto* d = std::get_if<double>(&v_)) return std::to_string(*d);
        if (const auto* s = std::get_if<std::string>(&v_)) return '"' + *s + '"';
        std::string o;
        if (const auto* a = std::get_if<Array>(&v_)) {
            for (const Json& e : *a) o += (o.empty() ? "" : ",") + e.dump();
            return '[' + o + ']';
        }
        for (const auto& [k, e] : std::get<Object>(v_)) o += (o.empty() ? "\"" : ",\"") + k + "\":" + e.dump();
        return '{' + o + '}';
    }

private:
    template <class T>
    const T& get(const char* what) const {
        if (const T* p = std::get_if<T>(&v_)) return *p;
        throw JsonError(std::string("json: expected ") + what + ", got " + dump());
    }
    const Json* find(std::string_view key) const {
        for (const auto& [k, e] : get<Object>("object"))
            if (k == key) return &e;
        return nullptr;
    }

    struct Parser {
        std::string_view t;
        std::size_t pos = 0;

        [[noreturn]] void fail(const std::string& what) const {
            throw JsonError("json: " + what + " at offset " + std::to_string(pos));
        }
        void ws() {
            while (pos < t.size() && (t[pos] == ' ' || t[pos] == '\t' || t[pos] == '\n' || t[pos] == '\r')) ++pos;
        }
        char peek() const { return pos < t.size() ? t[pos] : '\0'; }
        bool take(char c) { return peek() == c ? (++pos, true) : false; }
        void eat(char c) { if (!take(c)) fail(std::string("expected '") + c + "'"); }
        void word(std::string_view w) {
            if (t.substr(pos, w.size()) != w) fail("bad literal");
            pos += w.size();
        }
        Json value(int depth) {
            if (depth > 64) fail("nesting too deep");
            ws();
            Json j;
            if (take('{')) {
                Object o;
                if (ws(); !take('}')) {
                    do {
                        ws();
                        std::string key = string();
                        for (const auto& kv : o)
                            if (kv.first == key) fail("duplicate key \"" + key + "\"");
                        ws();
                        eat(':');
                        o.emplace_back(std::move(key), value(depth + 1));
                        ws();
                    } while (take(','));
                    eat('}');
                }
                j.v_ = std::move(o);
            } else if (take('[')) {
                Array a;
                if (ws(); !take(']')) {
                    do {
                        a.push_back(value(depth + 1));
                        ws();
                    } while (take(','));
                    eat(']');
                }
                j.v_ = std::move(a);
            } else if (peek() == '"') { j.v_ = string();
            } else if (peek() == 't') { word("true"), j.v_ = true;
            } else if (peek() == 'f') { word("false"), j.v_ = false;
            } else if (peek() == 'n') { word("null");
            } else if (peek() == '-' || (peek() >= '0' && peek() <= '9')) { j.v_ = number();
            } else { fail("unexpected character"); }
            return j;
        }
        void digits() {
            const std::size_t s = pos;
            while (peek() >= '0' && peek() <= '9') ++pos;
            if (pos == s) fail("expected a digit");
        }
        Value number() {
            const std::size_t start = pos;
            const bool neg = take('-');
            if (!take('0')) digits();
            const bool frac = take('.');
            if (frac) digits();
            const bool expo = take('e') || take('E');
            if (expo && !take('+')) take('-');
            if (expo) digits();
            const char *b = t.data() + start, *e = t.data() + pos;
            std::from_chars_result r{};
            Value out;
            if (frac || expo) { double d = 0; r = std::from_chars(b, e, d); out = d;
            } else if (neg) { std::int64_t i = 0; r = std::from_chars(b, e, i); out = i;
            } else {
                std::uint64_t u = 0;
                r = std::from_chars(b, e, u);
                if (u <= std::uint64_t{std::numeric_limits<std::int64_t>::max()}) out = static_cast<std::int64_t>(u);
                else out = u;
            }
            if (r.ec != std::errc{} || r.ptr != e) fail("number out of range");
            return out;
        }
        unsigned hex4() {
            unsigned cp = 0;
            const char* b = t.data() + pos;
            if (t.size() - pos < 4 || std::from_chars(b, b + 4, cp, 16).ptr != b + 4) fail("bad \\u escape");
            pos += 4;
            return cp;
        }
        std::string string() {
            eat('"');
            std::string o;
            for (;;) {
                if (pos >= t.size()) fail("unterminated string");
                const char c = t[pos++];
                if (c == '"') return o;
                if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
                if (c != '\\') { o += c; continue; }
                const char e = peek();
                const std::size_t simple = std::string_view("\"\\/bfnrt").find(e);
                ++pos;
                if (simple != std::string_view::npos) { o += "\"\\/\b\f\n\r\t"[simple]; continue; }
                if (e != 'u') --pos, fail("bad escape");
                unsigned cp = hex4();
                if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    word("\\u");
                    const unsigned lo = hex4();
                    if (lo < 0xDC00 || lo > 0xDFFF) fail("bad surrogate pair");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                const int extra = cp < 0x80 ? 0 : cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3;
                o += static_cast<char>(extra == 0 ? cp : ((0xFF00u >> (extra + 1)) & 0xFFu) | (cp >> (6 * extra)));
                for (int k = extra - 1; k >= 0; --k) o += static_cast<char>(0x80u | ((cp >> (6 * k)) & 0x3Fu));
            }
        }
    };

    Value v_;
};

}  // namespace tickgate::test
