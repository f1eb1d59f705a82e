#include "tokenizer/normalizer.h"

#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace tzero {

const char* norm_step_name(NormStep::Kind kind) {
  switch (kind) {
    case NormStep::Kind::NFC:
      return "NFC";
    case NormStep::Kind::NFD:
      return "NFD";
    case NormStep::Kind::NFKC:
      return "NFKC";
    case NormStep::Kind::NFKD:
      return "NFKD";
    case NormStep::Kind::Lowercase:
      return "Lowercase";
    case NormStep::Kind::Strip:
      return "Strip";
    case NormStep::Kind::Prepend:
      return "Prepend";
    case NormStep::Kind::Replace:
      return "Replace";
  }
  return "?";
}

struct Normalizer::Replacer {
  Regex regex;
  explicit Replacer(const std::string& pattern) : regex(pattern, /*subject_is_valid=*/false) {}
};

Normalizer::Normalizer(const std::vector<NormStep>& steps) : steps_(steps) {
  for (const NormStep& s : steps_)
    replacers_.push_back(s.kind == NormStep::Kind::Replace ? std::make_unique<Replacer>(s.pattern)
                                                           : nullptr);
}

Normalizer::~Normalizer() = default;

namespace {

std::string_view strip(std::string_view s, bool left, bool right) {
  size_t len = 0;
  if (left)
    while (!s.empty() && unicode::starts_with_white_space(s, len)) s.remove_prefix(len);
  if (right) {
    // Find the end of the last character that is not white space.
    size_t keep = 0;
    for (size_t i = 0; i < s.size();) {
      const bool ws = unicode::starts_with_white_space(s.substr(i), len);
      if (len == 0) len = 1;  // an ill-formed byte is not white space
      i += len;
      if (!ws) keep = i;
    }
    s = s.substr(0, keep);
  }
  return s;
}

}  // namespace

std::string Normalizer::normalize(std::string_view text) const {
  std::string cur(text), next;
  std::vector<std::pair<size_t, size_t>> matches;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const NormStep& s = steps_[i];
    next.clear();
    switch (s.kind) {
      case NormStep::Kind::NFC:
        unicode::append_normalized(cur, unicode::NormalForm::NFC, next);
        break;
      case NormStep::Kind::NFD:
        unicode::append_normalized(cur, unicode::NormalForm::NFD, next);
        break;
      case NormStep::Kind::NFKC:
        unicode::append_normalized(cur, unicode::NormalForm::NFKC, next);
        break;
      case NormStep::Kind::NFKD:
        unicode::append_normalized(cur, unicode::NormalForm::NFKD, next);
        break;
      case NormStep::Kind::Lowercase:
        unicode::append_lowercase(cur, next);
        break;
      case NormStep::Kind::Strip:
        next = strip(cur, s.left, s.right);
        break;
      case NormStep::Kind::Prepend:
        if (!cur.empty()) next = s.content + cur;
        break;
      case NormStep::Kind::Replace: {
        matches.clear();
        replacers_[i]->regex.find_all(cur, matches);
        size_t pos = 0;
        for (const auto& [b, e] : matches) {
          next.append(cur, pos, b - pos);
          next += s.content;
          pos = e;
        }
        next.append(cur, pos, std::string::npos);
        break;
      }
    }
    cur.swap(next);
  }
  return cur;
}

}  // namespace tzero
