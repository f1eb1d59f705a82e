#include "runtime/prompt.h"

namespace tzero {

bool prompt_wants_bos(const Vocab& vocab, std::string_view text, bool parse_special,
                      bool allow_bos) {
  if (!allow_bos || !vocab.add_bos() || vocab.bos() < 0) return false;
  const std::string_view bos = vocab.text(vocab.bos());
  const bool written = parse_special && !bos.empty() && text.substr(0, bos.size()) == bos;
  return !written;
}

namespace {
std::vector<int32_t> at_least_bos(const Vocab& vocab, std::vector<int32_t> tokens) {
  if (tokens.empty() && vocab.bos() >= 0) tokens.push_back(vocab.bos());
  return tokens;
}
}  // namespace

std::vector<int32_t> tokenize_prompt(const Vocab& vocab, std::string_view text, bool parse_special,
                                     bool allow_bos) {
  // add_special adds the BOS exactly when add_bos() (and the EOS when add_eos()).
  const bool add_special =
      allow_bos && !(vocab.add_bos() && !prompt_wants_bos(vocab, text, parse_special));
  return at_least_bos(vocab, vocab.tokenize(text, add_special, parse_special));
}

std::vector<int32_t> tokenize_chat_prompt(const Vocab& vocab, std::string_view rendered) {
  std::vector<int32_t> out;
  if (prompt_wants_bos(vocab, rendered, true)) out.push_back(vocab.bos());
  const std::vector<int32_t> rest = vocab.tokenize(rendered, false, true);
  out.insert(out.end(), rest.begin(), rest.end());
  return at_least_bos(vocab, std::move(out));
}

}  // namespace tzero
