// A hostile chat template inside a GGUF (nested 5,000 deep, a 100k-term chain) is a clear load
// error (exit 2, one line) at every entry point that uses the model's template: `tzero chat
// --render`, `tzero chat`, and `tzero serve` at startup. Before, each was a SIGSEGV (exit 139),
// the server's at its first chat request.
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"

namespace tzero {
namespace {

// The tiny model with `tmpl` as tokenizer.chat_template.
std::string with_template(const std::string& name, const std::string& tmpl) {
  const GgufFile in(test::generated_model("tiny", "q8_0"));
  GgufWriter w;
  for (const auto& [key, value] : in.metadata())
    if (key != "tokenizer.chat_template") w.add_value(key, value);
  w.add_string("tokenizer.chat_template", tmpl);
  for (const GgufTensorInfo& t : in.tensors())
    w.add_tensor(t.name, t.type, t.ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  const std::string path = test::scratch_dir() + "/" + name + ".gguf";
  w.write(path, in.alignment());
  return path;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(ChatTemplateEntry, HostileTemplatesAreLoadErrorsEverywhere) {
  const std::string deep =
      with_template("deep", "{{ " + repeat("(", 5000) + "1" + repeat(")", 5000) + " }}");
  const std::string chain = with_template("chain", "{{ 1" + repeat(" + 1", 100000) + " }}");
  for (const std::string& model : {deep, chain}) {
    SCOPED_TRACE(model);
    const auto render =
        test::run_tzero({"chat", "-m", model, "--render"}, R"([{"role":"user","content":"hi"}])");
    EXPECT_EQ(render.exit_code, 2) << render.err;
    EXPECT_NE(render.err.find(" deep"), std::string::npos) << render.err;
    const auto chat = test::run_tzero({"chat", "-m", model}, "hi\n");
    EXPECT_EQ(chat.exit_code, 2) << chat.err;
    const auto serve = test::run_tzero({"serve", "-m", model, "--port", "0"});
    EXPECT_EQ(serve.exit_code, 2) << serve.err;
    EXPECT_NE(serve.err.find("tokenizer.chat_template: chat template: line 1"), std::string::npos)
        << serve.err;
    EXPECT_NE(serve.err.find("--chat-template NAME"), std::string::npos) << serve.err;
  }
}

}  // namespace
}  // namespace tzero
