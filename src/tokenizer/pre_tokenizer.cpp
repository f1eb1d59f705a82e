#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/error.h"
#include "tokenizer/byte_level.h"

namespace tzero {

// GPT-2's expression (openai/gpt-2 encoder.py; Hugging Face ByteLevel with use_regex).
const char* const kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Llama 3 (tiktoken cl100k_base style, in Meta-Llama-3 tokenizer.json) and Qwen2 (the same with
// single digits, in Qwen2 tokenizer.json).
const char* const kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Regex = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
                                R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// DeepSeek LLM (deepseek-llm-7b/67b, also DeepSeek-V2) tokenizer.json Split patterns. The
// original writes its classes with literal characters; they are spelled here as PCRE2 \x{...}
// escapes, code point for code point (several of them, such as U+1F7D, U+1FBE, U+2126 and
// U+212A, are changed by NFC and would be damaged by any tool that normalizes source text).
const char* const kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";
const char* const kDeepseekPunct =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
const char* const kDeepseekCjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
const char* const kNewline = R"([\r\n])";

// Hugging Face's Punctuation pre-tokenizer cuts at characters for which Rust's
// is_ascii_punctuation or the Unicode P categories hold; the ASCII ones outside \p{P} are
// $ + < = > ^ ` | ~. Contiguous behaviour: a run of them is one piece.
const char* const kHfPunctuation = R"([\p{P}\$\+<=>\^`\|~]+)";

PreStep split(const char* re) {
  return {PreStep::Kind::Split, re, false};
}
PreStep digits(bool individual) {
  return {PreStep::Kind::Digits, "", individual};
}
PreStep punctuation() {
  return {PreStep::Kind::Punctuation, "", false};
}
PreStep byte_level_step(bool use_regex) {
  return {PreStep::Kind::ByteLevel, "", use_regex};
}

std::vector<PreTokenizerSpec> make_specs() {
  std::vector<PreTokenizerSpec> s;
  // openai-community/gpt2; microsoft/phi-2 has the same pre-tokenizer.
  s.push_back({"gpt-2", {"default", "phi-2"}, {byte_level_step(true)}});
  // mosaicml/mpt-7b uses EleutherAI/gpt-neox-20b's tokenizer: NFC, then GPT-2's.
  s.push_back({"mpt", {}, {byte_level_step(true)}, /*nfc=*/true});
  s.push_back({"llama-bpe",
               {"llama3", "llama-v3"},
               {split(kLlama3Regex), byte_level_step(false)},
               false,
               /*ignore_merges=*/true,
               /*add_bos=*/true});
  s.push_back({"qwen2",
               {"deepseek-r1-qwen"},
               {split(kQwen2Regex), byte_level_step(false)},
               /*nfc=*/true});
  s.push_back({"deepseek-llm",
               {},
               {split(kNewline), split(kDeepseekLetters), split(kDeepseekPunct), split(R"(\s+$)"),
                split(kDeepseekCjk), digits(true), byte_level_step(false)}});
  s.push_back({"deepseek-coder",
               {},
               {split(kNewline), split(R"(\s?\p{L}+)"), split(R"(\s?\p{P}+)"), split(kDeepseekCjk),
                digits(true), byte_level_step(false)}});
  // tiiuae/falcon-7b: the digit steps run after ByteLevel, on byte-level text.
  s.push_back({"falcon",
               {},
               {punctuation(), byte_level_step(true), digits(false), split("[0-9][0-9][0-9]")}});
  // bigcode/starcoder; smallcloudai/Refact-1_6B-fim has the same pre-tokenizer.
  s.push_back({"starcoder", {"refact"}, {digits(true), byte_level_step(true)}});
  return s;
}

constexpr uint32_t kCompileOptions = PCRE2_UTF | PCRE2_UCP;

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

const std::vector<PreTokenizerSpec>& pre_tokenizer_specs() {
  static const std::vector<PreTokenizerSpec> specs = make_specs();
  return specs;
}

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
  for (const auto& s : pre_tokenizer_specs()) {
    if (s.name == name) return &s;
    for (const auto& a : s.aliases)
      if (a == name) return &s;
  }
  return nullptr;
}

std::string widen_whitespace_escapes(std::string_view p) {
  static const char* const kWs = R"(\x{09}-\x{0D}\x{85}\p{Z})";
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      if (e == 's') {
        out += in_class ? std::string(kWs) : "[" + std::string(kWs) + "]";
      } else if (e == 'S') {
        if (in_class) throw Error("pre-tokenizer: \\S inside a character class is not supported");
        out += "[^" + std::string(kWs) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a leading ] is literal
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

// One compiled expression, cutting pieces with "Isolated" behaviour.
struct PreTokenizer::Stage {
  pcre2_code* code = nullptr;
  std::string pattern;
  bool byte_level = false;  // the subject is byte-level text (always well-formed UTF-8)

  Stage(const std::string& original, bool on_byte_level) : byte_level(on_byte_level) {
    pattern = widen_whitespace_escapes(original);
    int err = 0;
    PCRE2_SIZE off = 0;
    const uint32_t opts = kCompileOptions | (on_byte_level ? 0 : PCRE2_MATCH_INVALID_UTF);
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), opts, &err,
                         &off, nullptr);
    if (!code)
      throw Error("pre-tokenizer: cannot compile /" + original + "/ at offset " +
                  std::to_string(off) + ": " + pcre2_message(err));
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: the interpreter serves without it
  }
  ~Stage() { pcre2_code_free(code); }

