#include "options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "tickgate/feed/capture.hpp"  // parse_ipv4
#include "tickgate/text.hpp"

namespace tickgate::cli {

namespace {

// The value as the user typed it, kept on one line of plain text.
std::string shown(std::string_view text) {
    std::string out = "'";
    append_printable(out, text);
    return out += '\'';
}

bool digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::int64_t parse_integer(std::string_view option, std::string_view text, std::int64_t lo, std::int64_t hi) {
    const std::string_view body = text.substr(!text.empty() && text.front() == '-' ? 1 : 0);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (!digits(body) || ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi)
        throw UsageError{fmt::format("{}: expected an integer in {}..{}, got {}", option, lo, hi, shown(text))};
    return v;
}

double parse_decimal(std::string_view option, std::string_view text, double lo, double hi) {
    std::string_view body = text.substr(!text.empty() && text.front() == '-' ? 1 : 0);
    const auto dot = body.find('.');
    const bool well_formed = digits(body.substr(0, dot)) && (dot == std::string_view::npos || digits(body.substr(dot + 1)));
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::fixed);
    if (!well_formed || ec != std::errc{} || end != text.data() + text.size() || !(v >= lo && v <= hi))
        throw UsageError{fmt::format("{}: expected a decimal number in {}..{}, got {}", option, lo, hi, shown(text))};
    return v;
}

std::vector<std::string_view> parse_parts(std::string_view option, std::string_view value, std::size_t n,
                                          std::string_view what) {
    std::vector<std::string_view> out;
    for (std::size_t from = 0;;) {
        const auto colon = value.find(':', from);
        out.push_back(value.substr(from, colon == std::string_view::npos ? colon : colon - from));
        if (colon == std::string_view::npos) break;
        from = colon + 1;
    }
    if (out.size() != n) throw UsageError{fmt::format("{}: expected {}, got '{}'", option, what, value)};
    return out;
}

std::vector<std::string> parse_symbols(std::string_view option, std::string_view list) {
    std::vector<std::string> out;
    for (std::size_t from = 0;;) {
        const auto comma = list.find(',', from);
        const std::string_view symbol = list.substr(from, comma == std::string_view::npos ? comma : comma - from);
        if (symbol.empty() || symbol.size() > 16)
            throw UsageError{fmt::format("{}: expected symbols of 1 to 16 characters separated by commas, got {}",
                                         option, shown(list))};
        out.emplace_back(symbol);
        if (comma == std::string_view::npos) return out;
        from = comma + 1;
    }
}

Options::Options(std::span<const std::string_view> args, std::initializer_list<std::string_view> flags,
                 std::initializer_list<std::string_view> valued, std::string_view command)
    : Options(args, std::span(flags.begin(), flags.size()), std::span(valued.begin(), valued.size()), command) {}

Options::Options(std::span<const std::string_view> args, std::span<const std::string_view> flags,
                 std::span<const std::string_view> valued, std::string_view command) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view s = args[i];
        if (s == "-h" || s == "--help") {
            help_ = true;
        } else if (std::find(flags.begin(), flags.end(), s) != flags.end()) {
            values_[std::string(s)].clear();
        } else if (std::find(valued.begin(), valued.end(), s) != valued.end()) {
            if (i + 1 >= args.size()) throw UsageError{fmt::format("{}: missing value", s)};
            values_[std::string(s)].emplace_back(args[++i]);
        } else if (s.size() > 1 && s[0] == '-') {
            throw UsageError{fmt::format("unknown option {} (see tickgate {} --help)", shown(s), command)};
        } else {
            positional_.emplace_back(s);
        }
    }
}

std::optional<std::string> Options::text(std::string_view name) const {
    const auto it = values_.find(name);
    if (it == values_.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Options::all(std::string_view name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::int64_t Options::integer(std::string_view name, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const {
    const auto v = text(name);
    return v ? parse_integer(name, *v, lo, hi) : fallback;
}

double Options::decimal(std::string_view name, double fallback, double lo, double hi) const {
    const auto v = text(name);
    return v ? parse_decimal(name, *v, lo, hi) : fallback;
}

std::string Options::loopback_address(std::string_view name, std::string_view fallback) const {
    const auto v = text(name);
    if (!v) return std::string(fallback);
    const auto ip = parse_ipv4(*v);
    if (!ip || (*ip >> 24) != 127)
        throw UsageError{fmt::format("{}: expected an IPv4 loopback address (127.x.x.x), got {}", name, shown(*v))};
    return *v;
}

}  // namespace tickgate::cli
