// The one JSON writer of the project (private: not installed, used by the
// libraries' sources, the CLI and the benchmarks). Every JSON document
// tickgate prints or writes -- the replay/run summary, `run --json`'s "live"
// object, the simulator's ground truth, the benchmarks' results -- is built
// as a json::Value (nlohmann::ordered_json: members stay in the order they
// were added) and turned into text by json::dump(), so there is one escaping
// rule and one number format:
//
//  - Strings are bytes, not text: a symbol learned off the wire, a file
//    name or a command line may hold any byte. Each byte is written as the
//    code point of its value (ISO-8859-1), so every byte string is valid
//    JSON, nothing is lost or replaced, and a reader gets the bytes back as
//    code points U+0000..U+00FF. The output is plain ASCII: `"` and `\`
//    escaped, control bytes, DEL and every byte >= 0x80 as \u00HH (the
//    short forms \n, \t, ... where JSON has them).
//  - Numbers as nlohmann writes them: integers exactly, doubles in the
//    shortest form that reads back to the same value.
//  - Layout: the document's members one per line; an array of objects (a
//    list of records, e.g. "instruments") one element per line, and so
//    every container holding one; everything else on one line, `, ` and
//    `: ` separated. The document ends with a newline.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tickgate/feed/counter_fields.hpp"

namespace tickgate::json {

using Value = nlohmann::ordered_json;

// `v` as a document (see above).
[[nodiscard]] std::string dump(const Value& v);

// Book levels (anything with .price and .qty) as [[price, qty], ...].
template <class Levels>
[[nodiscard]] Value levels(const Levels& ls) {
    Value out = Value::array();
    for (const auto& l : ls) out.push_back(Value::array({l.price, l.qty}));
    return out;
}

// Every counter of `table` that has a JSON key, as `"key": value` in `obj`.
template <class S, class M, std::size_t N>
void put_counters(Value& obj, const S& s, const CounterField<S, M> (&table)[N]) {
    for (const auto& f : table)
        if (!f.key.empty()) obj[std::string(f.key)] = f.get(s);
}

}  // namespace tickgate::json
