// libFuzzer target: arbitrary bytes as a chat template, parsed and, when it parses, rendered for
// a small conversation. A template may be refused (tzero::Error) but must never crash, overflow
// the stack, hang or leak (tests/fuzz/run_fuzz.sh runs it; the limits are chat_template_ast.h's).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const tzero::ChatTemplate t(source);
    nlohmann::ordered_json vars;
    vars["messages"] = nlohmann::ordered_json::array(
        {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi!"}}});
    vars["add_generation_prompt"] = true;
    vars["bos_token"] = "<s>";
    vars["eos_token"] = "</s>";
    (void)t.render(vars);
  } catch (const tzero::Error&) {
    // Refused: fine.
  }
  return 0;
}
