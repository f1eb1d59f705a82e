// Lexer and parser of the chat-template Jinja subset (tokenizer/chat_template_ast.h).
//
// Template level: text, {{ expr }}, {% tag %}, {# comment #}. Whitespace control as Jinja with
// trim_blocks and lstrip_blocks on (what transformers uses): "{%-"/"{{-"/"{#-" strip all
// whitespace before, "-%}"/"-}}"/"-#}" all whitespace after; a block or comment tag alone on
// its line loses the spaces and tabs before it, and the newline right after "%}" or "#}" is
// dropped; "{%+" keeps the spaces before.
// Expressions follow Jinja's grammar and precedence: conditional < or < and < not <
// comparisons (== != < > <= >= in, not in) < + - < ~ < * / // % < ** < unary - + < filters
// and tests (| name, is [not] name) < postfix (.attr, [item], [a:b:c], call(...)).
#include <cstring>
#include <set>

#include "base/error.h"
#include "tokenizer/chat_template_ast.h"

namespace tzero::jinja {

std::string where(const std::string& source, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

void fail_at(const std::string& source, size_t offset, const std::string& what) {
  throw Error("chat template: " + where(source, offset) + ": " + what);
}

namespace {

const std::set<std::string, std::less<>> kFilters = {
    "trim",   "tojson",     "length",     "count",      "upper",   "lower",    "default",
    "d",      "first",      "last",       "join",       "replace", "string",   "int",
    "float",  "list",       "items",      "capitalize", "title",   "abs",      "reverse",
    "safe",   "selectattr", "rejectattr", "map",        "unique",  "sort",     "dictsort",
    "indent", "round",      "sum",        "min",        "max",     "wordcount"};
const std::set<std::string, std::less<>> kTests = {
    "defined", "undefined",   "none",     "string",   "number", "integer", "float",
    "boolean", "mapping",     "iterable", "sequence", "true",   "false",   "even",
    "odd",     "divisibleby", "equalto",  "eq",       "ne",     "sameas",  "lower",
    "upper",   "in",          "callable", "gt",       "ge",     "lt",      "le"};

struct Token {
  enum Kind { Text, ExprOpen, ExprClose, StmtOpen, StmtClose, Name, Int, Float, Str, Op, End };
  Kind kind;
  size_t pos;
  std::string text;
  int64_t i = 0;
  double f = 0;
};

bool is_name_start(char c) {
  return std::isalpha(uint8_t(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(uint8_t(c)) || c == '_';
}

class Lexer {
 public:
  explicit Lexer(const std::string& s) : s_(s) {}

  std::vector<Token> run() {
    size_t p = 0;
    bool strip_next = false;  // a "-%}" etc.: strip the whitespace that follows
    while (p < s_.size()) {
      size_t open = find_open(p);
      std::string text = s_.substr(p, open - p);
      if (strip_next)
        text.erase(0, text.find_first_not_of(" \t\r\n\f\v") == std::string::npos
                          ? text.size()
                          : text.find_first_not_of(" \t\r\n\f\v"));
      strip_next = false;
      if (open == s_.size()) {
        push_text(text, p);
        break;
      }
      const char kind = s_[open + 1];
      const char mod = open + 2 < s_.size() ? s_[open + 2] : '\0';
      if (mod == '-') {
        const size_t e = text.find_last_not_of(" \t\r\n\f\v");
        text.erase(e == std::string::npos ? 0 : e + 1);
      } else if (kind != '{' && mod != '+') {
        // lstrip_blocks: spaces and tabs from the start of the line up to a block tag.
        const size_t nl = text.find_last_of('\n');
        const size_t from = nl == std::string::npos ? 0 : nl + 1;
        const bool at_line_start = nl != std::string::npos || p == 0 || s_[p - 1] == '\n';
        if (at_line_start && text.find_first_not_of(" \t", from) == std::string::npos)
          text.erase(from);
      }
      push_text(text, p);
      size_t q = open + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      bool strip_after = false;
      if (kind == '#') {
        const size_t close = s_.find("#}", q);
        if (close == std::string::npos) fail_at(s_, open, "unclosed comment '{#'");
        strip_after = close > q && s_[close - 1] == '-';
        p = close + 2;
      } else {
        out_.push_back({kind == '{' ? Token::ExprOpen : Token::StmtOpen, open, ""});
        p = lex_tag(q, kind == '{' ? '}' : '%', open, &strip_after);
      }
      if (strip_after) {
        strip_next = true;
      } else if (kind != '{') {  // trim_blocks
        if (p < s_.size() && s_[p] == '\n')
          ++p;
        else if (p + 1 < s_.size() && s_[p] == '\r' && s_[p + 1] == '\n')
          p += 2;
      }
    }
    out_.push_back({Token::End, s_.size(), ""});
    return std::move(out_);
  }

 private:
  size_t find_open(size_t p) const {
    for (size_t i = p; i + 1 < s_.size(); ++i)
      if (s_[i] == '{' && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    return s_.size();
  }

  void push_text(const std::string& text, size_t pos) {
    if (!text.empty()) out_.push_back({Token::Text, pos, text});
  }

  // Lexes the inside of a tag from q until its closing "}}" or "%}"; returns the offset after.
  size_t lex_tag(size_t q, char closer, size_t open, bool* strip_after) {
    while (true) {
      while (q < s_.size() && std::isspace(uint8_t(s_[q]))) ++q;
      if (q >= s_.size())
        fail_at(s_, open, std::string("unclosed tag '{") + (closer == '}' ? '{' : '%') + "'");
      const char c = s_[q];
      if (c == '-' && q + 2 < s_.size() && s_[q + 1] == closer && s_[q + 2] == '}') {
        *strip_after = true;
        out_.push_back({closer == '}' ? Token::ExprClose : Token::StmtClose, q, ""});
        return q + 3;
      }
      if (c == closer && q + 1 < s_.size() && s_[q + 1] == '}') {
        out_.push_back({closer == '}' ? Token::ExprClose : Token::StmtClose, q, ""});
        return q + 2;
      }
      if (is_name_start(c)) {
        size_t e = q;
        while (e < s_.size() && is_name_char(s_[e])) ++e;
        out_.push_back({Token::Name, q, s_.substr(q, e - q)});
        q = e;
      } else if (std::isdigit(uint8_t(c))) {
        q = lex_number(q);
      } else if (c == '\'' || c == '"') {
        q = lex_string(q);
      } else {
        static const char* two[] = {"**", "//", "==", "!=", "<=", ">="};
        std::string op;
        for (const char* t : two)
          if (s_.compare(q, 2, t) == 0) op = t;
        if (op.empty()) {
          if (!std::strchr("+-*/%~<>()[]{},.:|=", c))
            fail_at(s_, q, std::string("unexpected character '") + c + "'");
          op = std::string(1, c);
        }
        out_.push_back({Token::Op, q, op});
        q += op.size();
      }
    }
  }

  size_t lex_number(size_t q) {
    size_t e = q;
    while (e < s_.size() && std::isdigit(uint8_t(s_[e]))) ++e;
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(uint8_t(s_[e + 1]))) {
      is_float = true;
      ++e;
      while (e < s_.size() && std::isdigit(uint8_t(s_[e]))) ++e;
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t x = e + 1;
      if (x < s_.size() && (s_[x] == '+' || s_[x] == '-')) ++x;
      if (x < s_.size() && std::isdigit(uint8_t(s_[x]))) {
        is_float = true;
        e = x;
        while (e < s_.size() && std::isdigit(uint8_t(s_[e]))) ++e;
      }
    }
    const std::string t = s_.substr(q, e - q);
    Token tok{is_float ? Token::Float : Token::Int, q, t};
    try {
      if (is_float)
        tok.f = std::stod(t);
      else
        tok.i = std::stoll(t);
    } catch (const std::exception&) {
      fail_at(s_, q, "number out of range '" + t + "'");
    }
    out_.push_back(tok);
    return e;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  // Python string-literal escapes: \n \t \r \\ \' \" \uXXXX \xXX; others stay as written.
  size_t lex_string(size_t q) {
    const char quote = s_[q];
    std::string v;
    size_t e = q + 1;
    while (true) {
      if (e >= s_.size()) fail_at(s_, q, "unterminated string literal");
      const char c = s_[e];
      if (c == quote) break;
      if (c != '\\' || e + 1 >= s_.size()) {
        v += c;
        ++e;
        continue;
      }
      const char n = s_[e + 1];
      e += 2;
      switch (n) {
        case 'n':
          v += '\n';
          break;
        case 't':
          v += '\t';
          break;
        case 'r':
          v += '\r';
          break;
        case '0':
          v += '\0';
          break;
        case '\\':
          v += '\\';
          break;
        case '\'':
          v += '\'';
          break;
        case '"':
          v += '"';
          break;
        case '\n':
          break;
        case 'u':
        case 'x': {
          const size_t len = n == 'u' ? 4 : 2;
          if (e + len > s_.size()) fail_at(s_, e - 2, "bad escape in string literal");
          uint32_t cp = 0;
          for (size_t k = 0; k < len; ++k) {
            const char h = s_[e + k];
            if (!std::isxdigit(uint8_t(h))) fail_at(s_, e - 2, "bad escape in string literal");
            cp = cp * 16 + uint32_t(std::isdigit(uint8_t(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
          }
          append_utf8(v, cp);
          e += len;
          break;
        }
        default:
          v += '\\';
          v += n;
      }
    }
    out_.push_back({Token::Str, q, v});
    return e + 1;
  }

  const std::string& s_;
  std::vector<Token> out_;
};

class Parser {
 public:
  Parser(const std::string& s, std::vector<Token> toks) : s_(s), t_(std::move(toks)) {}

  Body parse_all() {
    std::string ended;
    return parse_body({}, &ended, 0);
  }

 private:
  const Token& cur() const { return t_[k_]; }
  const Token& next() const { return t_[std::min(k_ + 1, t_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().kind == Token::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Token::Name && cur().text == n; }
  [[noreturn]] void fail(const std::string& what) const { fail_at(s_, cur().pos, what); }
  std::string describe() const {
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
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "', found " + describe());
    ++k_;
  }
  void expect_close() {
    if (cur().kind != Token::StmtClose) fail("expected '%}', found " + describe());
    ++k_;
  }
  std::string expect_name() {
    if (cur().kind != Token::Name) fail("expected a name, found " + describe());
    return t_[k_++].text;
  }

  // Statements until one of `enders` ({% endif %} etc.); the ender's name goes to *ended, and
  // the tokens after it (up to its "%}") are left for the caller.
  Body parse_body(std::vector<const char*> enders, std::string* ended, size_t opened_at) {
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
      else if (tag == "endif" || tag == "endfor" || tag == "elif" || tag == "else" ||
               tag == "endset")
        fail_at(s_, pos, "unexpected '{% " + tag + " %}'");
      else
        fail_at(s_, pos, "unsupported tag '{% " + tag + " %}'");
    }
  }

  NodeP parse_if(size_t pos) {
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

  NodeP parse_for(size_t pos) {
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

  NodeP parse_set(size_t pos) {
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

  ExprP make(Expr::Kind kind, size_t pos, std::vector<ExprP> args = {}, std::string text = "") {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->pos = pos;
    e->args = std::move(args);
    e->text = std::move(text);
    return e;
  }

  ExprP parse_expression() {
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

  ExprP parse_or() {
    ExprP e = parse_and();
    while (is_name("or")) {
      const size_t pos = t_[k_++].pos;
      e = make(Expr::Binary, pos, {e, parse_and()}, "or");
    }
    return e;
  }

  ExprP parse_and() {
    ExprP e = parse_not();
    while (is_name("and")) {
      const size_t pos = t_[k_++].pos;
      e = make(Expr::Binary, pos, {e, parse_not()}, "and");
    }
    return e;
  }

  ExprP parse_not() {
    if (is_name("not")) {
      const size_t pos = t_[k_++].pos;
      return make(Expr::Unary, pos, {parse_not()}, "not");
    }
    return parse_compare();
  }

  ExprP parse_compare() {
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

  ExprP parse_math1() {
    ExprP e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = t_[k_++];
      e = make(Expr::Binary, t.pos, {e, parse_concat()}, t.text);
    }
    return e;
  }

  ExprP parse_concat() {
    ExprP e = parse_math2();
    while (is_op("~")) {
      const size_t pos = t_[k_++].pos;
      e = make(Expr::Binary, pos, {e, parse_math2()}, "~");
    }
    return e;
  }

  ExprP parse_math2() {
    ExprP e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = t_[k_++];
      e = make(Expr::Binary, t.pos, {e, parse_pow()}, t.text);
    }
    return e;
  }

  ExprP parse_pow() {
    ExprP e = parse_unary(true);
    while (is_op("**")) {
      const size_t pos = t_[k_++].pos;
      e = make(Expr::Binary, pos, {e, parse_unary(true)}, "**");
    }
    return e;
  }

  ExprP parse_unary(bool with_filter) {
    ExprP e;
    if (is_op("-") || is_op("+")) {
      const Token& t = t_[k_++];
      e = make(Expr::Unary, t.pos, {parse_unary(false)}, t.text);
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filters(e) : e;
  }

  ExprP parse_primary() {
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

  void parse_call_args(ExprP& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (cur().kind == Token::Name && next().kind == Token::Op && next().text == "=") {
        std::string key = t_[k_].text;
        k_ += 2;
        call->kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (is_op("*") || is_op("**")) fail("unsupported: argument unpacking");
        call->args.push_back(parse_expression());
      }
      if (!is_op(",")) break;
      ++k_;
    }
    expect_op(")");
  }

  ExprP parse_postfix(ExprP e) {
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

  ExprP parse_filters(ExprP e) {
    while (true) {
      if (is_op("|")) {
        ++k_;
        const size_t pos = cur().pos;
        const std::string name = expect_name();
        if (!kFilters.count(name)) fail_at(s_, pos, "unsupported filter '" + name + "'");
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
          if (starts_arg) t->args.push_back(parse_postfix(parse_primary()));
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

  const std::string& s_;
  std::vector<Token> t_;
  size_t k_ = 0;
};

}  // namespace

std::unique_ptr<Program> parse(const std::string& source) {
  auto p = std::make_unique<Program>();
  p->source = source;
  Parser parser(p->source, Lexer(p->source).run());
  p->body = parser.parse_all();
  return p;
}

}  // namespace tzero::jinja