  // Cuts buf[b, e) into pieces, appending their [start, end) offsets to `out`.
  void cut(const std::string& buf, size_t b, size_t e, pcre2_match_data* md,
           std::vector<std::pair<size_t, size_t>>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(buf.data() + b);
    const size_t len = e - b;
    size_t pos = 0, search = 0;
    const uint32_t match_opts = byte_level ? PCRE2_NO_UTF_CHECK : 0;
    while (search < len) {
      int rc = pcre2_match(code, subject, len, search, match_opts, md, nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // very long pieces: the interpreter uses the heap
        rc = pcre2_match(code, subject, len, search, match_opts | PCRE2_NO_JIT, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0)
        throw Error("pre-tokenizer: matching /" + pattern + "/ failed: " + pcre2_message(rc));
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t ms = ov[0], me = ov[1];
      if (me == ms) {  // an empty match cuts nothing; go on after the next character
        search = ms + 1;
        while (search < len && (buf[b + search] & 0xC0) == 0x80) ++search;
        continue;
      }
      if (ms > pos) out.emplace_back(b + pos, b + ms);
      out.emplace_back(b + ms, b + me);
      pos = search = me;
    }
    if (pos < len) out.emplace_back(b + pos, e);
  }
};

PreTokenizer::PreTokenizer(const PreTokenizerSpec& spec) : spec_(spec) {
  bool after = false;  // past the ByteLevel step
  auto add = [&](const std::string& re) {
    (after ? byte_stages_ : raw_stages_).push_back(std::make_unique<Stage>(re, after));
  };
  int n_byte_level = 0;
  for (const PreStep& st : spec.steps) {
    switch (st.kind) {
      case PreStep::Kind::Split:
        add(st.regex);
        break;
      case PreStep::Kind::Digits:
        add(st.flag ? R"(\p{N})" : R"(\p{N}+)");
        break;
      case PreStep::Kind::Punctuation:
        add(kHfPunctuation);
        break;
      case PreStep::Kind::ByteLevel:
        if (st.flag) add(kGpt2Regex);
        after = true;
        ++n_byte_level;
        break;
    }
  }
  if (n_byte_level != 1)
    throw Error("pre-tokenizer '" + spec.name + "' must have exactly one ByteLevel step");
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(std::string_view text, std::string& words_out,
                         std::vector<size_t>& ends_out) const {
  using Pieces = std::vector<std::pair<size_t, size_t>>;
  pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
  if (!md) throw std::bad_alloc();
  struct Free {
    pcre2_match_data* p;
    ~Free() { pcre2_match_data_free(p); }
  } free_md{md};

  auto run = [&](const std::vector<std::unique_ptr<Stage>>& stages, const std::string& buf,
                 Pieces& pieces) {
    Pieces next;
    for (const auto& st : stages) {
      next.clear();
      next.reserve(pieces.size() * 2);
      for (const auto& [b, e] : pieces) st->cut(buf, b, e, md, next);
      pieces.swap(next);
    }
  };

  const std::string raw(text);
  Pieces pieces;
  if (!raw.empty()) pieces.emplace_back(0, raw.size());
  run(raw_stages_, raw, pieces);

  // Rewrite in the byte-level alphabet.
  std::string mapped;
  mapped.reserve(raw.size() * 2);
  Pieces mapped_pieces;
  mapped_pieces.reserve(pieces.size());
  for (const auto& [b, e] : pieces) {
    const size_t start = mapped.size();
    byte_level::encode(std::string_view(raw).substr(b, e - b), mapped);
    mapped_pieces.emplace_back(start, mapped.size());
  }
  run(byte_stages_, mapped, mapped_pieces);

  for (const auto& [b, e] : mapped_pieces) {
    words_out.append(mapped, b, e - b);
    ends_out.push_back(words_out.size());
  }
}

std::vector<std::string> PreTokenizer::words(std::string_view text) const {
  std::string buf;
  std::vector<size_t> ends;
  split(text, buf, ends);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end : ends) {
    out.push_back(byte_level::decode(std::string_view(buf).substr(start, end - start)));
    start = end;
  }
  return out;
}

}  // namespace tzero
