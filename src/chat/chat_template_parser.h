// The parser of the chat-template Jinja subset: tokens (chat/chat_template_lexer.h) to the
// program (chat/chat_template_ast.h). One recursive-descent Parser; its statement half
// (template text, {{ }}, {% if/for/set %}) is in chat_template_parse_stmt.cpp, its expression
// half in chat_template_parse_expr.cpp.
//
// Expressions follow Jinja's grammar and precedence: conditional < or < and < not <
// comparisons (== != < > <= >= in, not in) < + - < ~ < * / // % < ** < unary - + < filters
// and tests (| name, is [not] name) < postfix (.attr, [item], [a:b:c], call(...)).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template_ast.h"
#include "chat/chat_template_lexer.h"

namespace tzero::jinja {

// True for the filters the evaluator implements (chat_template_filters.cpp, its filter table);
// the parser refuses any other filter name.
bool is_filter(std::string_view name);

class Parser {
 public:
  Parser(const std::string& s, std::vector<Token> toks) : s_(s), t_(std::move(toks)) {}

  // The whole template.
  Body parse_all();

 private:
  // Tokens.
  const Token& cur() const { return t_[k_]; }
  const Token& next() const { return t_[std::min(k_ + 1, t_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().kind == Token::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Token::Name && cur().text == n; }
  [[noreturn]] void fail(const std::string& what) const { fail_at(s_, cur().pos, what); }
  std::string describe() const;  // the current token, for "expected X, found Y"
  void expect_op(const char* op);
  void expect_close();
  std::string expect_name();

  // Statements (chat_template_parse_stmt.cpp). parse_body reads statements until one of
  // `enders` ({% endif %} etc.); the ender's name goes to *ended, and the tokens after it (up to
  // its "%}") are left for the caller.
  Body parse_body(std::vector<const char*> enders, std::string* ended, size_t opened_at);
  NodeP parse_if(size_t pos);
  NodeP parse_for(size_t pos);
  NodeP parse_set(size_t pos);

  // Expressions (chat_template_parse_expr.cpp), one function per precedence level.
  ExprP make(Expr::Kind kind, size_t pos, std::vector<ExprP> args = {}, std::string text = "");
  ExprP parse_expression();
  ExprP parse_or();
  ExprP parse_and();
  ExprP parse_not();
  ExprP parse_compare();
  ExprP parse_math1();
  ExprP parse_concat();
  ExprP parse_math2();
  ExprP parse_pow();
  ExprP parse_unary(bool with_filter);
  ExprP parse_primary();
  void parse_call_args(ExprP& call);
  ExprP parse_postfix(ExprP e);
  ExprP parse_filters(ExprP e);

  // One level of parser recursion (a nested expression or block): fails past kMaxParseDepth.
  struct Nest {
    Nest(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth)
        p_.fail("nested too deep (more than " + std::to_string(kMaxParseDepth) +
                " levels of expressions and blocks)");
    }
    ~Nest() { --p_.depth_; }
    Parser& p_;
  };

  const std::string& s_;
  std::vector<Token> t_;
  size_t k_ = 0;
  int depth_ = 0;
};

}  // namespace tzero::jinja
