// tzero tokenize: print the token ids of a text.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli/commands.h"
#include "format/gguf.h"
#include "tokenizer/vocab.h"

namespace tzero::cli {

Command add_tokenize(CLI::App& app) {
  auto* sub = app.add_subcommand("tokenize", "Print the token ids of a text");
  struct Opts {
    std::string model, prompt, file;
    bool prompt_set = false, no_bos = false, parse_special = false, json = false, pieces = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("-m,--model", o->model, "GGUF file with a tokenizer (a vocab-only file works)")
      ->required();
  auto* p = sub->add_option("-p,--prompt", o->prompt, "Text to tokenize");
  auto* f = sub->add_option("-f,--file", o->file, "Read the text from a file");
  p->excludes(f);
  sub->add_flag("--no-bos", o->no_bos, "Do not add BOS (nor EOS) tokens");
  sub->add_flag("--parse-special", o->parse_special, "Match control-token texts as tokens");
  sub->add_flag("--json", o->json, "Print {\"ids\": [...]}");
  sub->add_flag("--pieces", o->pieces, "Print each id with its piece, one per line");
  return {sub, [o, p, f] {
            if (!*p && !*f) throw Error("tokenize: give the text with -p TEXT or -f FILE");
            const std::string text = *f ? read_text_file(o->file) : o->prompt;
            GgufFile gguf(o->model);
            const Vocab vocab = Vocab::from_gguf(gguf);
            const auto ids = vocab.tokenize(text, !o->no_bos, o->parse_special);
            if (o->json) {
              std::printf("%s\n", nlohmann::json{{"ids", ids}}.dump().c_str());
            } else if (o->pieces) {
              for (int32_t id : ids)
                std::printf("%6d '%s'\n", id, std::string(vocab.text(id)).c_str());
            } else {
              for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
              std::printf("\n");
            }
            return 0;
          }};
}

}  // namespace tzero::cli
