// The string and number parts of JSON Schema to GBNF (json_schema_internal.h): character sets
// and their JSON encoding, `pattern` (an ECMA-262 regex subset) and exact integer ranges.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <map>

#include "grammar/json_schema.h"
#include "grammar/json_schema_internal.h"

namespace tzero::schema_detail {

constexpr uint32_t kMax = 0x10FFFF;

Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (lo > hi) continue;
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.push_back({lo, hi});
  }
  return out;
}

Ranges complement(const Ranges& r, uint32_t max) {
  Ranges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalize(r)) {
    if (lo > max) break;
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= max) out.push_back({next, max});
  return intersect(out, {{0, 0xD7FF}, {0xE000, kMax}});
}

Ranges intersect(const Ranges& a_in, const Ranges& b_in) {
  const Ranges a = normalize(a_in), b = normalize(b_in);
  Ranges out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint32_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo <= hi) out.push_back({lo, hi});
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return out;
}

namespace {

std::string code_point_escape(uint32_t c) {
  char buf[16];
  if (c < 0x80)
    std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
  else if (c <= 0xFFFF)
    std::snprintf(buf, sizeof buf, "\\u%04X", unsigned(c));
  else
    std::snprintf(buf, sizeof buf, "\\U%08X", unsigned(c));
  return buf;
}

bool plain_ascii(uint32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c >= 0x20 && c < 0x7F &&
          std::string_view(" !#$%&'()*+,./:;<=>?@_`{|}~").find(char(c)) != std::string_view::npos);
}

std::string class_char(uint32_t c) {
  return plain_ascii(c) ? std::string(1, char(c)) : code_point_escape(c);
}

// Decodes UTF-8 (the schema's strings are valid UTF-8: nlohmann checks).
std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const uint8_t b = uint8_t(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n && i + size_t(k) < s.size(); ++k)
      c = (c << 6) | (uint8_t(s[i + size_t(k)]) & 0x3F);
    out.push_back(c);
    i += size_t(n);
  }
  return out;
}

}  // namespace

std::string gbnf_literal(std::string_view utf8) {
  std::string out = "\"";
  for (const uint32_t c : code_points(utf8))
    out += plain_ascii(c) || c == '-' || c == '[' || c == ']' || c == '^' ? std::string(1, char(c))
                                                                          : code_point_escape(c);
  return out + "\"";
}

std::string gbnf_class(const Ranges& set) {
  std::string out = "[";
  for (const auto& [lo, hi] : normalize(set)) {
    out += class_char(lo);
    if (hi > lo) out += (hi > lo + 1 ? "-" : "") + class_char(hi);
  }
  return out + "]";
}

