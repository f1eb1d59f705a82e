// Pieces of the JSON Schema converter (json_schema.cpp) shared with its string and number
// parts (json_schema_regex.cpp): GBNF spelling of literals and character sets, the JSON
// encoding of characters, `pattern` regexes and exact integer ranges. Not a public API.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tzero::schema_detail {

// A set of code points: sorted, disjoint, inclusive ranges.
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

Ranges normalize(Ranges r);                                   // sorted and merged
Ranges complement(const Ranges& r, uint32_t max = 0x10FFFF);  // surrogates left out
Ranges intersect(const Ranges& a, const Ranges& b);

// A GBNF literal ("...") matching exactly these UTF-8 bytes, in ASCII (\xHH, \uHHHH escapes).
std::string gbnf_literal(std::string_view utf8);
// A GBNF class [...] of the set (non-empty).
std::string gbnf_class(const Ranges& set);

// A GBNF expression for the JSON string encoding of one character of the set, one spelling per
// character: raw UTF-8 where JSON allows it, the short escape (\" \\ \b \f \n \r \t) or
// \u00XX for the characters JSON must escape (and DEL). "" when the set is empty.
std::string encoded_chars(const Ranges& set);

// The string content (between the quotes) matching `pattern` (an ECMA-262 regex subset, see
// docs/GRAMMAR.md), with a length in code points in [min_len, max_len] (max_len < 0: none).
// add_rule(body) returns the name of a rule with that body (deduplicated). Throws SchemaError
// at `where` (the pattern's path) for what it cannot translate exactly.
using AddRule = std::function<std::string(const std::string& body)>;
std::string pattern_gbnf(const std::string& pattern, const std::string& where, int min_len,
                         int max_len, const AddRule& add_rule);

// The integers in [lo, hi] (either side open when absent), as a GBNF expression of their
// decimal spelling (no leading zeros, no "-0"), with at most max(max_digits, the bounds' own
// digits) digits. Throws SchemaError at `where` when the range is empty.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi, int max_digits,
                               const std::string& where);

}  // namespace tzero::schema_detail
