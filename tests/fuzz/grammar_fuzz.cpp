// libFuzzer target: arbitrary bytes as a grammar (first byte even) or a JSON schema (odd),
// compiled, then the bytes after the grammar's first NUL (or a sample JSON text for a schema)
// walked through the matcher. A grammar or schema may be refused (GrammarError, SchemaError)
// but must never crash, overflow the stack, hang or blow up in memory: the size limits of
// grammar/gbnf.h and grammar/json_schema.h and the matcher's caps bound the work of any input.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    std::string gbnf;
    std::string_view text;
    if (data[0] & 1) {
      gbnf = tzero::json_schema_to_gbnf(in);
      text = R"({"a": [1, -2.5e3, "x\u00e9", true, null], "b": {"c": "2024-02-03"}})";
    } else {
      const size_t nul = in.find('\0');
      gbnf = std::string(in.substr(0, nul));
      if (nul != std::string_view::npos) text = in.substr(nul + 1);
    }
    tzero::GrammarMatcher m(std::make_shared<const tzero::Grammar>(tzero::compile_gbnf(gbnf)));
    uint32_t st = m.start();
    for (const char c : text) {
      st = m.next(st, uint8_t(c));
      if (st == tzero::GrammarMatcher::kDead) break;
      (void)m.accepting(st);
    }
  } catch (const tzero::GrammarError&) {
  } catch (const tzero::SchemaError&) {
  }
  return 0;
}
