// JSON parsing that keeps every floating-point number's text, so that the probe can compare what
// two responses said character for character as well as bit for bit.
//
// parse_exact returns an ordered_json (object keys in the order the server wrote them) in which
// every floating-point number is a string made of kExactTag followed by the number's JSON text;
// integers, strings and the rest are as usual. exact_number reads a value back from either form.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tzero::probe {

using ojson = nlohmann::ordered_json;

inline constexpr const char* kExactTag = "\x1f#num:";

// Throws ProbeError (naming `what`) when the text is not one JSON value.
ojson parse_exact(const std::string& text, const std::string& what);

// A number as the server wrote it: its value (the double nearest the text) and its JSON text.
struct ExactNumber {
  double value = 0;
  std::string text;
};

// The number a value holds (a tagged float, or a plain JSON number), or nullopt for anything else.
std::optional<ExactNumber> exact_number(const ojson& j);

}  // namespace tzero::probe
