// Internals of the chat-template interpreter (chat/chat_template.h): the evaluator, which
// runs the program the parser built (chat_template_parser.h) over Values
// (chat_template_value.h). Statements, expressions, calls and string methods are here; filters
// and tests are in chat_template_filters.cpp (FilterCall, a friend, gives the filter table the
// helpers below).
//
// Scopes are Jinja's: a for loop's body has its own scope (a {% set %} inside it is gone after
// the loop; namespace() attributes are how templates carry state out), {% if %} has none.
// Undefined values print as "", are false and iterate as empty; reading an attribute or item
// of one, or computing with one, is an error naming it.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "chat/chat_template_ast.h"
#include "chat/chat_template_value.h"

namespace tzero::jinja {

struct FilterCall;

constexpr size_t kMaxOutput = size_t(256) << 20;  // a runaway template stops here
constexpr int64_t kMaxRange = 1 << 20;

inline std::string strip_chars(const std::string& s, const std::string& chars, bool left,
                               bool right) {
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && chars.find(s[b]) != std::string::npos) ++b;
  if (right)
    while (e > b && chars.find(s[e - 1]) != std::string::npos) --e;
  return s.substr(b, e - b);
}

inline const std::string kSpace = " \t\n\r\f\v";

class Evaluator {
  friend struct FilterCall;

 public:
  explicit Evaluator(const Program& p) : p_(p) {}

  std::string run(const Value& vars) {
    scopes_.emplace_back();
    for (const auto& kv : *vars.dict) scopes_.back()[kv.first] = kv.second;
    exec(p_.body);
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const Expr& e, const std::string& what) const {
    fail_at(p_.source, e.pos, what);
  }

  void emit(const std::string& s) {
    out_ += s;
    if (out_.size() > kMaxOutput) throw Error("chat template: the output passed 256 MiB");
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return Value::undefined("'" + name + "'");
  }

  void exec(const Body& body) {
    for (const NodeP& n : body) exec(*n);
  }

  void exec(const Node& n) {
    switch (n.kind) {
      case Node::Text:
        emit(n.text);
        return;
      case Node::Output:
        emit(to_str(eval(*n.expr)));
        return;
      case Node::If:
        for (size_t k = 0; k < n.conds.size(); ++k)
          if (truthy(eval(*n.conds[k]))) {
            exec(n.bodies[k]);
            return;
          }
        if (n.bodies.size() > n.conds.size()) exec(n.bodies.back());
        return;
      case Node::Set: {
        Value v = eval(*n.expr);
        if (!n.attr) {
          scopes_.back()[n.names[0]] = std::move(v);
          return;
        }
        Value target = lookup(n.names[0]);
        if (target.type != Value::Dict || !target.ns)
          fail_at(p_.source, n.pos,
                  "cannot assign an attribute of '" + n.names[0] + "' (not a namespace())");
        target.put(n.names[1], std::move(v));
        return;
      }
      case Node::For:
        exec_for(n);
        return;
    }
  }

  // Recursion: exec -> exec_for -> exec per nested block, at most kMaxParseDepth deep, so the
  // frames on that path stay small (the loop's items, filter and `loop` object are built in
  // helpers that return before the body runs).
  void exec_for(const Node& n) {
    const ValueList items = loop_items(n);
    if (items.empty()) {
      if (n.bodies.size() > 1) exec(n.bodies[1]);
      return;
    }
    for (size_t k = 0; k < items.size(); ++k) {
      scopes_.emplace_back();
      bind(n, items[k]);
      scopes_.back()["loop"] = loop_object(items, k);
      exec(n.bodies[0]);
      scopes_.pop_back();
    }
  }

  // The items a for loop runs over, its `if` applied.
  [[gnu::noinline]] ValueList loop_items(const Node& n) {
    const Value seq = eval(*n.expr);
    ValueList items = iterate(seq, *n.expr);
    if (!n.cond) return items;
    ValueList kept;
    for (const Value& item : items) {
      scopes_.emplace_back();
      bind(n, item);
      if (truthy(eval(*n.cond))) kept.push_back(item);
      scopes_.pop_back();
    }
    return kept;
  }

