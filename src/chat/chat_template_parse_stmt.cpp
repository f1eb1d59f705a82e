// The statement half of the chat-template parser (chat/chat_template_parser.h): template text,
// {{ expr }} outputs and the {% if %}, {% for %} and {% set %} tags; and parse(), the entry.
#include <memory>

#include "base/error.h"
#include "chat/chat_template_ast.h"
#include "chat/chat_template_lexer.h"
#include "chat/chat_template_parser.h"

namespace tzero::jinja {

std::string Parser::describe() const {
  switch (cur().kind) {
    case Token::End:
      return "end of template";
    case Token::ExprClose:
      return "'}}'";
    case Token::StmtClose:
      return "'%}'";
    case Token::Text:
      return "text";
    case Token::Str:
      return "a string";
    case Token::Int:
    case Token::Float:
      return "a number";
    default:
      return "'" + cur().text + "'";
  }
}

void Parser::expect_op(const char* op) {
  if (!is_op(op)) fail(std::string("expected '") + op + "', found " + describe());
  ++k_;
}

void Parser::expect_close() {
  if (cur().kind != Token::StmtClose) fail("expected '%}', found " + describe());
  ++k_;
}

std::string Parser::expect_name() {
  if (cur().kind != Token::Name) fail("expected a name, found " + describe());
  return t_[k_++].text;
}

Body Parser::parse_all() {
  std::string ended;
  return parse_body({}, &ended, 0);
}

Body Parser::parse_body(std::vector<const char*> enders, std::string* ended, size_t opened_at) {
  const Nest nest(*this);
  Body body;
  while (true) {
    const Token& t = cur();
    if (t.kind == Token::End) {
      if (!enders.empty())
        fail_at(s_, opened_at,
                std::string("this block is never closed (no {% ") + enders.back() + " %})");
      return body;
    }
    if (t.kind == Token::Text) {
      auto n = std::make_shared<Node>();
      n->kind = Node::Text;
      n->pos = t.pos;
      n->text = t.text;
      body.push_back(n);
      ++k_;
      continue;
    }
    if (t.kind == Token::ExprOpen) {
      ++k_;
      auto n = std::make_shared<Node>();
      n->kind = Node::Output;
      n->pos = t.pos;
      n->expr = parse_expression();
      if (cur().kind != Token::ExprClose) fail("expected '}}', found " + describe());
      ++k_;
      body.push_back(n);
      continue;
    }
    if (t.kind != Token::StmtOpen) fail("unexpected " + describe());
    ++k_;
    if (cur().kind != Token::Name) fail("expected a tag name, found " + describe());
    const std::string tag = cur().text;
    for (const char* e : enders)
      if (tag == e) {
        ++k_;
        *ended = tag;
        return body;
      }
    const size_t pos = cur().pos;
    ++k_;
    if (tag == "if")
      body.push_back(parse_if(pos));
    else if (tag == "for")
      body.push_back(parse_for(pos));
    else if (tag == "set")
      body.push_back(parse_set(pos));
    else if (tag == "endif" || tag == "endfor" || tag == "elif" || tag == "else" || tag == "endset")
      fail_at(s_, pos, "unexpected '{% " + tag + " %}'");
    else
      fail_at(s_, pos, "unsupported tag '{% " + tag + " %}'");
  }
}

NodeP Parser::parse_if(size_t pos) {
  auto n = std::make_shared<Node>();
  n->kind = Node::If;
  n->pos = pos;
  n->conds.push_back(parse_expression());
  expect_close();
  std::string ended;
  while (true) {
    n->bodies.push_back(parse_body({"elif", "else", "endif"}, &ended, pos));
    if (ended == "elif") {
      n->conds.push_back(parse_expression());
      expect_close();
    } else if (ended == "else") {
      expect_close();
      n->bodies.push_back(parse_body({"endif"}, &ended, pos));
      expect_close();
      return n;
    } else {
      expect_close();
      return n;
    }
  }
}

NodeP Parser::parse_for(size_t pos) {
  auto n = std::make_shared<Node>();
  n->kind = Node::For;
  n->pos = pos;
  n->names.push_back(expect_name());
  while (is_op(",")) {
    ++k_;
    n->names.push_back(expect_name());
  }
  if (!is_name("in")) fail("expected 'in', found " + describe());
  ++k_;
  n->expr = parse_or();
  if (is_name("if")) {
    ++k_;
    n->cond = parse_or();
  }
  if (is_name("recursive")) fail("unsupported: recursive loops");
  expect_close();
  std::string ended;
  n->bodies.push_back(parse_body({"else", "endfor"}, &ended, pos));
  expect_close();
  if (ended == "else") {
    n->bodies.push_back(parse_body({"endfor"}, &ended, pos));
    expect_close();
  }
  return n;
}

NodeP Parser::parse_set(size_t pos) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Set;
  n->pos = pos;
  n->names.push_back(expect_name());
  if (is_op(".")) {
    ++k_;
    n->attr = true;
    n->names.push_back(expect_name());
  }
  if (is_op(",")) fail("unsupported: tuple assignment in {% set %}");
  if (cur().kind == Token::StmtClose)
    fail_at(s_, pos, "unsupported: block assignment ({% set NAME %}...{% endset %})");
  expect_op("=");
  n->expr = parse_expression();
  expect_close();
  return n;
}

std::unique_ptr<Program> parse(const std::string& source) {
  if (source.size() > kMaxTemplateBytes)
    throw Error("chat template: " + std::to_string(source.size()) + " bytes, more than the " +
                std::to_string(kMaxTemplateBytes >> 20) + " MiB a template may have");
  auto p = std::make_unique<Program>();
  p->source = source;
  Parser parser(p->source, lex(p->source));
  p->body = parser.parse_all();
  return p;
}

}  // namespace tzero::jinja
