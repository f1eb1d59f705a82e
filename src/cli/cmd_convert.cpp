// tzero convert: import foreign checkpoints into GGUF.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "format/llama2c.h"

namespace tz::cli {

Command add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand("convert", "Convert a llama2.c checkpoint to GGUF");
  struct Opts {
    std::string llama2c, tokenizer, out;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--llama2c", o->llama2c, "llama2.c checkpoint (.bin)")->required();
  sub->add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer (.bin)")->required();
  sub->add_option("-o,--output", o->out, "Output GGUF file")->required();
  return {sub, [o] {
            const auto s = convert_llama2c(o->llama2c, o->tokenizer, o->out);
            std::fprintf(stderr,
                         "wrote %s: dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab "
                         "%d, context %d, %s classifier\n",
                         o->out.c_str(), s.dim, s.hidden_dim, s.n_layers, s.n_heads,
                         s.n_kv_heads, s.vocab_size, s.seq_len,
                         s.shared_classifier ? "shared" : "separate");
            return 0;
          }};
}

}  // namespace tz::cli
