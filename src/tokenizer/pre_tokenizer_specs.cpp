// The named pre-tokenizer pipelines (tokenizer.ggml.pre values), each written as the steps of
// its original tokenizer.json with the original expressions; docs/TOKENIZERS.md says where each
// comes from.
#include "tokenizer/pre_tokenizer.h"

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

// o200k_base (tiktoken), as openai/gpt-oss-20b's tokenizer.json writes it (also gpt-4o's):
// upper-case-then-lower-case words with an optional contraction, digit runs of up to 3, and
// punctuation runs that may take a trailing "/" or line breaks.
const char* const kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// deepseek-ai/DeepSeek-V3 tokenizer.json: digit runs of up to 3, then CJK ideographs and kana
// (U+4E00..U+9FA5, hiragana U+3040..U+309F, katakana U+30A0..U+30FF), then words. The original
// writes CR and LF as literal characters inside the classes; \r and \n mean the same.
const char* const kDeepseekV3Cjk = R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)";
const char* const kDeepseekV3Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
    R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

PreStep split(const char* re) {
  PreStep s;
  s.kind = PreStep::Kind::Split;
  s.regex = re;
  return s;
}
PreStep digits(bool individual) {
  PreStep s;
  s.kind = PreStep::Kind::Digits;
  s.flag = individual;
  return s;
}
PreStep punctuation(SplitBehavior behavior) {
  PreStep s;
  s.kind = PreStep::Kind::Punctuation;
  s.behavior = behavior;
  return s;
}
PreStep byte_level_step(bool use_regex) {
  PreStep s;
  s.kind = PreStep::Kind::ByteLevel;
  s.flag = use_regex;
  return s;
}

const std::vector<NormStep> kNfc = {NormStep{NormStep::Kind::NFC, "", "", false, false}};

std::vector<PreTokenizerSpec> make_specs() {
  std::vector<PreTokenizerSpec> s;
  // openai-community/gpt2; microsoft/phi-2 has the same pre-tokenizer.
  s.push_back({"gpt-2", {"default", "phi-2"}, {byte_level_step(true)}, {}});
  // mosaicml/mpt-7b uses EleutherAI/gpt-neox-20b's tokenizer: NFC, then GPT-2's.
  s.push_back({"mpt", {}, {byte_level_step(true)}, kNfc});
  s.push_back({"llama-bpe",
               {"llama3", "llama-v3"},
               {split(kLlama3Regex), byte_level_step(false)},
               {},
               /*ignore_merges=*/true,
               /*add_bos=*/true});
  s.push_back({"qwen2", {"deepseek-r1-qwen"}, {split(kQwen2Regex), byte_level_step(false)}, kNfc});
  s.push_back({"deepseek-llm",
               {},
               {split(kNewline), split(kDeepseekLetters), split(kDeepseekPunct), split(R"(\s+$)"),
                split(kDeepseekCjk), digits(true), byte_level_step(false)},
               {}});
  s.push_back({"deepseek-coder",
               {},
               {split(kNewline), split(R"(\s?\p{L}+)"), split(R"(\s?\p{P}+)"), split(kDeepseekCjk),
                digits(true), byte_level_step(false)},
               {}});
  // tiiuae/falcon-7b: the digit steps run after ByteLevel, on byte-level text.
  s.push_back({"falcon",
               {},
               {punctuation(SplitBehavior::Contiguous), byte_level_step(true), digits(false),
                split("[0-9][0-9][0-9]")},
               {}});
  // bigcode/starcoder; smallcloudai/Refact-1_6B-fim has the same pre-tokenizer.
  s.push_back({"starcoder", {"refact"}, {digits(true), byte_level_step(true)}, {}});
  // openai/gpt-oss-20b and -120b (o200k_harmony); llama.cpp calls it "gpt-4o".
  s.push_back({"gpt-4o",
               {},
               {split(kO200kRegex), byte_level_step(false)},
               {},
               /*ignore_merges=*/true});
  // deepseek-ai/DeepSeek-V3 (also V3-0324, R1): its normalizer is an empty Sequence.
  s.push_back({"deepseek-v3",
               {},
               {split(R"(\p{N}{1,3})"), split(kDeepseekV3Cjk), split(kDeepseekV3Words),
                byte_level_step(false)},
               {}});
  return s;
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

std::string known_pre_tokenizer_names(bool with_aliases) {
  std::string s;
  for (const auto& spec : pre_tokenizer_specs()) {
    s += s.empty() ? "" : ", ";
    s += spec.name;
    if (with_aliases)
      for (const auto& a : spec.aliases) s += ", " + a;
  }
  return s;
}

}  // namespace tzero
