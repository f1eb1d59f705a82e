#include "tokenizer/pre_tokenizer.h"

#include "base/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"

namespace tzero {

namespace {

// Hugging Face's Punctuation pre-tokenizer cuts at characters for which Rust's
// is_ascii_punctuation or the Unicode P categories hold; the ASCII ones outside \p{P} are
// $ + < = > ^ ` | ~. One character per match, as in the original (Contiguous joins runs).
const char* const kHfPunctuation = R"([\p{P}\$\+<=>\^`\|~])";
// Hugging Face's Whitespace pre-tokenizer keeps the matches of \w+|[^\w\s]+ (Oniguruma's \w:
// letters, marks, numbers, connector punctuation) and drops the rest.
const char* const kHfWhitespace = R"([\p{L}\p{M}\p{N}\p{Pc}]+|[^\p{L}\p{M}\p{N}\p{Pc}\s]+)";

using Pieces = std::vector<std::pair<size_t, size_t>>;

}  // namespace

const char* split_behavior_name(SplitBehavior b) {
  switch (b) {
    case SplitBehavior::Removed:
      return "Removed";
    case SplitBehavior::Isolated:
      return "Isolated";
    case SplitBehavior::MergedWithPrevious:
      return "MergedWithPrevious";
    case SplitBehavior::MergedWithNext:
      return "MergedWithNext";
    case SplitBehavior::Contiguous:
      return "Contiguous";
  }
  return "?";
}

bool parse_split_behavior(std::string_view name, SplitBehavior& out) {
  for (SplitBehavior b :
       {SplitBehavior::Removed, SplitBehavior::Isolated, SplitBehavior::MergedWithPrevious,
        SplitBehavior::MergedWithNext, SplitBehavior::Contiguous})
    if (name == split_behavior_name(b)) {
      out = b;
      return true;
    }
  return false;
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

std::string escape_regex_literal(std::string_view literal) {
  std::string out;
  for (const char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != '_' && u >= 0x20) out += '\\';
    if (u < 0x20) {  // control characters as \x{..}, which the comparison of specs reads back
      static const char* const kHex = "0123456789ABCDEF";
      out += "\\x{";
      out += kHex[u >> 4];
      out += kHex[u & 15];
      out += '}';
      continue;
    }
    out += c;
  }
  return out;
}

// One cutting step: an expression and what becomes of its matches.
struct PreTokenizer::Stage {
  Regex regex;
  SplitBehavior behavior;
  bool invert;

  Stage(const std::string& pattern, bool on_byte_level, SplitBehavior b, bool inv)
      : regex(pattern, on_byte_level), behavior(b), invert(inv) {}

