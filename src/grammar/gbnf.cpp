#include "grammar/gbnf.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

namespace tzero {

bool CharSet::contains(uint32_t c) const {
  auto it = std::upper_bound(
      ranges.begin(), ranges.end(), c,
      [](uint32_t v, const std::pair<uint32_t, uint32_t>& r) { return v < r.first; });
  return it != ranges.begin() && std::prev(it)->second >= c;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  for (const auto& [a, b] : ranges)
    if (a <= hi && b >= lo) return true;
  return false;
}

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxNesting = 64;  // parentheses inside parentheses

using Elem = Grammar::Element;
using Seq = std::vector<Elem>;

CharSet normalized(std::vector<std::pair<uint32_t, uint32_t>> r, bool negate) {
  std::sort(r.begin(), r.end());
  CharSet out;
  for (const auto& [a, b] : r) {
    if (!out.ranges.empty() && a <= out.ranges.back().second + 1)
      out.ranges.back().second = std::max(out.ranges.back().second, b);
    else
      out.ranges.push_back({a, b});
  }
  if (!negate) return out;
  CharSet neg;
  uint32_t next = 0;
  for (const auto& [a, b] : out.ranges) {
    if (a > next) neg.ranges.push_back({next, a - 1});
    next = b + 1;
  }
  if (next <= kMaxCodePoint) neg.ranges.push_back({next, kMaxCodePoint});
  return neg;
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : s_(text), limits_(limits) {}

  Grammar run() {
    if (s_.size() > limits_.max_text_bytes)
      throw GrammarError(0, "the grammar is " + std::to_string(s_.size()) +
                                " bytes, more than the limit of " +
                                std::to_string(limits_.max_text_bytes));
    skip_space();
    if (at_end()) throw GrammarError(1, "the grammar is empty (it needs a `root ::= ...` rule)");
    while (!at_end()) {
      const int line = line_;
      const std::string name = parse_name();
      skip_space();
      if (!consume("::=")) fail("expected `::=` after the rule name `" + name + "`");
      const uint32_t id = rule_id(name, line);
      if (defined_[id]) fail("the rule `" + name + "` is defined twice");
      defined_[id] = true;
      def_line_[id] = line;
      skip_space();
      rules_[id] = parse_alternatives(name, 0);
    }
    auto root = ids_.find("root");
    if (root == ids_.end() || !defined_[root->second])
      throw GrammarError(0, "the grammar has no `root` rule");
    for (uint32_t r = 0; r < rules_.size(); ++r)
      if (!defined_[r])
        throw GrammarError(first_use_[r], "the rule `" + names_[r] + "` is used but not defined");
    check_left_recursion();
    return flatten(root->second);
  }

 private:
  // --- lexing -------------------------------------------------------------------------------
  bool at_end() const { return i_ >= s_.size(); }
  char peek(size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  [[noreturn]] void fail(const std::string& m) const { throw GrammarError(line_, m); }

  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n') ++i_;
      } else if (c == '\n') {
        ++line_, ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
      } else {
        break;
      }
    }
  }
  bool consume(std::string_view t) {
    if (s_.substr(i_, t.size()) != t) return false;
    i_ += t.size();
    return true;
  }
  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  std::string parse_name() {
    const size_t start = i_;
    while (!at_end() && name_char(peek())) ++i_;
    if (i_ == start) {
      if (at_end()) fail("expected a rule name");
      fail(std::string("unexpected character '") + printable(peek()) + "'");
    }
    return std::string(s_.substr(start, i_ - start));
  }
  static std::string printable(char c) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(static_cast<unsigned char>(c)));
    return buf;
  }
  // Is a `name ::=` next (the start of the next rule)?
  bool rule_starts_here() const {
    size_t k = i_;
    while (k < s_.size() && name_char(s_[k])) ++k;
    if (k == i_) return false;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t' || s_[k] == '\r' || s_[k] == '\n')) ++k;
    return s_.substr(k, 3) == "::=";
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int d = 0; d < digits; ++d) {
      const char c = peek();
      int x = -1;
      if (c >= '0' && c <= '9') x = c - '0';
      if (c >= 'a' && c <= 'f') x = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') x = c - 'A' + 10;
      if (x < 0) fail("expected " + std::to_string(digits) + " hexadecimal digits in an escape");
      v = v * 16 + uint32_t(x);
      ++i_;
    }
    return v;
  }
  // One code point of a literal or a class (UTF-8 decoded, escapes applied).
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of the grammar");
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++i_;
      const char e = peek();
      ++i_;
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
          return uint32_t(e);
        case 'x':
          return hex(2);
        case 'u':
          return hex(4);
        case 'U':
          return hex(8);
        default:
          fail(std::string("unknown escape '\\") + printable(e) + "'");
      }
    }
    if (c == '\n') fail("a line break inside a literal or class (write \\n)");
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i_ + size_t(n) > s_.size()) fail("invalid UTF-8 in the grammar");
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s_[i_ + size_t(k)]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8 in the grammar");
      v = (v << 6) | (b & 0x3F);
    }
    i_ += size_t(n);
    return v;
  }
  int parse_int() {
    const size_t start = i_;
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > limits_.max_repetition)
        fail("a repetition count above the limit of " + std::to_string(limits_.max_repetition));
      ++i_;
    }
    if (i_ == start) fail("expected a number in { }");
    return int(v);
  }

  // --- rules --------------------------------------------------------------------------------
  uint32_t rule_id(const std::string& name, int line) {
    auto [it, fresh] = ids_.emplace(name, uint32_t(rules_.size()));
    if (fresh) new_rule(name, line);
    return it->second;
  }
  uint32_t new_rule(const std::string& name, int line) {
    if (rules_.size() >= limits_.max_rules)
      fail("more than " + std::to_string(limits_.max_rules) + " rules");
    rules_.emplace_back();
    names_.push_back(name);
    defined_.push_back(false);
    first_use_.push_back(line);
    def_line_.push_back(line);
    return uint32_t(rules_.size() - 1);
  }
  uint32_t generated(const std::string& parent, std::vector<Seq> alts) {
    const uint32_t id = new_rule(parent + "_" + std::to_string(rules_.size()), line_);
    defined_[id] = true;
    for (const Seq& a : alts) count(a.size() + 1);
    rules_[id] = std::move(alts);
    return id;
  }
  void count(size_t n) {
    n_elements_ += n;
    if (n_elements_ > limits_.max_elements)
      fail("the grammar expands to more than " + std::to_string(limits_.max_elements) +
           " elements");
  }
  Elem chars(CharSet cs) {
    charsets_.push_back(std::move(cs));
    return {Elem::chars, uint32_t(charsets_.size() - 1)};
  }

  std::vector<Seq> parse_alternatives(const std::string& name, int depth) {
    if (depth > kMaxNesting) fail("parentheses nested deeper than " + std::to_string(kMaxNesting));
    std::vector<Seq> alts;
    alts.push_back(parse_sequence(name, depth));
    while (peek() == '|') {
      ++i_;
      skip_space();
      alts.push_back(parse_sequence(name, depth));
    }
    for (const Seq& a : alts) count(a.size() + 1);
    return alts;
  }

  Seq parse_sequence(const std::string& name, int depth) {
    Seq seq;
    size_t last = SIZE_MAX;  // start of the last item in seq (what an operator applies to)
    while (!at_end()) {
      const char c = peek();
      if (c == '|' || c == ')') break;
      if (name_char(c) && rule_starts_here()) break;
      if (c == '"') {
        ++i_;
        last = seq.size();
        while (peek() != '"') {
          if (at_end()) fail("unterminated literal");
          const uint32_t cp = parse_char();
          seq.push_back(chars(CharSet{{{cp, cp}}}));
        }
        ++i_;
        if (seq.size() == last) last = SIZE_MAX;  // "": nothing to repeat
      } else if (c == '[') {
        ++i_;
        const bool negate = peek() == '^';
        if (negate) ++i_;
        std::vector<std::pair<uint32_t, uint32_t>> r;
        while (peek() != ']') {
          if (at_end()) fail("unterminated character class");
          const uint32_t a = parse_char();
          uint32_t b = a;
          if (peek() == '-' && peek(1) != ']') {
            ++i_;
            b = parse_char();
            if (b < a) fail("a character range whose end is before its start");
          }
          r.push_back({a, b});
        }
        ++i_;
        last = seq.size();
        seq.push_back(chars(normalized(std::move(r), negate)));
      } else if (c == '.') {
        ++i_;
        last = seq.size();
        seq.push_back(chars(CharSet{{{0, kMaxCodePoint}}}));
      } else if (c == '(') {
        ++i_;
        skip_space();
        std::vector<Seq> alts = parse_alternatives(name, depth + 1);
        if (peek() != ')') fail("expected ')'");
        ++i_;
        last = seq.size();
        seq.push_back({Elem::rule, generated(name, std::move(alts))});
      } else if (name_char(c)) {
        const int line = line_;
        const std::string ref = parse_name();
        last = seq.size();
        seq.push_back({Elem::rule, rule_id(ref, line)});
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last == SIZE_MAX) fail(std::string("'") + c + "' has nothing before it to repeat");
        ++i_;
        int lo = 0, hi = -1;  // hi -1: unbounded
        if (c == '+') lo = 1;
        if (c == '?') hi = 1;
        if (c == '{') {
          skip_space();
          lo = parse_int();
          skip_space();
          hi = lo;
          if (peek() == ',') {
            ++i_;
            skip_space();
            hi = peek() == '}' ? -1 : parse_int();
            skip_space();
          }
          if (peek() != '}') fail("expected '}'");
          ++i_;
          if (hi >= 0 && hi < lo) fail("a repetition {m,n} with n < m");
        }
        Seq item(seq.begin() + std::ptrdiff_t(last), seq.end());
        seq.resize(last);
        repeat(name, item, lo, hi, seq);
        last = SIZE_MAX;
      } else {
        fail(std::string("unexpected character '") + printable(c) + "'");
      }
      skip_space();
    }
    return seq;
  }

  // Appends item{lo,hi} to seq: lo copies, then a right-recursive rule for an unbounded tail
  // or a chain of optional rules for a bounded one.
  void repeat(const std::string& name, const Seq& item, int lo, int hi, Seq& seq) {
    for (int k = 0; k < lo; ++k) {
      count(item.size());
      seq.insert(seq.end(), item.begin(), item.end());
    }
    if (hi < 0) {
      const uint32_t id = new_rule(name + "_" + std::to_string(rules_.size()), line_);
      defined_[id] = true;
      Seq more = item;
      more.push_back({Elem::rule, id});
      count(more.size() + 2);
      rules_[id] = {more, Seq{}};
      seq.push_back({Elem::rule, id});
      return;
    }
    uint32_t tail = UINT32_MAX;
    for (int k = hi - lo; k > 0; --k) {
      Seq more = item;
      if (tail != UINT32_MAX) more.push_back({Elem::rule, tail});
      tail = generated(name, {more, Seq{}});
    }
    if (tail != UINT32_MAX) seq.push_back({Elem::rule, tail});
  }

  // --- checks and output --------------------------------------------------------------------
  void check_left_recursion() const {
    const size_t n = rules_.size();
    // Which rules can match nothing: a work list over the alternatives (linear in the grammar's
    // size; a fixpoint of whole passes would take one pass per link of a 20,000-rule chain).
    std::vector<bool> nullable(n, false);
    std::vector<std::vector<size_t>> alt_count(n);                     // rule refs not yet nullable
    std::vector<std::vector<std::pair<uint32_t, size_t>>> used_in(n);  // (rule, alt) per ref
    std::vector<uint32_t> newly;
    for (size_t r = 0; r < n; ++r) {
      alt_count[r].assign(rules_[r].size(), 0);
      for (size_t a = 0; a < rules_[r].size(); ++a) {
        const Seq& seq = rules_[r][a];
        if (std::any_of(seq.begin(), seq.end(), [](const Elem& e) { return e.kind != Elem::rule; }))
          continue;  // a character: never nullable (its count stays 0, but it is never checked)
        alt_count[r][a] = seq.size();
        for (const Elem& e : seq) used_in[e.arg].push_back({uint32_t(r), a});
        if (seq.empty() && !nullable[r]) nullable[r] = true, newly.push_back(uint32_t(r));
      }
    }
    while (!newly.empty()) {
      const uint32_t s = newly.back();
      newly.pop_back();
      for (const auto& [r, a] : used_in[s])
        if (--alt_count[r][a] == 0 && !nullable[r]) nullable[r] = true, newly.push_back(r);
    }
    // r -> s when s can come first in r (everything before it can match nothing).
    std::vector<std::vector<uint32_t>> first(n);
    for (size_t r = 0; r < n; ++r)
      for (const Seq& a : rules_[r])
        for (const Elem& e : a) {
          if (e.kind != Elem::rule) break;
          first[r].push_back(e.arg);
          if (!nullable[e.arg]) break;
        }
    std::vector<uint8_t> mark(n, 0);  // 0 new, 1 on the path, 2 done
    for (size_t start = 0; start < n; ++start) {
      if (mark[start]) continue;
      std::vector<std::pair<uint32_t, size_t>> stack{{uint32_t(start), 0}};
      mark[start] = 1;
      while (!stack.empty()) {
        auto& [r, k] = stack.back();
        if (k == first[r].size()) {
          mark[r] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t s = first[r][k++];
        if (mark[s] == 1) {
          // Name the user's rule: generated ones carry their parent's name.
          throw GrammarError(def_line_[s], "the rule `" + names_[s] +
                                               "` is left-recursive (it can reach itself "
                                               "without matching a character)");
        }
        if (mark[s] == 0) mark[s] = 1, stack.push_back({s, 0});
      }
    }
  }

  Grammar flatten(uint32_t root) {
    Grammar g;
    g.root = root;
    g.charsets = std::move(charsets_);
    g.rule_names = names_;
    g.alternatives.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
      for (const Seq& a : rules_[r]) {
        g.alternatives[r].push_back(uint32_t(g.elements.size()));
        g.elements.insert(g.elements.end(), a.begin(), a.end());
        g.elements.push_back({Elem::end, 0});
      }
    return g;
  }

  std::string_view s_;
  const GrammarLimits& limits_;
  size_t i_ = 0;
  int line_ = 1;
  size_t n_elements_ = 0;
  std::map<std::string, uint32_t> ids_;
  std::vector<std::vector<Seq>> rules_;
  std::vector<std::string> names_;
  std::vector<bool> defined_;
  std::vector<int> first_use_, def_line_;
  std::vector<CharSet> charsets_;
};

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

Grammar compile_gbnf(std::string_view text, const GrammarLimits& limits) {
  return Parser(text, limits).run();
}

}  // namespace tzero
