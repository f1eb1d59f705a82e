#include "base/bounded_json.h"

#include <string>

namespace tzero {

size_t json_depth_exceeded_at(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character (a quote or a backslash) is not the string's end
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced text is the parser's to refuse
        break;
      default:
        break;
    }
  }
  return std::string_view::npos;
}

void check_json_depth(std::string_view text, int max_depth) {
  const size_t at = json_depth_exceeded_at(text, max_depth);
  if (at == std::string_view::npos) return;
  throw nlohmann::json::parse_error::create(101, at + 1,
                                            "JSON nested deeper than " + std::to_string(max_depth) +
                                                " levels (arrays and objects inside each other)",
                                            static_cast<const nlohmann::json*>(nullptr));
}

}  // namespace tzero
