// JSON from outside the process (request bodies, tool-call arguments, structured-output
// schemas, answers of the servers probe/lock/verify talk to, lock and trace files, tokenizer
// files) is parsed with a bound on its nesting. nlohmann's parser is iterative, but copying,
// dumping and walking a document recurse once per level, so an unbounded document (100,000
// nested `[`) would overflow the stack of whoever touches it next. kMaxJsonDepth is the one
// limit everywhere (docs/SERVER.md, "Limits and threat model").
//
// parse_json_bounded() scans the text once (iteratively, strings and escapes skipped) and
// refuses a document nested deeper than the limit before nlohmann builds anything, with a
// nlohmann parse_error (id 101, "parse error at byte N: ...") so that every caller's existing
// handling of malformed JSON covers it. The scan stops at the first level past the limit: a
// hostile 60 MB run of `[` costs microseconds and no memory.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace tzero {

// Arrays and objects inside each other: `[[1]]` is 2 deep, a scalar 0.
inline constexpr int kMaxJsonDepth = 256;

// The byte offset of the bracket that first nests deeper than max_depth, or npos when the
// text stays within it (malformed text is left to the parser).
size_t json_depth_exceeded_at(std::string_view text, int max_depth = kMaxJsonDepth);

// Throws nlohmann's parse_error for text nested deeper than max_depth.
void check_json_depth(std::string_view text, int max_depth = kMaxJsonDepth);

// nlohmann::json::parse (or ordered_json, Json) after check_json_depth: throws parse_error on
// malformed or too deeply nested text.
template <typename Json = nlohmann::json>
Json parse_json_bounded(std::string_view text, int max_depth = kMaxJsonDepth) {
  check_json_depth(text, max_depth);
  return Json::parse(text.begin(), text.end());
}

// The same without exceptions: a discarded value (is_discarded()) when the text is malformed
// or too deep (nlohmann's parse(text, nullptr, false)).
template <typename Json = nlohmann::json>
Json parse_json_bounded_or_discarded(std::string_view text, int max_depth = kMaxJsonDepth) {
  if (json_depth_exceeded_at(text, max_depth) != std::string_view::npos)
    return Json(Json::value_t::discarded);
  return Json::parse(text.begin(), text.end(), nullptr, false);
}

}  // namespace tzero
