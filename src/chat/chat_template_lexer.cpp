// The lexer of the chat-template Jinja subset (chat/chat_template_lexer.h), and the source
// positions of error messages (where, fail_at).
#include "chat/chat_template_lexer.h"

#include <cctype>
#include <cstring>

#include "base/error.h"
#include "chat/chat_template_ast.h"

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

}  // namespace

std::vector<Token> lex(const std::string& source) {
  return Lexer(source).run();
}

}  // namespace tzero::jinja
