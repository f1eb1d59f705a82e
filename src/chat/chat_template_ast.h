// Internals of the chat-template interpreter (chat/chat_template.h): the parsed program
// (statements and expressions, each with its offset in the source for error messages). The
// parser (chat_template_parser.h) builds it, the evaluator (chat_template_eval.h) runs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tzero::jinja {

// "line L, column C" of a byte offset (1-based; columns count bytes).
std::string where(const std::string& source, size_t offset);
// Throws tzero::Error("chat template: line L, column C: what").
[[noreturn]] void fail_at(const std::string& source, size_t offset, const std::string& what);

struct Expr;
using ExprP = std::shared_ptr<Expr>;

struct Expr {
  enum Kind {
    Str,    // text: a string literal
    Int,    // i
    Float,  // f
    Bool,   // i (0/1)
    None,
    Name,    // text: a variable
    List,    // args: the items (also tuples)
    Dict,    // args: key, value, key, value, ...
    Attr,    // args[0].text
    Item,    // args[0][args[1]]
    Slice,   // args[0][args[1]:args[2]:args[3]], null parts absent
    Call,    // args[0](args[1..], kwargs)
    Filter,  // args[0] | text(args[1..], kwargs)
    Test,    // args[0] is [not] text(args[1..]); negate
    Unary,   // text ("not", "-", "+") args[0]
    Binary,  // args[0] text args[1]: or and == != < > <= >= in notin + - * / // % ** ~
    Cond,    // args[0] if args[1] else args[2] (args[2] null: undefined)
  };
  Kind kind = None;
  size_t pos = 0;
  std::string text;
  int64_t i = 0;
  double f = 0;
  bool negate = false;
  int depth = 1;  // 1 + the deepest argument's: bounded by kMaxNesting (the evaluator recurses)
  std::vector<ExprP> args;
  std::vector<std::pair<std::string, ExprP>> kwargs;
};

struct Node;
using NodeP = std::shared_ptr<Node>;
using Body = std::vector<NodeP>;

struct Node {
  enum Kind {
    Text,    // text
    Output,  // {{ expr }}
    If,      // conds[k] -> bodies[k]; bodies.size() == conds.size() + 1 when there is an else
    For,     // for names in expr [if cond]: bodies[0]; else bodies[1] (optional)
    Set,     // set names[0] (or names[0].names[1] when attr) = expr
  };
  Kind kind = Text;
  size_t pos = 0;
  std::string text;
  ExprP expr;
  ExprP cond;  // For: the loop filter (null when none)
  std::vector<ExprP> conds;
  std::vector<Body> bodies;
  std::vector<std::string> names;
  bool attr = false;  // Set: names[0].names[1] = expr (a namespace attribute)
};

struct Program {
  std::string source;
  Body body;
};

// Parses a template. Throws tzero::Error (via fail_at) for syntax errors and for tags, filters
// and tests outside the supported subset.
// Limits that make a hostile template a clear error instead of a stack overflow in the parser,
// the evaluator or the AST's destruction: expressions and blocks nested (or chained, as in
// `1 + 1 + ...`) at most kMaxNesting deep, and at most kMaxTemplateBytes of source. Real
// templates stay far below both (the largest published ones are a few hundred lines).
constexpr int kMaxNesting = 256;
constexpr int kMaxParseDepth = 2 * kMaxNesting;  // the parser's own recursion (a few per level)
constexpr size_t kMaxTemplateBytes = size_t(1) << 20;

// Throws tzero::Error ("chat template: line L, column C: ...") for a template it cannot run,
// over the limits above included.
std::unique_ptr<Program> parse(const std::string& source);

}  // namespace tzero::jinja
