// The lexer of the chat-template Jinja subset (chat/chat_template_ast.h): template source to
// tokens. Text between tags is one Text token; the inside of a "{{ }}" or "{% %}" tag is names,
// numbers, strings and operators; comments produce nothing. Whitespace control is applied here,
// as Jinja does with trim_blocks and lstrip_blocks on (what transformers uses): "{%-"/"{{-"/"{#-"
// strip all whitespace before, "-%}"/"-}}"/"-#}" all whitespace after; a block or comment tag
// alone on its line loses the spaces and tabs before it, and the newline right after "%}" or
// "#}" is dropped; "{%+" keeps the spaces before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tzero::jinja {

struct Token {
  enum Kind { Text, ExprOpen, ExprClose, StmtOpen, StmtClose, Name, Int, Float, Str, Op, End };
  Kind kind;
  size_t pos;        // byte offset in the source
  std::string text;  // Text, Name, Op, Str (unescaped), Int and Float (as written)
  int64_t i = 0;
  double f = 0;
};

// The tokens of a template, ending with one End token. Throws tzero::Error (via fail_at) for an
// unclosed tag, comment or string, a bad escape, an out-of-range number or a stray character.
std::vector<Token> lex(const std::string& source);

}  // namespace tzero::jinja
