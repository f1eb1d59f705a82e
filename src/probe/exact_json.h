// JSON parsing that keeps every floating-point number's text, so that the probe can compare what
// two responses said character for character as well as bit for bit.
//
// parse_exact returns an ordered_json (object keys in the order the server wrote them) in which
// every floating-point number is a string made of kExactTag followed by the number's JSON text;
// integers, strings and the rest are as usual. exact_number reads a value back from either form.
//
// The text is a server's answer, so each parse is bounded (ParseLimits): in nesting (refused
// before anything is built), in the memory of the document it builds and, when given, in time.
// A key given twice in one object keeps its first place and its last value (as nlohmann's own
// parser does), merged when the object closes: no lookup per key, so a wide object costs
// O(n log n), not nlohmann's O(n^2).
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tzero::probe {

using ojson = nlohmann::ordered_json;

inline constexpr const char* kExactTag = "\x1f#num:";

// The most memory one parse's document may take, estimated as it is built (16 bytes a node, a
// heap object for each string, float and container, a key beside each object member): 256 MiB.
// Text takes 9 (`[0,0,...`) to 22 (`["","",...`) times its size as a document, so without it a
// 64 MiB body could build 1.3 GB; with it, the client holds at most the body and this. Answers
// with logprobs take about 18 KB a token with 20 alternatives (their "bytes" arrays included)
// and 5 KB with 5, so the limit is reached at about 14,000 and 50,000 tokens.
inline constexpr size_t kMaxDocumentBytes = size_t(256) << 20;

struct ParseLimits {
  size_t max_document_bytes = kMaxDocumentBytes;
  // When set, a parse still running at this time stops (a ProbeError saying so).
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// Throws ProbeError (naming `what`) when the text is not one JSON value, or is nested deeper
// than kMaxJsonDepth (base/bounded_json.h), would take more than limits.max_document_bytes or
// is still being parsed at limits.deadline. The last three set ProbeError::limit.
ojson parse_exact(const std::string& text, const std::string& what, const ParseLimits& limits = {});

// A number as the server wrote it: its value (the double nearest the text) and its JSON text.
struct ExactNumber {
  double value = 0;
  std::string text;
};

// The number a value holds (a tagged float, or a plain JSON number), or nullopt for anything else.
std::optional<ExactNumber> exact_number(const ojson& j);

}  // namespace tzero::probe
