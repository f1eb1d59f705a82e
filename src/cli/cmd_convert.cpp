// tzero convert: import foreign checkpoints and tokenizers into GGUF.
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/output_files.h"
#include "convert/llama2c.h"
#include "tokenizer/hf_import.h"

namespace tzero::cli {

Command add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "convert",
      "Convert a llama2.c checkpoint, or a Hugging Face BPE tokenizer (byte-level or "
      "SentencePiece-style), to GGUF");
  struct Opts {
    std::string llama2c, tokenizer, hf_tokenizer, pre, out;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  auto* l2c = sub->add_option("--llama2c", o->llama2c, "llama2.c checkpoint (.bin)");
  auto* tok = sub->add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer (.bin)");
  auto* hf = sub->add_option("--hf-tokenizer", o->hf_tokenizer,
                             "Directory with tokenizer.json, or vocab.json + merges.txt (and "
                             "tokenizer_config.json when present): writes a vocab-only GGUF");
  auto* pre = sub->add_option("--pre", o->pre,
                              "Byte-level BPE: the named pre-tokenizer to record "
                              "(tokenizer.ggml.pre), e.g. qwen2; default: the pipeline "
                              "tokenizer.json spells out");
  sub->add_option("-o,--output", o->out, "Output GGUF file")->required();
  add_force_flag(sub, o->force);
  l2c->excludes(hf);
  tok->needs(l2c);
  pre->needs(hf);
  return {sub, [o, l2c, tok, hf] {
            check_output_free(o->out, o->force, "-o FILE");
            if (*hf) {
              const auto s = import_hf_tokenizer(o->hf_tokenizer, o->out, {o->pre});
              if (s.model == "llama")
                std::fprintf(stderr,
                             "wrote %s: SentencePiece-style BPE, %d tokens (%d added), scores "
                             "from %d merges, %s\n",
                             o->out.c_str(), s.n_tokens, s.n_added, s.n_merges,
                             s.add_space_prefix ? "dummy prefix" : "no dummy prefix");
              else
                std::fprintf(stderr,
                             "wrote %s: byte-level BPE, %d tokens (%d added), %d merges, "
                             "pre-tokenizer %s (from %s)\n",
                             o->out.c_str(), s.n_tokens, s.n_added, s.n_merges, s.pre.c_str(),
                             s.pre_source.c_str());
              return 0;
            }
            if (!*l2c)
              throw Error(
                  "convert: give --llama2c CHECKPOINT --tokenizer TOKENIZER, or "
                  "--hf-tokenizer DIR");
            if (!*tok) throw Error("convert: --llama2c needs --tokenizer TOKENIZER.bin");
            const auto s = convert_llama2c(o->llama2c, o->tokenizer, o->out);
            std::fprintf(stderr,
                         "wrote %s: dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab "
                         "%d, context %d, %s classifier\n",
                         o->out.c_str(), s.dim, s.hidden_dim, s.n_layers, s.n_heads, s.n_kv_heads,
                         s.vocab_size, s.seq_len, s.shared_classifier ? "shared" : "separate");
            return 0;
          }};
}

}  // namespace tzero::cli
