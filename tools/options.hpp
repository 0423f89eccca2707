// The command line of every tickgate command, parsed one way: `--name VALUE`
// options, flags, positionals. One rule for values: a value that is not
// exactly what the option takes ("1.9" for an integer, "0x10" or "10abc"
// for a number, "", an overflow) is a usage error (exit 2) naming the option
// and what it expects — never silently truncated or read as something else.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tickgate::cli {

// Bad usage: main prints "tickgate: MESSAGE" and exits 2.
struct UsageError {
    std::string message;
};

// Strict readers of one value, for options whose value has parts (P:LEN).
// Integer: decimal digits with an optional '-', nothing else.
std::int64_t parse_integer(std::string_view option, std::string_view text, std::int64_t lo, std::int64_t hi);
// Number: decimal digits, optionally '-' before and '.DIGITS' after; no
// exponent, no hex, no inf/nan.
double parse_decimal(std::string_view option, std::string_view text, double lo, double hi);

// "A,B,C" as symbols: each 1..16 bytes (a symbol's size), none empty; else a UsageError naming `option`.
std::vector<std::string> parse_symbols(std::string_view option, std::string_view list);

// "A:B" or "A:B:C" split at the colons into exactly `n` parts, else a usage
// error naming `option` and `what` the parts are (e.g. "P:LEN").
std::vector<std::string_view> parse_parts(std::string_view option, std::string_view value, std::size_t n,
                                          std::string_view what);

class Options {
public:
    // `flags` take no value, `valued` take one (given again, a valued option
    // keeps every value: see all()); -h/--help is always a flag. Anything
    // else starting with '-' is a usage error naming `command`'s --help.
    Options(std::span<const std::string_view> args, std::initializer_list<std::string_view> flags,
            std::initializer_list<std::string_view> valued, std::string_view command);
    // The same with option lists made at run time (`config`: its own and
    // those of the subcommands protocols register).
    Options(std::span<const std::string_view> args, std::span<const std::string_view> flags,
            std::span<const std::string_view> valued, std::string_view command);

    [[nodiscard]] bool help() const noexcept { return help_; }
    [[nodiscard]] bool has(std::string_view name) const { return values_.find(name) != values_.end(); }
    [[nodiscard]] const std::vector<std::string>& positional() const noexcept { return positional_; }
    // The last value given, if any.
    [[nodiscard]] std::optional<std::string> text(std::string_view name) const;
    // Every value given, in order.
    [[nodiscard]] std::vector<std::string> all(std::string_view name) const;

    [[nodiscard]] std::int64_t integer(std::string_view name, std::int64_t fallback, std::int64_t lo,
                                       std::int64_t hi) const;
    [[nodiscard]] double decimal(std::string_view name, double fallback, double lo, double hi) const;
    // A strict dotted-quad IPv4 address in 127.0.0.0/8: traffic stays on the host.
    [[nodiscard]] std::string loopback_address(std::string_view name, std::string_view fallback) const;

private:
    std::map<std::string, std::vector<std::string>, std::less<>> values_;
    std::vector<std::string> positional_;
    bool help_ = false;
};

}  // namespace tickgate::cli
