// tokenizer.json pipelines read into tzero's steps (tokenizer/hf_pipeline.h): every normalizer
// step, every pre-tokenizer step and split behaviour, the errors for what is not supported, and
// the pipeline stored in a GGUF file. Expected words follow Hugging Face's documented semantics
// (SplitDelimiterBehavior's own example "the-final--countdown" among them).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace {

using nlohmann::json;
using Words = std::vector<std::string>;

const json kByteLevelBare = {
    {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};

json seq(std::vector<json> steps) {
  return {{"type", "Sequence"}, {"pretokenizers", steps}};
}
json split_string(const std::string& s, const char* behavior, bool invert = false) {
  return {
      {"type", "Split"}, {"pattern", {{"String", s}}}, {"behavior", behavior}, {"invert", invert}};
}
json split_regex(const std::string& re, const char* behavior) {
  return {{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", behavior}};
}

// The words of `text` under `steps` (a ByteLevel without regex appended).
Words words(std::vector<json> steps, const std::string& text) {
  steps.push_back(kByteLevelBare);
  const tzero::PreTokenizerSpec spec =
      tzero::parse_hf_pipeline(json(), seq(steps), false, "tokenizer.json");
  const tzero::PreTokenizer p(spec);
  return p.words(text);
}

std::string normalize(const json& normalizer, const std::string& text) {
  const tzero::Normalizer n(tzero::parse_hf_normalizer(normalizer, "tokenizer.json"));
  return n.normalize(text);
}

std::string pipeline_error(const json& normalizer, const json& pre) {
  try {
    tzero::parse_hf_pipeline(normalizer, pre, false, "tokenizer.json");
  } catch (const tzero::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(HfPipeline, SplitBehaviours) {
  const std::string t = "the-final--countdown";
  EXPECT_EQ(words({split_string("-", "Removed")}, t), (Words{"the", "final", "countdown"}));
  EXPECT_EQ(words({split_string("-", "Isolated")}, t),
            (Words{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(words({split_string("-", "MergedWithPrevious")}, t),
            (Words{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(words({split_string("-", "MergedWithNext")}, t),
            (Words{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(words({split_string("-", "Contiguous")}, t),
            (Words{"the", "-", "final", "--", "countdown"}));
  // A piece that starts or ends with a match.
  EXPECT_EQ(words({split_string("-", "MergedWithPrevious")}, "-a-"), (Words{"-", "a-"}));
  EXPECT_EQ(words({split_string("-", "MergedWithNext")}, "-a-"), (Words{"-a", "-"}));
}

TEST(HfPipeline, InvertSwapsMatchesAndTheTextBetween) {
  const std::string t = "the-final--countdown";
  // Removed with invert keeps only the matches.
  EXPECT_EQ(words({split_string("-", "Removed", true)}, t), (Words{"-", "-", "-"}));
  // The words are now the "matches": each joins the delimiter before it.
  EXPECT_EQ(words({split_string("-", "MergedWithPrevious", true)}, t),
            (Words{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(words({split_string("-", "Isolated", true)}, t),
            (Words{"the", "-", "final", "-", "-", "countdown"}));
}

TEST(HfPipeline, StringPatternsAreLiteral) {
  // "." and "+" are not expression syntax in a String pattern.
  EXPECT_EQ(words({split_string(".+", "Removed")}, "a.+b.c+"), (Words{"a", "b.c+"}));
  EXPECT_EQ(words({split_regex(R"(\.+)", "Removed")}, "a..b.c"), (Words{"a", "b", "c"}));
  EXPECT_EQ(words({split_string("\n", "Isolated")}, "a\nb"), (Words{"a", "\n", "b"}));
  EXPECT_EQ(words({{{"type", "CharDelimiterSplit"}, {"delimiter", "|"}}}, "a|b||c"),
            (Words{"a", "b", "c"}));
}

TEST(HfPipeline, DigitsPunctuationWhitespace) {
  const json digits_one = {{"type", "Digits"}, {"individual_digits", true}};
  const json digits_run = {{"type", "Digits"}, {"individual_digits", false}};
  EXPECT_EQ(words({digits_one}, "a123b"), (Words{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(words({digits_run}, "a123b4"), (Words{"a", "123", "b", "4"}));
  // Unicode numbers count (Arabic-Indic digits, superscripts).
  EXPECT_EQ(words({digits_run}, "x\u0661\u0662\u00B2y"), (Words{"x", "\u0661\u0662\u00B2", "y"}));
  const json punct = {{"type", "Punctuation"}};  // default behaviour: Isolated
  EXPECT_EQ(words({punct}, "a,,b$!"), (Words{"a", ",", ",", "b", "$", "!"}));
  const json punct_run = {{"type", "Punctuation"}, {"behavior", "Contiguous"}};
  EXPECT_EQ(words({punct_run}, "a,,b$!\u3002"), (Words{"a", ",,", "b", "$!\u3002"}));
  const json ws = {{"type", "Whitespace"}};
  EXPECT_EQ(words({ws}, "Hey man!  Good?"), (Words{"Hey", "man", "!", "Good", "?"}));
  EXPECT_EQ(words({ws}, "caf\u00E9 x_y\u00A0z"), (Words{"caf\u00E9", "x_y", "z"}));
  const json ws_split = {{"type", "WhitespaceSplit"}};
  EXPECT_EQ(words({ws_split}, " Hey man!\t\u3000Good? "), (Words{"Hey", "man!", "Good?"}));
}

TEST(HfPipeline, ByteLevelOptions) {
  auto byte_level = [](bool prefix, bool regex) {
    return json{{"type", "ByteLevel"}, {"add_prefix_space", prefix}, {"use_regex", regex}};
  };
  auto run = [&](std::vector<json> steps, const std::string& text) {
    const tzero::PreTokenizer p(
        tzero::parse_hf_pipeline(json(), seq(steps), false, "tokenizer.json"));
    return p.words(text);
  };
  EXPECT_EQ(run({byte_level(false, true)}, "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(run({byte_level(true, true)}, "Hello world"), (Words{" Hello", " world"}));
  EXPECT_EQ(run({byte_level(true, true)}, " Hello"), (Words{" Hello"}));  // has one already
  EXPECT_EQ(run({byte_level(true, false)}, "a b"), (Words{" a b"}));
  // The prefix goes before every piece the earlier steps made.
  EXPECT_EQ(run({split_regex(R"(\d)", "Isolated"), byte_level(true, false)}, "a1"),
            (Words{" a", " 1"}));
  // A step after ByteLevel sees byte-level text ("Ġ" for a space).
  EXPECT_EQ(run({byte_level(false, false), split_string("\u0120", "MergedWithNext")}, "a b c"),
            (Words{"a", " b", " c"}));
}

TEST(HfPipeline, Normalizers) {
  EXPECT_EQ(normalize({{"type", "NFC"}}, "e\u0301"), "\u00E9");
  EXPECT_EQ(normalize({{"type", "NFD"}}, "\u00E9"), "e\u0301");
  EXPECT_EQ(normalize({{"type", "NFKC"}}, "\uFB01 \u2460\u00A0x\u00BD"), "fi 1 x1\u20442");
  EXPECT_EQ(normalize({{"type", "NFKD"}}, "\u00C5\uFB01"), "A\u030Afi");
  EXPECT_EQ(normalize({{"type", "Lowercase"}}, "\u00C0B \u0130 \u03A3Z"),
            "\u00E0b i\u0307 \u03C3z");
  EXPECT_EQ(
      normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \t a b \u3000"),
      "a b");
  EXPECT_EQ(normalize({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}}, " a "),
            " a");
  const json prepend = {{"type", "Prepend"}, {"prepend", "\u2581"}};
  EXPECT_EQ(normalize(prepend, "x"), "\u2581x");
  EXPECT_EQ(normalize(prepend, ""), "");  // nothing to prepend to
  const json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  EXPECT_EQ(normalize(replace, " a  b"), "\u2581a\u2581\u2581b");
  const json collapse = {{"type", "Replace"}, {"pattern", {{"Regex", R"(\s+)"}}}, {"content", " "}};
  EXPECT_EQ(normalize(collapse, "a \t\n b\u0085c"), "a b c");
  // In order: Prepend then Replace gives the same as Llama 2's files; Lowercase before NFKC.
  const json llama2 = {{"type", "Sequence"}, {"normalizers", {prepend, replace}}};
  EXPECT_EQ(normalize(llama2, "Hi you"), "\u2581Hi\u2581you");
  const json two = {{"type", "Sequence"},
                    {"normalizers", {json{{"type", "NFKC"}}, json{{"type", "Lowercase"}}}}};
  EXPECT_EQ(normalize(two, "\u24B6B"), "ab");  // circled A -> A -> a
  // Ill-formed bytes are kept where they are.
  EXPECT_EQ(normalize(two,
                      "A\xFF"
                      "B\xC3"),
            "a\xFF"
            "b\xC3");
  EXPECT_EQ(normalize(replace, "a\xFF b"), "a\xFF\u2581b");
}

TEST(HfPipeline, UnsupportedStepsAreNamed) {
  const json bl = kByteLevelBare;
  EXPECT_EQ(pipeline_error(json(), seq({bl, json{{"type", "BertPreTokenizer"}}})),
            "tokenizer.json: pre_tokenizer step 2 'BertPreTokenizer' is not supported "
            "(supported: Split, CharDelimiterSplit, Digits, Punctuation, Whitespace, "
            "WhitespaceSplit, ByteLevel, Sequence)");
  EXPECT_EQ(pipeline_error(json(), seq({split_string("x", "Sideways"), bl})),
            "tokenizer.json: pre_tokenizer step 1 'Split' with behavior 'Sideways' is not "
            "supported (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, "
            "Contiguous)");
  // Nested Sequences are numbered in running order.
  EXPECT_NE(
      pipeline_error(
          json(), seq({bl, seq({split_string("x", "Isolated"), json{{"type", "UnicodeScripts"}}})}))
          .find("pre_tokenizer step 3 'UnicodeScripts' is not supported"),
      std::string::npos);
  EXPECT_NE(pipeline_error(json(), seq({json{{"type", "Metaspace"}}, bl}))
                .find("step 1 'Metaspace' is not supported in a byte-level pipeline"),
            std::string::npos);
  EXPECT_NE(pipeline_error(json{{"type", "Precompiled"}}, bl)
                .find("tokenizer.json: normalizer step 1 'Precompiled' is not supported"),
            std::string::npos);
  EXPECT_NE(pipeline_error(json{{"type", "Sequence"},
                                {"normalizers", {json{{"type", "NFC"}}, json{{"type", "Nmt"}}}}},
                           bl)
                .find("normalizer step 2 'Nmt'"),
            std::string::npos);
  EXPECT_NE(pipeline_error(json(), seq({split_regex("(a", "Isolated"), bl}))
                .find("pre_tokenizer step 1 'Split': regular expression /(a/: cannot compile"),
            std::string::npos);
  EXPECT_NE(pipeline_error(json(), seq({json{{"type", "Split"}, {"pattern", 3}}, bl}))
                .find("step 1 'Split' has a pattern that is neither"),
            std::string::npos);
  EXPECT_NE(pipeline_error(json(), seq({bl, bl})).find("2 ByteLevel steps"), std::string::npos);
  EXPECT_NE(pipeline_error(json(), json{{"type", "Whitespace"}}).find("no ByteLevel step"),
            std::string::npos);
}

TEST(HfPipeline, EqualPipelinesFindTheirNames) {
  auto named = [](const json& normalizer, const json& pre, bool ignore_merges) {
    const auto* s = tzero::find_equal_named_spec(
        tzero::parse_hf_pipeline(normalizer, pre, ignore_merges, "tokenizer.json"));
    return s ? s->name : std::string("(none)");
  };
  // Every named spec, written back as tokenizer.json would spell it, finds itself.
  for (const auto& spec : tzero::pre_tokenizer_specs()) {
    json steps = json::array();
    for (const auto& st : spec.steps) {
      switch (st.kind) {
        case tzero::PreStep::Kind::Split:
          steps.push_back(split_regex(st.regex, "Isolated"));
          break;
        case tzero::PreStep::Kind::Digits:
          steps.push_back({{"type", "Digits"}, {"individual_digits", st.flag}});
          break;
        case tzero::PreStep::Kind::Punctuation:
          steps.push_back({{"type", "Punctuation"}, {"behavior", "Contiguous"}});
          break;
        case tzero::PreStep::Kind::ByteLevel:
          steps.push_back(
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", st.flag}});
          break;
        default:
          FAIL() << "unexpected step in " << spec.name;
      }
    }
    const json normalizer = spec.normalizers.empty() ? json() : json{{"type", "NFC"}};
    EXPECT_EQ(named(normalizer, seq(steps), spec.ignore_merges), spec.name);
  }
  // The same steps with another behaviour are no named pipeline.
  EXPECT_EQ(named(json(), seq({split_regex(R"(\p{N}{1,3})", "Removed"), kByteLevelBare}), false),
            "(none)");
}

TEST(HfPipeline, StoredPipelineReadsBackToTheSameWords) {
  const json normalizer = {
      {"type", "Sequence"},
      {"normalizers",
       {json{{"type", "NFKC"}}, json{{"type", "Lowercase"}},
        json{{"type", "Replace"}, {"pattern", {{"Regex", R"(\s+)"}}}, {"content", " "}}}}};
  const json pre = seq({split_regex(R"( ?\p{L}+)", "MergedWithNext"),
                        json{{"type", "Digits"}, {"individual_digits", false}},
                        json{{"type", "Punctuation"}, {"behavior", "Contiguous"}},
                        {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}});
  const std::string stored = tzero::pipeline_metadata(normalizer, pre, true);
  const tzero::PreTokenizerSpec a = tzero::parse_hf_pipeline(normalizer, pre, true, "x");
  const tzero::PreTokenizerSpec b = tzero::parse_pipeline_metadata(stored, "y");
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.normalizers, b.normalizers);
  EXPECT_TRUE(b.ignore_merges);
  const std::string text =
      "Caf\u00E9 \uFB01ne!!  12345,ab\r\n\u4E2D\u6587 \U0001F469\u200D\U0001F4BB";
  const tzero::Normalizer na(a.normalizers), nb(b.normalizers);
  const tzero::PreTokenizer pa(a), pb(b);
  const Words wa = pa.words(na.normalize(text)), wb = pb.words(nb.normalize(text));
  EXPECT_EQ(wa, wb);
  // Normalized: "café fine!! 12345,ab 中文 👩‍💻". The letter runs "café", " fine", "
  // ab", " 中文" are matches; " fine" and " 中文" take the non-letter text after them (the others
  // are followed by a match); digit and punctuation runs are cut out of " fine!! 12345,"; then each
  // piece without a leading space gets one.
  EXPECT_EQ(wa, (Words{" caf\u00E9", " fine", " !!", " ", " 12345", " ,", " ab",
                       " \u4E2D\u6587 \U0001F469\u200D\U0001F4BB"}));
}

TEST(HfPipeline, StoredPipelineErrors) {
  EXPECT_THROW(tzero::parse_pipeline_metadata("{\"version\": 1, \"pre_tok", "f.gguf"),
               tzero::Error);
  try {
    tzero::parse_pipeline_metadata(R"({"version": 2})", "f.gguf: metadata 'x'");
    FAIL();
  } catch (const tzero::Error& e) {
    EXPECT_STREQ(e.what(), "f.gguf: metadata 'x': not a version 1 pipeline object");
  }
  try {
    tzero::parse_pipeline_metadata(
        R"({"version": 1, "pre_tokenizer": {"type": "Sequence", "pretokenizers": 7}})", "f");
    FAIL();
  } catch (const tzero::Error& e) {
    EXPECT_STREQ(e.what(), "f: pre_tokenizer Sequence has no 'pretokenizers' list");
  }
}