  // `loop` in iteration k of a loop over items.
  [[gnu::noinline]] static Value loop_object(const ValueList& items, size_t k) {
    const int64_t len = int64_t(items.size()), i = int64_t(k);
    Value loop = Value::make_dict({{"index", Value::integer(i + 1)},
                                   {"index0", Value::integer(i)},
                                   {"revindex", Value::integer(len - i)},
                                   {"revindex0", Value::integer(len - i - 1)},
                                   {"first", Value::boolean(i == 0)},
                                   {"last", Value::boolean(i == len - 1)},
                                   {"length", Value::integer(len)}});
    loop.put("previtem", i > 0 ? items[k - 1] : Value::undefined("loop.previtem"));
    loop.put("nextitem", i + 1 < len ? items[k + 1] : Value::undefined("loop.nextitem"));
    return loop;
  }

  void bind(const Node& n, const Value& item) {
    if (n.names.size() == 1) {
      scopes_.back()[n.names[0]] = item;
      return;
    }
    if (item.type != Value::List || item.list->size() != n.names.size())
      fail_at(p_.source, n.pos,
              "cannot unpack a " + std::string(type_name(item)) + " into " +
                  std::to_string(n.names.size()) + " loop variables");
    for (size_t k = 0; k < n.names.size(); ++k) scopes_.back()[n.names[k]] = (*item.list)[k];
  }

