// The expression half of the chat-template parser (chat/chat_template_parser.h): Jinja's
// expression grammar, one function per precedence level, with filters and tests checked against
// the supported subset.
#include <set>

#include "chat/chat_template_parser.h"

namespace tzero::jinja {

namespace {

const std::set<std::string, std::less<>> kTests = {
    "defined", "undefined",   "none",     "string",   "number", "integer", "float",
    "boolean", "mapping",     "iterable", "sequence", "true",   "false",   "even",
    "odd",     "divisibleby", "equalto",  "eq",       "ne",     "sameas",  "lower",
    "upper",   "in",          "callable", "gt",       "ge",     "lt",      "le"};

}  // namespace

ExprP Parser::make(Expr::Kind kind, size_t pos, std::vector<ExprP> args, std::string text) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->pos = pos;
  e->args = std::move(args);
  e->text = std::move(text);
  for (const ExprP& a : e->args)
    if (a) e->depth = std::max(e->depth, a->depth + 1);
  if (e->depth > kMaxNesting)
    fail_at(s_, pos,
            "the expression is nested (or chained) more than " + std::to_string(kMaxNesting) +
                " levels deep");
  return e;
}

ExprP Parser::parse_expression() {
  const Nest nest(*this);
  ExprP e = parse_or();
  while (is_name("if")) {
    const size_t pos = cur().pos;
    ++k_;
    ExprP c = parse_or();
    ExprP other;
    if (is_name("else")) {
      ++k_;
      other = parse_expression();
    }
    e = make(Expr::Cond, pos, {e, c, other});
  }
  return e;
}

ExprP Parser::parse_or() {
  ExprP e = parse_and();
  while (is_name("or")) {
    const size_t pos = t_[k_++].pos;
    e = make(Expr::Binary, pos, {e, parse_and()}, "or");
  }
  return e;
}

ExprP Parser::parse_and() {
  ExprP e = parse_not();
  while (is_name("and")) {
    const size_t pos = t_[k_++].pos;
    e = make(Expr::Binary, pos, {e, parse_not()}, "and");
  }
  return e;
}

ExprP Parser::parse_not() {
  const Nest nest(*this);
  if (is_name("not")) {
    const size_t pos = t_[k_++].pos;
    return make(Expr::Unary, pos, {parse_not()}, "not");
  }
  return parse_compare();
}

ExprP Parser::parse_compare() {
  ExprP e = parse_math1();
  while (true) {
    const size_t pos = cur().pos;
    std::string op;
    if (cur().kind == Token::Op &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
         cur().text == "<=" || cur().text == ">=")) {
      op = cur().text;
      ++k_;
    } else if (is_name("in")) {
      op = "in";
      ++k_;
    } else if (is_name("not") && next().kind == Token::Name && next().text == "in") {
      op = "notin";
      k_ += 2;
    } else {
      return e;
    }
    e = make(Expr::Binary, pos, {e, parse_math1()}, op);
  }
}

ExprP Parser::parse_math1() {
  ExprP e = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = t_[k_++];
    e = make(Expr::Binary, t.pos, {e, parse_concat()}, t.text);
  }
  return e;
}

ExprP Parser::parse_concat() {
  ExprP e = parse_math2();
  while (is_op("~")) {
    const size_t pos = t_[k_++].pos;
    e = make(Expr::Binary, pos, {e, parse_math2()}, "~");
  }
  return e;
}

ExprP Parser::parse_math2() {
  ExprP e = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = t_[k_++];
    e = make(Expr::Binary, t.pos, {e, parse_pow()}, t.text);
  }
  return e;
}

ExprP Parser::parse_pow() {
  ExprP e = parse_unary(true);
  while (is_op("**")) {
    const size_t pos = t_[k_++].pos;
    e = make(Expr::Binary, pos, {e, parse_unary(true)}, "**");
  }
  return e;
}

ExprP Parser::parse_unary(bool with_filter) {
  const Nest nest(*this);
  ExprP e;
  if (is_op("-") || is_op("+")) {
    const Token& t = t_[k_++];
    e = make(Expr::Unary, t.pos, {parse_unary(false)}, t.text);
  } else {
    e = parse_postfix(parse_primary());
  }
  return with_filter ? parse_filters(e) : e;
}

