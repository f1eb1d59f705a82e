// tzero tokenize: print the token ids of a text; with --pieces what each token stands for, as
// readable text (tokenizer/piece_display.h); with --json one object.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli/commands.h"
#include "format/gguf.h"
#include "tokenizer/piece_display.h"
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
  sub->add_flag("--json", o->json,
                "Print {\"ids\": [...]}; with --pieces also \"pieces\": [{id, token (the "
                "vocabulary's spelling), piece (readable text), hex (its bytes)}]");
  sub->add_flag("--pieces", o->pieces,
                "Print each id with the text it stands for, one per line ('Ġworld' is ' world'; "
                "\\n, \\t, \\r, \\\\ and <0xXX> for control bytes and partial UTF-8)");
  return {sub, [o, p, f] {
            if (!*p && !*f) throw Error("tokenize: give the text with -p TEXT or -f FILE");
            const std::string text = *f ? read_text_file(o->file) : o->prompt;
            GgufFile gguf(o->model);
            const Vocab vocab = Vocab::from_gguf(gguf);
            const auto ids = vocab.tokenize(text, !o->no_bos, o->parse_special);
            if (o->json) {
              nlohmann::ordered_json j{{"ids", ids}};
              if (o->pieces) {
                j["pieces"] = nlohmann::ordered_json::array();
                for (int32_t id : ids) {
                  const std::string bytes = piece_bytes(vocab, id);
                  std::string hex;
                  for (const char c : bytes) {
                    char h[3];
                    std::snprintf(h, sizeof h, "%02x", unsigned(static_cast<unsigned char>(c)));
                    hex += h;
                  }
                  j["pieces"].push_back({{"id", id},
                                         {"token", std::string(vocab.text(id))},
                                         {"piece", display_piece(bytes)},
                                         {"hex", hex}});
                }
              }
              std::printf(
                  "%s\n",
                  j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
            } else if (o->pieces) {
              for (int32_t id : ids)
                std::printf("%6d '%s'\n", id, display_piece(piece_bytes(vocab, id)).c_str());
            } else {
              for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
              std::printf("\n");
            }
            return 0;
          }};
}

}  // namespace tzero::cli