  ValueList iterate(const Value& v, const Expr& at) const {
    switch (v.type) {
      case Value::Undefined:
        return {};
      case Value::List:
        return *v.list;
      case Value::Dict: {
        ValueList keys;
        for (const auto& kv : *v.dict) keys.push_back(Value::string(kv.first));
        return keys;
      }
      case Value::Str: {
        ValueList chars;
        for (size_t k = 0; k < v.s.size();) {
          size_t len = 1;
          const uint8_t c = uint8_t(v.s[k]);
          if (c >= 0xF0)
            len = 4;
          else if (c >= 0xE0)
            len = 3;
          else if (c >= 0xC0)
            len = 2;
          chars.push_back(Value::string(v.s.substr(k, len)));
          k += len;
        }
        return chars;
      }
      default:
        fail(at, "'" + std::string(type_name(v)) + "' object is not iterable");
    }
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Str:
        return Value::string(e.text);
      case Expr::Int:
        return Value::integer(e.i);
      case Expr::Float:
        return Value::number(e.f);
      case Expr::Bool:
        return Value::boolean(e.i != 0);
      case Expr::None:
        return Value::none();
      case Expr::Name:
        return lookup(e.text);
      case Expr::List: {
        ValueList items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return Value::make_list(std::move(items));
      }
      case Expr::Dict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          Value key = eval(*e.args[k]);
          if (key.type != Value::Str) fail(*e.args[k], "dict keys must be strings");
          d.put(key.s, eval(*e.args[k + 1]));
        }
        return d;
      }
      case Expr::Attr: {
        Value obj = eval(*e.args[0]);
        if (obj.type == Value::Undefined)
          fail(e, obj.s + " is undefined (reading its attribute '" + e.text + "')");
        if (const Value* v = obj.get(e.text)) return *v;
        return Value::undefined("'" + e.text + "'");
      }
      case Expr::Item:
        return item(e, eval(*e.args[0]), eval(*e.args[1]));
      case Expr::Slice:
        return slice(e);
      case Expr::Call:
        return call(e);
      case Expr::Filter:
        return filter(e);
      case Expr::Test: {
        const bool r = test(e, eval(*e.args[0]));
        return Value::boolean(e.negate ? !r : r);
      }
      case Expr::Unary: {
        Value v = eval(*e.args[0]);
        if (e.text == "not") return Value::boolean(!truthy(v));
        if (v.type == Value::Float) return Value::number(e.text == "-" ? -v.f : v.f);
        if (v.type == Value::Int || v.type == Value::Bool) {
          const int64_t x = v.type == Value::Int ? v.i : int64_t(v.b);
          if (e.text == "-" && x == std::numeric_limits<int64_t>::min())
            fail(e, "integer overflow in unary '-'");
          return Value::integer(e.text == "-" ? -x : x);
        }
        fail(e, "bad operand type for unary " + e.text + ": '" + type_name(v) + "'");
      }
      case Expr::Binary:
        return binary(e);
      case Expr::Cond:
        if (truthy(eval(*e.args[1]))) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined("the else branch");
    }
    fail(e, "unknown expression");
  }

  Value item(const Expr& e, const Value& obj, const Value& key) {
    if (obj.type == Value::Undefined) fail(e, obj.s + " is undefined (reading an item of it)");
    if (obj.type == Value::Dict) {
      if (key.type != Value::Str) return Value::undefined(repr(key));
      if (const Value* v = obj.get(key.s)) return *v;
      return Value::undefined(repr(key));
    }
    if ((obj.type == Value::List || obj.type == Value::Str) &&
        (key.type == Value::Int || key.type == Value::Bool)) {
      const int64_t n = obj.type == Value::List ? int64_t(obj.list->size()) : int64_t(obj.s.size());
      int64_t k = key.type == Value::Bool ? key.b : key.i;
      if (k < 0) k += n;
      if (k < 0 || k >= n) return Value::undefined("index " + std::to_string(key.i));
      if (obj.type == Value::List) return (*obj.list)[size_t(k)];
      return Value::string(obj.s.substr(size_t(k), 1));
    }
    fail(e, "cannot index a '" + std::string(type_name(obj)) + "' with a '" + type_name(key) + "'");
  }

  Value slice(const Expr& e) {
    const Value obj = eval(*e.args[0]);
    auto part = [&](int k, int64_t fallback) -> int64_t {
      if (!e.args[size_t(k)]) return fallback;
      Value v = eval(*e.args[size_t(k)]);
      if (v.type == Value::None) return fallback;
      if (v.type != Value::Int) fail(*e.args[size_t(k)], "slice indices must be integers");
      return v.i;
    };
    if (obj.type != Value::List && obj.type != Value::Str)
      fail(e, "cannot slice a '" + std::string(type_name(obj)) + "'");
    const int64_t n = obj.type == Value::List ? int64_t(obj.list->size()) : int64_t(obj.s.size());
    const int64_t step = part(3, 1);
    if (step == 0) fail(e, "slice step cannot be zero");
    auto clamp = [&](int64_t x, bool is_start) {
      if (x < 0) x += n;
      if (step > 0) return std::clamp<int64_t>(x, 0, n);
      (void)is_start;
      return std::clamp<int64_t>(x, -1, n - 1);
    };
    int64_t start = e.args[1] ? clamp(part(1, 0), true) : (step > 0 ? 0 : n - 1);
    int64_t stop = e.args[2] ? clamp(part(2, 0), false) : (step > 0 ? n : -1);
    ValueList items;
    std::string text;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      if (obj.type == Value::List)
        items.push_back((*obj.list)[size_t(k)]);
      else
        text += obj.s[size_t(k)];
    }
    if (obj.type == Value::List) return Value::make_list(std::move(items));
    return Value::string(text);
  }

  // Recursion: eval -> binary -> eval per level of a chain (`1 + 1 + ...`, at most kMaxNesting),
  // so the operator itself is applied in a frame of its own.
  Value binary(const Expr& e) {
    const std::string& op = e.text;
    Value a = eval(*e.args[0]);
    if (op == "and") return truthy(a) ? eval(*e.args[1]) : a;
    if (op == "or") return truthy(a) ? a : eval(*e.args[1]);
    const Value b = eval(*e.args[1]);
    return apply_binary(e, a, b);
  }

  [[gnu::noinline]] Value apply_binary(const Expr& e, const Value& a, const Value& b) {
    const std::string& op = e.text;
    if (op == "==") return Value::boolean(equal(a, b));
    if (op == "!=") return Value::boolean(!equal(a, b));
    if (op == "~") return Value::string(to_str(a) + to_str(b));
    if (op == "in" || op == "notin") {
      bool found = false;
      if (b.type == Value::Str) {
        if (a.type != Value::Str) fail(e, "'in <string>' requires a string on the left");
        found = b.s.find(a.s) != std::string::npos;
      } else if (b.type == Value::List) {
        for (const Value& x : *b.list) found = found || equal(a, x);
      } else if (b.type == Value::Dict) {
        found = a.type == Value::Str && b.get(a.s) != nullptr;
      } else if (b.type != Value::Undefined) {
        fail(e, "'" + std::string(type_name(b)) + "' is not a container ('in')");
      }
      return Value::boolean(op == "in" ? found : !found);
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      int c;
      if (a.is_number() && b.is_number())
        c = a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double();
      else if (a.type == Value::Str && b.type == Value::Str)
        c = a.s.compare(b.s);
      else
        fail(e, "'" + op + "' is not supported between '" + type_name(a) + "' and '" +
                    type_name(b) + "'");
      const bool r = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
      return Value::boolean(r);
    }
    if (op == "+" && a.type == Value::Str && b.type == Value::Str) return Value::string(a.s + b.s);
    if (op == "+" && a.type == Value::List && b.type == Value::List) {
      ValueList items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      return Value::make_list(std::move(items));
    }
    if (op == "*" && a.type == Value::Str && b.type == Value::Int) {
      std::string s;
      for (int64_t k = 0; k < b.i && s.size() < kMaxOutput; ++k) s += a.s;
      return Value::string(s);
    }
    if (!a.is_number() || !b.is_number()) {
      std::string why = "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" +
                        type_name(b) + "'";
      if (a.type == Value::Undefined)
        why += " (" + a.s + " is undefined)";
      else if (b.type == Value::Undefined)
        why += " (" + b.s + " is undefined)";
      fail(e, why);
    }
    const bool ints = a.type != Value::Float && b.type != Value::Float;
    // Integers (and booleans) as int64 only when both are: a float need not fit one.
    auto int_of = [](const Value& v) {
      return v.type == Value::Int ? v.i : int64_t(v.as_double());
    };
    const int64_t x = ints ? int_of(a) : 0, y = ints ? int_of(b) : 0;
    const double fx = a.as_double(), fy = b.as_double();
    // Python's integers do not overflow; a template whose arithmetic leaves int64 is refused.
    auto checked = [&](bool overflow, int64_t r) {
      if (overflow) fail(e, "integer overflow in '" + op + "'");
      return Value::integer(r);
    };
    if (op == "+" || op == "-" || op == "*") {
      if (!ints) return Value::number(op == "+" ? fx + fy : op == "-" ? fx - fy : fx * fy);
      int64_t res = 0;
      const bool over = op == "+"   ? __builtin_add_overflow(x, y, &res)
                        : op == "-" ? __builtin_sub_overflow(x, y, &res)
                                    : __builtin_mul_overflow(x, y, &res);
      return checked(over, res);
    }
    if (op == "**") {
      const double p = std::pow(fx, fy);
      if (!(ints && y >= 0)) return Value::number(p);
      const bool over = !(p > -9.2e18 && p < 9.2e18);
      return checked(over, over ? 0 : int64_t(p));
    }
    if (fy == 0) fail(e, "division by zero");
    if (ints && x == std::numeric_limits<int64_t>::min() && y == -1)
      fail(e, "integer overflow in '" + op + "'");
    if (op == "/") return Value::number(fx / fy);
    if (op == "//") {
      if (ints) return Value::integer(x / y - ((x % y != 0) && ((x < 0) != (y < 0))));
      return Value::number(std::floor(fx / fy));
    }
    if (op == "%") {
      if (ints) {
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value::integer(r);
      }
      double r = std::fmod(fx, fy);
      if (r != 0 && ((r < 0) != (fy < 0))) r += fy;
      return Value::number(r);
    }
    fail(e, "unsupported operator '" + op + "'");
  }

  std::vector<Value> args_of(const Expr& e, size_t from = 1) {
    std::vector<Value> out;
    for (size_t k = from; k < e.args.size(); ++k) out.push_back(eval(*e.args[k]));
    return out;
  }
  // Positional argument k or keyword `name`, else the fallback.
  Value arg(const Expr& e, const std::vector<Value>& pos, size_t k, const char* name,
            Value fallback) {
    if (k < pos.size()) return pos[k];
    for (const auto& kw : e.kwargs)
      if (kw.first == name) return eval(*kw.second);
    return fallback;
  }
  std::string str_arg(const Expr& e, const std::vector<Value>& pos, size_t k, const char* name,
                      const std::string& what) {
    Value v = arg(e, pos, k, name, Value::undefined(name));
    if (v.type != Value::Str) fail(e, what + ": argument '" + name + "' must be a string");
    return v.s;
  }

  Value call(const Expr& e) {
    const Expr& callee = *e.args[0];
    std::vector<Value> pos = args_of(e);
    if (callee.kind == Expr::Name) {
      const std::string& f = callee.text;
      if (f == "raise_exception") {
        const std::string msg = pos.empty() ? "" : to_str(pos[0]);
        throw Error("chat template raised an exception: " + msg + " (" + where(p_.source, e.pos) +
                    ")");
      }
      if (f == "namespace" || f == "dict") {
        Value d = Value::make_dict();
        d.ns = f == "namespace";
        if (!pos.empty() && pos[0].type == Value::Dict)
          for (const auto& kv : *pos[0].dict) d.put(kv.first, kv.second);
        for (const auto& kw : e.kwargs) d.put(kw.first, eval(*kw.second));
        return d;
      }
      if (f == "range") {
        int64_t start = 0, stop = 0, step = 1;
        for (const Value& v : pos)
          if (v.type != Value::Int) fail(e, "range() wants integers");
        if (pos.size() == 1)
          stop = pos[0].i;
        else if (pos.size() >= 2)
          start = pos[0].i, stop = pos[1].i;
        if (pos.size() == 3) step = pos[2].i;
        if (step == 0 || pos.empty() || pos.size() > 3) fail(e, "bad arguments to range()");
        ValueList items;
        for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
          if (int64_t(items.size()) >= kMaxRange) fail(e, "range() too long");
          items.push_back(Value::integer(k));
        }
        return Value::make_list(std::move(items));
      }
      fail(e, "unsupported function '" + f + "()'");
    }
    if (callee.kind != Expr::Attr) fail(e, "this expression cannot be called");
    const Value obj = eval(*callee.args[0]);
    const std::string& m = callee.text;
    if (obj.type == Value::Str) return string_method(e, obj.s, m, pos);
    if (obj.type == Value::Dict && !obj.ns) {
      if (m == "items" || m == "keys" || m == "values") {
        ValueList out;
        for (const auto& kv : *obj.dict) {
          if (m == "items")
            out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
          else if (m == "keys")
            out.push_back(Value::string(kv.first));
          else
            out.push_back(kv.second);
        }
        return Value::make_list(std::move(out));
      }
      if (m == "get") {
        if (pos.empty() || pos[0].type != Value::Str) fail(e, "get() wants a string key");
        if (const Value* v = obj.get(pos[0].s)) return *v;
        return pos.size() > 1 ? pos[1] : Value::none();
      }
    }
    if (obj.type == Value::Undefined) fail(e, obj.s + " is undefined (calling its " + m + "())");
    fail(e, "unsupported method '" + m + "()' on a '" + type_name(obj) + "'");
  }

  Value string_method(const Expr& e, const std::string& s, const std::string& m,
                      const std::vector<Value>& pos) {
    const std::string what = "'" + m + "()'";
    if (m == "strip" || m == "lstrip" || m == "rstrip") {
      std::string chars = kSpace;
      if (!pos.empty() && pos[0].type == Value::Str) chars = pos[0].s;
      return Value::string(strip_chars(s, chars, m != "rstrip", m != "lstrip"));
    }
    if (m == "startswith" || m == "endswith") {
      if (pos.size() != 1) fail(e, what + " wants one argument");
      ValueList options = pos[0].type == Value::List ? *pos[0].list : ValueList{pos[0]};
      for (const Value& o : options) {
        if (o.type != Value::Str) fail(e, what + " wants a string");
        if (o.s.size() <= s.size() &&
            (m == "startswith" ? s.compare(0, o.s.size(), o.s) == 0
                               : s.compare(s.size() - o.s.size(), o.s.size(), o.s) == 0))
          return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (m == "upper" || m == "lower") {
      std::string r = s;
      for (char& c : r)
        c = char(m == "upper" ? std::toupper(uint8_t(c)) : std::tolower(uint8_t(c)));
      return Value::string(r);
    }
    if (m == "split") return split(e, s, pos);
    if (m == "replace") {
      if (pos.size() < 2 || pos[0].type != Value::Str || pos[1].type != Value::Str)
        fail(e, what + " wants two strings");
      return Value::string(replace(s, pos[0].s, pos[1].s, pos.size() > 2 ? pos[2].i : -1));
    }
    if (m == "title" || m == "capitalize") return Value::string(title(s, m == "title"));
    if (m == "join") {
      if (pos.size() != 1) fail(e, what + " wants one argument");
      std::string r;
      const ValueList items = iterate(pos[0], e);
      for (size_t k = 0; k < items.size(); ++k) r += (k ? s : "") + to_str(items[k]);
      return Value::string(r);
    }
    if (m == "find" || m == "count") {
      if (pos.size() != 1 || pos[0].type != Value::Str) fail(e, what + " wants a string");
      if (m == "find") {
        const size_t f = s.find(pos[0].s);
        return Value::integer(f == std::string::npos ? -1 : int64_t(f));
      }
      int64_t n = 0;
      if (!pos[0].s.empty())
        for (size_t f = s.find(pos[0].s); f != std::string::npos;
             f = s.find(pos[0].s, f + pos[0].s.size()))
          ++n;
      return Value::integer(n);
    }
    fail(e, "unsupported method " + what + " on a 'str'");
  }

  Value split(const Expr& e, const std::string& s, const std::vector<Value>& pos) {
    int64_t maxsplit = pos.size() > 1 && pos[1].type == Value::Int ? pos[1].i : -1;
    ValueList parts;
    if (pos.empty() || pos[0].type == Value::None) {  // runs of whitespace, ends trimmed
      size_t k = 0;
      while (true) {
        while (k < s.size() && kSpace.find(s[k]) != std::string::npos) ++k;
        if (k >= s.size()) break;
        if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
          parts.push_back(Value::string(strip_chars(s.substr(k), kSpace, false, true)));
          break;
        }
        size_t b = k;
        while (k < s.size() && kSpace.find(s[k]) == std::string::npos) ++k;
        parts.push_back(Value::string(s.substr(b, k - b)));
      }
      return Value::make_list(std::move(parts));
    }
    if (pos[0].type != Value::Str || pos[0].s.empty()) fail(e, "split() wants a non-empty string");
    const std::string& sep = pos[0].s;
    size_t b = 0;
    while (true) {
      const size_t f =
          (maxsplit >= 0 && int64_t(parts.size()) >= maxsplit) ? std::string::npos : s.find(sep, b);
      if (f == std::string::npos) {
        parts.push_back(Value::string(s.substr(b)));
        break;
      }
      parts.push_back(Value::string(s.substr(b, f - b)));
      b = f + sep.size();
    }
    return Value::make_list(std::move(parts));
  }

  static std::string replace(const std::string& s, const std::string& from, const std::string& to,
                             int64_t count) {
    if (from.empty()) return s;
    std::string r;
    size_t b = 0;
    for (int64_t n = 0; count < 0 || n < count; ++n) {
      const size_t f = s.find(from, b);
      if (f == std::string::npos) break;
      r += s.substr(b, f - b) + to;
      b = f + from.size();
    }
    return r + s.substr(b);
  }

  static std::string title(const std::string& s, bool every_word) {
    std::string r = s;
    bool start = true;
    for (char& c : r) {
      const bool alpha = std::isalpha(uint8_t(c));
      if (alpha) c = char(start ? std::toupper(uint8_t(c)) : std::tolower(uint8_t(c)));
      start = every_word ? !alpha : false;
    }
    return r;
  }

  Value filter(const Expr& e);
  bool test(const Expr& e, const Value& v);
  Value attribute_of(const Expr& e, const Value& v, const std::string& path);

  const Program& p_;
  std::vector<std::map<std::string, Value>> scopes_;
  std::string out_;
};

}  // namespace tzero::jinja