  // Cuts buf[b, e) into pieces, appending their [start, end) offsets to `out` (Hugging Face's
  // NormalizedString::split over the segments of find_matches).
  void cut(const std::string& buf, size_t b, size_t e, Pieces& out) const {
    struct Segment {
      size_t start, end;
      bool match;
    };
    thread_local Pieces matches;
    thread_local std::vector<Segment> segs;
    matches.clear();
    segs.clear();
    regex.find_all(std::string_view(buf).substr(b, e - b), matches);
    size_t pos = 0;
    for (const auto& [ms, me] : matches) {
      if (ms > pos) segs.push_back({b + pos, b + ms, invert});
      segs.push_back({b + ms, b + me, !invert});
      pos = me;
    }
    if (b + pos < e) segs.push_back({b + pos, e, invert});

    const size_t first = out.size();  // pieces of this call start here
    switch (behavior) {
      case SplitBehavior::Removed:
        for (const Segment& s : segs)
          if (!s.match) out.emplace_back(s.start, s.end);
        break;
      case SplitBehavior::Isolated:
        for (const Segment& s : segs) out.emplace_back(s.start, s.end);
        break;
      case SplitBehavior::MergedWithPrevious: {
        bool previous_match = false;
        for (const Segment& s : segs) {
          if (s.match && !previous_match && out.size() > first)
            out.back().second = s.end;
          else
            out.emplace_back(s.start, s.end);
          previous_match = s.match;
        }
        break;
      }
      case SplitBehavior::MergedWithNext: {
        // A match joins the segment after it when that one is not a match.
        bool pending = false;  // the last piece is a match waiting for its next segment
        for (const Segment& s : segs) {
          if (!s.match && pending)
            out.back().second = s.end;
          else
            out.emplace_back(s.start, s.end);
          pending = s.match;
        }
        break;
      }
      case SplitBehavior::Contiguous: {
        bool previous_match = false;
        for (const Segment& s : segs) {
          if (s.match == previous_match && out.size() > first)
            out.back().second = s.end;
          else
            out.emplace_back(s.start, s.end);
          previous_match = s.match;
        }
        break;
      }
    }
  }
};

PreTokenizer::PreTokenizer(const PreTokenizerSpec& spec) : spec_(spec) {
  bool after = false;  // past the ByteLevel step
  auto add = [&](const std::string& re, SplitBehavior b, bool invert) {
    (after ? byte_stages_ : raw_stages_).push_back(std::make_unique<Stage>(re, after, b, invert));
  };
  int n_byte_level = 0;
  for (const PreStep& st : spec.steps) {
    switch (st.kind) {
      case PreStep::Kind::Split:
        add(st.regex, st.behavior, st.invert);
        break;
      case PreStep::Kind::Digits:  // Rust's char::is_numeric, one character per match
        add(R"(\p{N})", st.flag ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false);
        break;
      case PreStep::Kind::Punctuation:
        add(kHfPunctuation, st.behavior, false);
        break;
      case PreStep::Kind::Whitespace:
        add(kHfWhitespace, SplitBehavior::Removed, /*invert=*/true);
        break;
      case PreStep::Kind::WhitespaceSplit:
        add(R"(\s)", SplitBehavior::Removed, false);
        break;
      case PreStep::Kind::ByteLevel:
        if (after) break;  // counted below
        add_prefix_space_ = st.add_prefix_space;
        if (st.flag)
          byte_level_regex_ =
              std::make_unique<Stage>(kGpt2Regex, false, SplitBehavior::Isolated, false);
        after = true;
        break;
    }
    if (st.kind == PreStep::Kind::ByteLevel) ++n_byte_level;
  }
  if (n_byte_level != 1)
    throw Error("pre-tokenizer '" + spec.name + "' must have exactly one ByteLevel step (has " +
                std::to_string(n_byte_level) + ")");
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(std::string_view text, std::string& words_out,
                         std::vector<size_t>& ends_out) const {
  auto run = [&](const std::vector<std::unique_ptr<Stage>>& stages, const std::string& buf,
                 Pieces& pieces) {
    Pieces next;
    for (const auto& st : stages) {
      next.clear();
      next.reserve(pieces.size() * 2);
      for (const auto& [b, e] : pieces) st->cut(buf, b, e, next);
      pieces.swap(next);
    }
  };

  std::string raw(text);
  Pieces pieces;
  if (!raw.empty()) pieces.emplace_back(0, raw.size());
  run(raw_stages_, raw, pieces);

  if (add_prefix_space_) {  // a space before each piece that does not start with one
    std::string spaced;
    Pieces spaced_pieces;
    for (const auto& [b, e] : pieces) {
      const size_t start = spaced.size();
      if (raw[b] != ' ') spaced += ' ';
      spaced.append(raw, b, e - b);
      spaced_pieces.emplace_back(start, spaced.size());
    }
    raw.swap(spaced);
    pieces.swap(spaced_pieces);
  }
  if (byte_level_regex_) {
    Pieces next;
    for (const auto& [b, e] : pieces) byte_level_regex_->cut(raw, b, e, next);
    pieces.swap(next);
  }

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
    if (e == b) continue;
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