std::string encoded_chars(const Ranges& set_in) {
  const Ranges set = normalize(set_in);
  const Ranges special{{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}};
  std::vector<std::string> alts;
  const Ranges raw = intersect(set, complement(special));
  if (!raw.empty()) alts.push_back(gbnf_class(raw));
  std::string low[2];  // \u00XX escapes: the low hex digits, per high digit 0 and 1
  for (const auto& [lo, hi] : intersect(set, special))
    for (uint32_t c = lo; c <= hi; ++c) {
      switch (c) {
        case '"':
          alts.push_back(gbnf_literal("\\\""));
          break;
        case '\\':
          alts.push_back(gbnf_literal("\\\\"));
          break;
        case 0x08:
          alts.push_back(gbnf_literal("\\b"));
          break;
        case 0x09:
          alts.push_back(gbnf_literal("\\t"));
          break;
        case 0x0A:
          alts.push_back(gbnf_literal("\\n"));
          break;
        case 0x0C:
          alts.push_back(gbnf_literal("\\f"));
          break;
        case 0x0D:
          alts.push_back(gbnf_literal("\\r"));
          break;
        case 0x7F:
          alts.push_back(gbnf_literal("\\u007f"));
          break;
        default:
          low[c >> 4] += "0123456789abcdef"[c & 15];
      }
    }
  for (int h = 0; h < 2; ++h)
    if (!low[h].empty())
      alts.push_back(gbnf_literal(std::string("\\u00") + char('0' + h)) +
                     (low[h].size() == 1 ? " " + gbnf_literal(low[h]) : " [" + low[h] + "]"));
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// --- pattern ------------------------------------------------------------------------------------

namespace {

constexpr int kInf = -1;

struct Node {
  enum Kind { set, seq, alt, rep } kind = seq;
  Ranges chars;             // set
  std::vector<Node> kids;   // seq, alt; rep: one
  int min = 0, max = kInf;  // rep
};
Node node(Node::Kind k) {
  Node n;
  n.kind = k;
  return n;
}
Node set_node(Ranges chars) {
  Node n = node(Node::set);
  n.chars = std::move(chars);
  return n;
}

// Characters a regex may match, in both ECMA-262 and Python's re (the validators): the BMP
// without surrogates (ECMA-262 without the u flag matches UTF-16 code units).
const Ranges kRegexChars{{0, 0xD7FF}, {0xE000, 0xFFFF}};
const Ranges kDigit{{'0', '9'}};
const Ranges kWord{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace{{'\t', '\r'}, {' ', ' '}};
const Ranges kAscii{{0, 0x7F}};

class RegexParser {
 public:
  RegexParser(const std::string& p, const std::string& where) : p_(p), where_(where) {}

  // The pattern as a search: each top-level alternative gets any characters on a side it does
  // not anchor.
  Node parse() {
    Node top = node(Node::alt);
    do {
      const bool start = eat('^');
      Node s = parse_seq(0);
      const bool end = eat('$');
      if (!at_end() && peek() != '|')
        fail("`^` and `$` are supported only at the ends of the pattern");
      Node any = node(Node::rep);
      any.kids.push_back(set_node(complement({})));
      Node whole = node(Node::seq);
      if (!start) whole.kids.push_back(any);
      whole.kids.push_back(std::move(s));
      if (!end) whole.kids.push_back(any);
      top.kids.push_back(std::move(whole));
    } while (eat('|'));
    if (!at_end()) fail("unexpected `)`");
    return top;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw SchemaError(
        where_, "pattern: " + why + " (at offset " + std::to_string(i_) + " of \"" + p_ + "\")");
  }
  bool at_end() const { return i_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[i_]; }
  bool eat(char c) {
    if (peek() != c || at_end()) return false;
    ++i_;
    return true;
  }
  uint32_t next_cp() {
    const uint8_t b = uint8_t(p_[i_]);
    const size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    const std::vector<uint32_t> cp = code_points(std::string_view(p_).substr(i_, n));
    i_ += n;
    return cp.empty() ? 0 : cp[0];
  }

  Node parse_alt(int depth) {
    Node a = node(Node::alt);
    a.kids.push_back(parse_seq(depth));
    while (eat('|')) a.kids.push_back(parse_seq(depth));
    return a.kids.size() == 1 ? std::move(a.kids[0]) : a;
  }

  Node parse_seq(int depth) {
    Node s = node(Node::seq);
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (depth == 0 && peek() == '$' && (i_ + 1 == p_.size() || p_[i_ + 1] == '|')) break;
      Node atom = parse_atom(depth);
      s.kids.push_back(parse_quantifier(std::move(atom)));
    }
    return s;
  }

  Node parse_quantifier(Node atom) {
    int lo = -2, hi = kInf;
    if (eat('*'))
      lo = 0;
    else if (eat('+'))
      lo = 1;
    else if (eat('?'))
      lo = 0, hi = 1;
    else if (peek() == '{') {
      ++i_;
      lo = number();
      hi = lo;
      if (eat(',')) hi = peek() == '}' ? kInf : number();
      if (!eat('}')) fail("a `{` that is not a quantifier {m}, {m,} or {m,n}");
      if (hi != kInf && hi < lo) fail("a quantifier {m,n} with n < m");
      if (lo > 1000 || hi > 1000) fail("a quantifier above 1000");
    }
    if (lo == -2) return atom;
    eat('?');  // lazy: the same language
    if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')
      fail("a quantifier after a quantifier");
    Node r = node(Node::rep);
    r.min = lo;
    r.max = hi;
    r.kids.push_back(std::move(atom));
    return r;
  }

  int number() {
    if (!std::isdigit(uint8_t(peek()))) fail("a `{` that is not a quantifier {m}, {m,} or {m,n}");
    long v = 0;
    while (std::isdigit(uint8_t(peek())) && v < 100000) v = v * 10 + (p_[i_++] - '0');
    return int(std::min(v, 100000L));
  }

  Node parse_atom(int depth) {
    const char c = peek();
    if (c == '(') {
      ++i_;
      if (eat('?')) {
        if (peek() == '=' || peek() == '!' ||
            (peek() == '<' && (p_.compare(i_, 2, "<=") == 0 || p_.compare(i_, 2, "<!") == 0)))
          fail("lookaround is not supported");
        if (!eat(':')) fail("only the group forms (...) and (?:...) are supported");
      }
      if (depth >= 32) fail("groups nested deeper than 32");
      Node inner = parse_alt(depth + 1);
      if (!eat(')')) fail("a `(` without its `)`");
      return inner;
    }
    if (c == '*' || c == '+' || c == '?' || c == '{')
      fail(std::string("`") + c + "` has nothing to repeat");
    if (c == '^' || c == '$') fail("`^` and `$` are supported only at the ends of the pattern");
    if (c == '[') return set_node(parse_class());
    if (c == '.') {
      ++i_;  // any character but the line terminators (ECMA-262: \n \r U+2028 U+2029)
      return set_node(
          intersect(kRegexChars, complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})));
    }
    if (c == '\\') {
      ++i_;
      bool shorthand = false;
      return set_node(escape(false, shorthand));
    }
    const uint32_t cp = next_cp();
    return set_node({{cp, cp}});
  }

  // After a backslash. in_class: \b is a backspace, not a word boundary.
  Ranges escape(bool in_class, bool& shorthand) {
    if (at_end()) fail("a `\\` at the end");
    const char e = p_[i_++];
    auto one = [](uint32_t c) { return Ranges{{c, c}}; };
    switch (e) {
      case 'd':
        shorthand = true;
        return kDigit;
      case 'w':
        shorthand = true;
        return kWord;
      case 's':
        shorthand = true;
        return kSpace;
      // The complements are kept to ASCII: Python's \D \W \S leave out the non-ASCII digits,
      // letters and spaces that ECMA-262's take.
      case 'D':
        shorthand = true;
        return intersect(kAscii, complement(kDigit));
      case 'W':
        shorthand = true;
        return intersect(kAscii, complement(kWord));
      case 'S':
        shorthand = true;
        return intersect(kAscii, complement(kSpace));
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case '0':
        if (std::isdigit(uint8_t(peek()))) fail("octal escapes are not supported");
        return one(0);
      case 'x':
        return one(hex(2));
      case 'u': {
        const uint32_t c = hex(4);
        if (c >= 0xD800 && c <= 0xDFFF) fail("surrogate escapes are not supported");
        return one(c);
      }
      case 'b':
        if (in_class) return one(0x08);
        fail("word boundaries (\\b) are not supported");
      case 'B':
        fail("word boundaries (\\B) are not supported");
      case 'p':
      case 'P':
        fail("Unicode property escapes are not supported");
      case 'c':
        fail("control escapes (\\c) are not supported");
      case 'k':
        fail("named backreferences are not supported");
      default:
        if (e >= '1' && e <= '9') fail("backreferences are not supported");
        if (std::isalnum(uint8_t(e))) fail(std::string("unknown escape `\\") + e + "`");
        --i_;
        return one(next_cp());
    }
  }

  uint32_t hex(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const char h = peek();
      if (!std::isxdigit(uint8_t(h))) fail("expected " + std::to_string(n) + " hexadecimal digits");
      ++i_;
      v = v * 16 + uint32_t(std::isdigit(uint8_t(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
    }
    return v;
  }

  Ranges parse_class() {
    ++i_;  // [
    const bool negate = eat('^');
    if (peek() == ']') fail("a class starting with `]` (ECMA-262 and Python disagree)");
    Ranges set;
    bool shorthand = false;
    while (!at_end() && peek() != ']') {
      Ranges item = class_atom(shorthand);
      if (peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        Ranges hi = class_atom(shorthand);
        if (item.size() != 1 || hi.size() != 1 || item[0].first != item[0].second ||
            hi[0].first != hi[0].second)
          fail("a class range with a shorthand (\\d, \\w, \\s) at one end");
        if (hi[0].first < item[0].first) fail("a class range out of order");
        item = {{item[0].first, hi[0].first}};
      }
      set.insert(set.end(), item.begin(), item.end());
    }
    if (!eat(']')) fail("a `[` without its `]`");
    set = normalize(set);
    if (negate) {
      set = complement(set);
      if (shorthand) set = intersect(set, kAscii);  // Python's [^\d] leaves out Unicode digits
    }
    return intersect(set, kRegexChars);
  }

  Ranges class_atom(bool& shorthand) {
    if (eat('\\')) return escape(true, shorthand);
    const uint32_t c = next_cp();
    return {{c, c}};
  }

  const std::string& p_;
  const std::string& where_;
  size_t i_ = 0;
};

// Lengths (in characters) with every repetition {m,n} narrowed to {min(m + raise, n'), n'},
// n' = min(n, m + cap) (cap < 0: unchanged).
struct Shape {
  int raise = 0, cap = kInf;
};
int rep_max(const Node& n, const Shape& s) {
  if (s.cap == kInf) return n.max;
  return n.max == kInf ? n.min + s.cap : std::min(n.max, n.min + s.cap);
}
int rep_min(const Node& n, const Shape& s) {
  const int hi = rep_max(n, s);
  return hi == kInf ? n.min + s.raise : std::min(n.min + s.raise, hi);
}

long length_min(const Node& n, const Shape& s) {
  switch (n.kind) {
    case Node::set:
      return 1;
    case Node::seq: {
      long t = 0;
      for (const Node& k : n.kids) t += length_min(k, s);
      return t;
    }
    case Node::alt: {
      long t = std::numeric_limits<long>::max();
      for (const Node& k : n.kids) t = std::min(t, length_min(k, s));
      return t;
    }
    case Node::rep:
      return long(rep_min(n, s)) * length_min(n.kids[0], s);
  }
  return 0;
}

constexpr long kLongInf = std::numeric_limits<long>::max() / 4;

long length_max(const Node& n, const Shape& s) {
  switch (n.kind) {
    case Node::set:
      return 1;
    case Node::seq: {
      long t = 0;
      for (const Node& k : n.kids) t = std::min(kLongInf, t + length_max(k, s));
      return t;
    }
    case Node::alt: {
      long t = 0;
      for (const Node& k : n.kids) t = std::max(t, length_max(k, s));
      return t;
    }
    case Node::rep: {
      const long inner = length_max(n.kids[0], s);
      const int hi = rep_max(n, s);
      if (inner == 0) return 0;
      if (hi == kInf || inner >= kLongInf) return kLongInf;
      return std::min(kLongInf, long(hi) * inner);
    }
  }
  return 0;
}

class Emitter {
 public:
  Emitter(const Shape& s, const std::string& where, const AddRule& add)
      : s_(s), where_(where), add_(add) {}

  std::string emit(const Node& n) {
    switch (n.kind) {
      case Node::set: {
        if (n.chars.empty()) throw SchemaError(where_, "pattern: a class that matches nothing");
        auto it = sets_.find(n.chars);
        if (it != sets_.end()) return it->second;
        const std::string e = encoded_chars(n.chars);  // one class or literal stays inline
        return sets_[n.chars] = e.find(' ') == std::string::npos ? e : add_(e);
      }
      case Node::seq: {
        std::string out;
        for (const Node& k : n.kids) {
          const std::string e = emit(k);
          if (!e.empty()) out += (out.empty() ? "" : " ") + e;
        }
        return n.kids.size() > 1 && !out.empty() ? "(" + out + ")" : out;
      }
      case Node::alt: {
        std::string out = "(";
        for (size_t i = 0; i < n.kids.size(); ++i) {
          const std::string e = emit(n.kids[i]);
          out += (i ? " | " : "") + (e.empty() ? std::string("\"\"") : e);
        }
        return out + ")";
      }
      case Node::rep: {
        const int lo = rep_min(n, s_), hi = rep_max(n, s_);
        if (hi == 0) return "";
        const std::string inner = emit(n.kids[0]);
        if (inner.empty()) return "";
        if (hi == kInf && length_min(n.kids[0], s_) == 0)
          throw SchemaError(where_,
                            "pattern: an unbounded repetition of something that can be empty");
        const bool name = std::all_of(inner.begin(), inner.end(), [](char c) {
          return std::isalnum(uint8_t(c)) || c == '-' || c == '_';
        });
        const std::string item = name || (inner.front() == '[' && inner.back() == ']' &&
                                          inner.find(' ') == std::string::npos)
                                     ? inner
                                     : "(" + inner + ")";
        if (lo > 1000 || hi > 1000) throw SchemaError(where_, "pattern: a repetition above 1000");
        if (lo == 0 && hi == kInf) return item + "*";
        if (lo == 1 && hi == kInf) return item + "+";
        if (lo == 0 && hi == 1) return item + "?";
        if (hi == kInf) return item + "{" + std::to_string(lo) + ",}";
        if (lo == hi) return lo == 1 ? item : item + "{" + std::to_string(lo) + "}";
        return item + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
      }
    }
    return "";
  }

 private:
  Shape s_;
  const std::string& where_;
  const AddRule& add_;
  std::map<Ranges, std::string> sets_;
};

}  // namespace

std::string pattern_gbnf(const std::string& pattern, const std::string& where, int min_len,
                         int max_len, const AddRule& add_rule) {
  const Node top = RegexParser(pattern, where).parse();
  Shape shape;
  if (min_len > 0 || max_len >= 0) {
    // Narrow the repetitions just enough that every string the grammar admits has a length in
    // bounds: raise their minimums by the least amount, cap their maximums at the most.
    const int limit = max_len >= 0 ? max_len : 1000;
    int lo = 0, hi = limit + 1;  // smallest raise in [0, limit] with length_min >= min_len
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      (length_min(top, {mid, kInf}) >= min_len) ? hi = mid : lo = mid + 1;
    }
    if (lo > limit)
      throw SchemaError(where, "pattern: the strings it matches are shorter than minLength");
    shape.raise = lo;
    if (max_len >= 0) {
      int a = lo, b = max_len + 1;  // largest cap in [raise, max_len] with length_max <= max_len
      if (length_max(top, {shape.raise, a}) > max_len)
        throw SchemaError(where, "pattern: the strings it matches cannot be made to fit maxLength");
      while (b - a > 1) {
        const int mid = (a + b) / 2;
        (length_max(top, {shape.raise, mid}) <= max_len) ? a = mid : b = mid;
      }
      shape.cap = a;
      if (length_min(top, shape) < min_len || length_min(top, shape) > max_len)
        throw SchemaError(where, "pattern: no string it matches fits minLength and maxLength");
    }
  }
  return Emitter(shape, where, add_rule).emit(top);
}

