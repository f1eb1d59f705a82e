// GBNF grammars (llama.cpp's dialect) compiled into a flat form the matcher walks.
//
//   root   ::= object
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"     # a comment
//   digit  ::= [0-9]        name ::= [^"\\\x00-\x1f]+    any ::= .
//
// Terminals are code points: "literals" (escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH),
// [character classes] with ranges and ^ negation, and `.` (any code point). Operators: a b
// (sequence), a | b, ( groups ), and the postfix * + ? {m} {m,} {m,n}. A rule body runs until
// the next `name ::=`, so it may span lines. The start rule is `root`.
//
// Compiling refuses, with a GrammarError naming the line: a syntax error, an undefined rule, a
// rule defined twice, a left-recursive rule (it could be expanded forever without consuming a
// character: `a ::= a "x"`, or `b ::= c* ` with c able to match nothing), no `root`, and a
// grammar beyond the limits below (so a hostile grammar is refused at once, never compiled for
// long).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tzero {

struct GrammarLimits {
  size_t max_text_bytes = 256 * 1024;  // the grammar's source
  size_t max_elements = 200000;        // compiled elements, repetitions expanded
  size_t max_rules = 20000;            // rules, the ones operators create included
  int max_repetition = 1000;           // m and n in {m,n}
};

struct GrammarError : std::runtime_error {
  GrammarError(int line_, const std::string& message)
      : std::runtime_error(line_ > 0 ? "grammar line " + std::to_string(line_) + ": " + message
                                     : "grammar: " + message),
        line(line_) {}
  int line;  // 1-based line of the source, 0 when none applies
};

// A set of code points: sorted, disjoint, inclusive ranges (negation already applied).
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool contains(uint32_t c) const;
  bool intersects(uint32_t lo, uint32_t hi) const;  // some code point in [lo, hi]
};

// The compiled grammar. Each alternative of each rule is a run of elements ending with an
// `end` element; a position is an index into `elements`.
struct Grammar {
  struct Element {
    enum Kind : uint8_t { end, chars, rule } kind = end;
    uint32_t arg = 0;  // chars: index into charsets; rule: the rule id
  };
  std::vector<Element> elements;
  std::vector<CharSet> charsets;
  std::vector<std::vector<uint32_t>> alternatives;  // per rule: the start position of each
  std::vector<std::string> rule_names;              // per rule (generated ones: "name_3")
  uint32_t root = 0;
};

Grammar compile_gbnf(std::string_view text, const GrammarLimits& limits = {});

// A GBNF literal matching exactly these bytes' characters: "..." with \", \\ and control
// characters escaped (text must be valid UTF-8).
std::string gbnf_literal(std::string_view text);

}  // namespace tzero