ExprP Parser::parse_primary() {
  const Token& t = cur();
  switch (t.kind) {
    case Token::Name: {
      ++k_;
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
        ExprP e = make(Expr::Bool, t.pos);
        e->i = (t.text[0] == 't' || t.text[0] == 'T') ? 1 : 0;
        return e;
      }
      if (t.text == "none" || t.text == "None") return make(Expr::None, t.pos);
      return make(Expr::Name, t.pos, {}, t.text);
    }
    case Token::Str: {
      std::string v;
      const size_t pos = t.pos;
      while (cur().kind == Token::Str) v += t_[k_++].text;  // adjacent literals join
      return make(Expr::Str, pos, {}, v);
    }
    case Token::Int: {
      ++k_;
      ExprP e = make(Expr::Int, t.pos);
      e->i = t.i;
      return e;
    }
    case Token::Float: {
      ++k_;
      ExprP e = make(Expr::Float, t.pos);
      e->f = t.f;
      return e;
    }
    case Token::Op:
      if (t.text == "(") {
        ++k_;
        if (is_op(")")) {
          ++k_;
          return make(Expr::List, t.pos);
        }
        ExprP e = parse_expression();
        if (is_op(",")) {
          std::vector<ExprP> items{e};
          while (is_op(",")) {
            ++k_;
            if (is_op(")")) break;
            items.push_back(parse_expression());
          }
          e = make(Expr::List, t.pos, std::move(items));
        }
        expect_op(")");
        return e;
      }
      if (t.text == "[") {
        ++k_;
        std::vector<ExprP> items;
        while (!is_op("]")) {
          items.push_back(parse_expression());
          if (!is_op(",")) break;
          ++k_;
        }
        expect_op("]");
        return make(Expr::List, t.pos, std::move(items));
      }
      if (t.text == "{") {
        ++k_;
        std::vector<ExprP> items;
        while (!is_op("}")) {
          items.push_back(parse_expression());
          expect_op(":");
          items.push_back(parse_expression());
          if (!is_op(",")) break;
          ++k_;
        }
        expect_op("}");
        return make(Expr::Dict, t.pos, std::move(items));
      }
      break;
    default:
      break;
  }
  fail("expected an expression, found " + describe());
}

void Parser::parse_call_args(ExprP& call) {
  expect_op("(");
  while (!is_op(")")) {
    ExprP arg;
    if (cur().kind == Token::Name && next().kind == Token::Op && next().text == "=") {
      std::string key = t_[k_].text;
      k_ += 2;
      arg = parse_expression();
      call->kwargs.emplace_back(std::move(key), arg);
    } else {
      if (is_op("*") || is_op("**")) fail("unsupported: argument unpacking");
      arg = parse_expression();
      call->args.push_back(arg);
    }
    call->depth = std::max(call->depth, arg->depth + 1);  // (bounded: arg's depth is checked)
    if (!is_op(",")) break;
    ++k_;
  }
  expect_op(")");
}

ExprP Parser::parse_postfix(ExprP e) {
  while (true) {
    const size_t pos = cur().pos;
    if (is_op(".")) {
      ++k_;
      if (cur().kind == Token::Int) {
        ExprP idx = make(Expr::Int, cur().pos);
        idx->i = cur().i;
        ++k_;
        e = make(Expr::Item, pos, {e, idx});
      } else {
        e = make(Expr::Attr, pos, {e}, expect_name());
      }
    } else if (is_op("[")) {
      ++k_;
      ExprP parts[3];
      bool slice = false;
      for (int p = 0; p < 3; ++p) {
        if (!is_op(":") && !is_op("]")) parts[p] = parse_expression();
        if (p < 2 && is_op(":")) {
          slice = true;
          ++k_;
        } else {
          break;
        }
      }
      expect_op("]");
      if (slice)
        e = make(Expr::Slice, pos, {e, parts[0], parts[1], parts[2]});
      else if (!parts[0])
        fail_at(s_, pos, "empty subscript '[]'");
      else
        e = make(Expr::Item, pos, {e, parts[0]});
    } else if (is_op("(")) {
      ExprP call = make(Expr::Call, pos, {e});
      parse_call_args(call);
      e = call;
    } else {
      return e;
    }
  }
}

ExprP Parser::parse_filters(ExprP e) {
  while (true) {
    if (is_op("|")) {
      ++k_;
      const size_t pos = cur().pos;
      const std::string name = expect_name();
      if (!is_filter(name)) fail_at(s_, pos, "unsupported filter '" + name + "'");
      ExprP f = make(Expr::Filter, pos, {e}, name);
      if (is_op("(")) parse_call_args(f);
      e = f;
    } else if (is_name("is")) {
      ++k_;
      bool negate = false;
      if (is_name("not")) {
        negate = true;
        ++k_;
      }
      const size_t pos = cur().pos;
      const std::string name = expect_name();
      if (!kTests.count(name)) fail_at(s_, pos, "unsupported test '" + name + "'");
      ExprP t = make(Expr::Test, pos, {e}, name);
      t->negate = negate;
      if (is_op("(")) {
        parse_call_args(t);
      } else {
        const Token& c = cur();
        const bool starts_arg =
            c.kind == Token::Str || c.kind == Token::Int || c.kind == Token::Float ||
            (c.kind == Token::Op && (c.text == "(" || c.text == "[" || c.text == "{")) ||
            (c.kind == Token::Name && c.text != "else" && c.text != "or" && c.text != "and" &&
             c.text != "if" && c.text != "in" && c.text != "is" && c.text != "not");
        if (starts_arg) {
          t->args.push_back(parse_postfix(parse_primary()));
          t->depth = std::max(t->depth, t->args.back()->depth + 1);
        }
      }
      e = t;
    } else if (is_op("(")) {
      ExprP call = make(Expr::Call, cur().pos, {e});
      parse_call_args(call);
      e = call;
    } else {
      return e;
    }
  }
}

}  // namespace tzero::jinja