// --- integer ranges -----------------------------------------------------------------------------

namespace {

bool all_of_digit(const std::string& s, char d) {
  return std::all_of(s.begin(), s.end(), [d](char c) { return c == d; });
}

std::string digits(int r) {
  return r == 0 ? "" : r == 1 ? " [0-9]" : " [0-9]{" + std::to_string(r) + "}";
}

std::string digit_class(char a, char b) {
  return a == b ? "\"" + std::string(1, a) + "\""
                : "[" + std::string(1, a) + "-" + std::string(1, b) + "]";
}

// Equal-length decimal strings a <= b: the strings of that length between them.
std::string same_length(const std::string& a, const std::string& b) {
  if (a == b) return "\"" + a + "\"";
  size_t i = 0;
  while (a[i] == b[i]) ++i;
  const std::string p = i ? "\"" + a.substr(0, i) + "\" " : "";
  const std::string ra = a.substr(i + 1), rb = b.substr(i + 1);
  const int r = int(ra.size());
  char x = a[i], y = b[i];
  std::vector<std::string> alts;
  if (!all_of_digit(ra, '0')) {
    alts.push_back(p + digit_class(x, x) + " " + same_length(ra, std::string(size_t(r), '9')));
    ++x;
  }
  std::string high;
  if (!all_of_digit(rb, '9')) {
    high = p + digit_class(y, y) + " " + same_length(std::string(size_t(r), '0'), rb);
    --y;
  }
  if (x <= y) alts.push_back(p + digit_class(x, y) + digits(r));
  if (!high.empty()) alts.push_back(high);
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
  return out + ")";
}

// Decimal strings without leading zeros, lo <= hi.
std::string unsigned_range(const std::string& lo, const std::string& hi) {
  std::vector<std::string> alts;
  for (size_t len = lo.size(); len <= hi.size(); ++len) {
    const std::string a = len == lo.size() ? lo : "1" + std::string(len - 1, '0');
    const std::string b = len == hi.size() ? hi : std::string(len, '9');
    alts.push_back(same_length(a, b));
  }
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
  return out + ")";
}

std::string magnitude(int64_t v) {  // |v| in decimal, INT64_MIN included
  return v >= 0 ? std::to_string(v) : std::to_string(uint64_t(-(v + 1)) + 1);
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi, int max_digits,
                               const std::string& where) {
  if (lo && hi && *lo > *hi) throw SchemaError(where, "no integer is within the bounds");
  const auto nines = [&](const std::string& at_least) {
    return std::string(std::max(size_t(max_digits), at_least.size()), '9');
  };
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {  // the negative ones: magnitudes [from, to]
    const std::string from = (!hi || *hi >= 0) ? "1" : magnitude(*hi);
    const std::string to = lo ? magnitude(*lo) : nines(from);
    alts.push_back("\"-\" " + unsigned_range(from, to));
  }
  if (!hi || *hi >= 0) {
    const std::string from = (!lo || *lo < 0) ? "0" : std::to_string(*lo);
    alts.push_back(unsigned_range(from, hi ? std::to_string(*hi) : nines(from)));
  }
  if (alts.size() == 1) return alts[0];
  return "(" + alts[0] + " | " + alts[1] + ")";
}

}  // namespace tzero::schema_detail
