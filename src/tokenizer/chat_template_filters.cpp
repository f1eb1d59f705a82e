// Filters (`x | name(args)`) and tests (`x is name args`) of the chat-template interpreter
// (tokenizer/chat_template_eval.h). The parser refuses names not listed in its kFilters and
// kTests; each listed one is implemented here with Jinja's (Python's) behaviour.
#include "tokenizer/chat_template_eval.h"

namespace tzero::jinja {

// "a.b" or "a.0" looked up in v (selectattr, map, join, sort and sum attributes).
Value Evaluator::attribute_of(const Expr& e, const Value& v, const std::string& path) {
  Value cur = v;
  size_t b = 0;
  while (b <= path.size()) {
    const size_t d = std::min(path.find('.', b), path.size());
    const std::string part = path.substr(b, d - b);
    if (cur.type == Value::Dict) {
      const Value* f = cur.get(part);
      cur = f ? *f : Value::undefined("'" + part + "'");
    } else if (cur.type == Value::List && !part.empty() && std::isdigit(uint8_t(part[0]))) {
      cur = item(e, cur, Value::integer(std::stoll(part)));
    } else {
      return Value::undefined("'" + part + "'");
    }
    b = d + 1;
  }
  return cur;
}

bool Evaluator::test(const Expr& e, const Value& v) {
  const std::string& t = e.text;
  std::vector<Value> pos = args_of(e);
  auto need_arg = [&] {
    if (pos.empty()) fail(e, "test '" + t + "' wants an argument");
    return pos[0];
  };
  if (t == "defined") return v.type != Value::Undefined;
  if (t == "undefined") return v.type == Value::Undefined;
  if (t == "none") return v.type == Value::None;
  if (t == "string") return v.type == Value::Str;
  if (t == "number") return v.type == Value::Int || v.type == Value::Float;
  if (t == "integer") return v.type == Value::Int;
  if (t == "float") return v.type == Value::Float;
  if (t == "boolean") return v.type == Value::Bool;
  if (t == "mapping") return v.type == Value::Dict;
  if (t == "iterable")
    return v.type == Value::List || v.type == Value::Dict || v.type == Value::Str;
  if (t == "sequence")
    return v.type == Value::List || v.type == Value::Dict || v.type == Value::Str;
  if (t == "true") return v.type == Value::Bool && v.b;
  if (t == "false") return v.type == Value::Bool && !v.b;
  if (t == "callable") return false;
  if (t == "lower" || t == "upper") {
    if (v.type != Value::Str) return false;
    for (char c : v.s)
      if (std::isalpha(uint8_t(c)) && bool(std::islower(uint8_t(c))) != (t == "lower"))
        return false;
    return true;
  }
  if (t == "even" || t == "odd" || t == "divisibleby") {
    if (v.type != Value::Int) fail(e, "test '" + t + "' wants an integer");
    if (t == "even") return v.i % 2 == 0;
    if (t == "odd") return v.i % 2 != 0;
    const Value d = need_arg();
    if (d.type != Value::Int || d.i == 0) fail(e, "divisibleby wants a non-zero integer");
    return v.i % d.i == 0;
  }
  if (t == "equalto" || t == "eq" || t == "sameas") return equal(v, need_arg());
  if (t == "ne") return !equal(v, need_arg());
  if (t == "in") {
    const Value c = need_arg();
    if (c.type == Value::Str) return v.type == Value::Str && c.s.find(v.s) != std::string::npos;
    for (const Value& x : iterate(c, e))
      if (equal(v, x)) return true;
    return false;
  }
  if (t == "gt" || t == "ge" || t == "lt" || t == "le") {
    const Value o = need_arg();
    if (!v.is_number() || !o.is_number()) fail(e, "test '" + t + "' wants numbers");
    const double a = v.as_double(), b = o.as_double();
    return t == "gt" ? a > b : t == "ge" ? a >= b : t == "lt" ? a < b : a <= b;
  }
  fail(e, "unsupported test '" + t + "'");
}

Value Evaluator::filter(const Expr& e) {
  const std::string& f = e.text;
  const Value v = eval(*e.args[0]);
  const std::vector<Value> pos = args_of(e);
  const std::string what = "filter '" + f + "'";
  auto want = [&](bool ok, const std::string& type) {
    if (!ok) {
      std::string why = what + " wants " + type + ", not a '" + type_name(v) + "'";
      if (v.type == Value::Undefined) why += " (" + v.s + " is undefined)";
      fail(e, why);
    }
  };
  if (f == "safe") return v;
  if (f == "default" || f == "d") {
    const bool boolean = truthy(arg(e, pos, 1, "boolean", Value::boolean(false)));
    const bool use = v.type == Value::Undefined || (boolean && !truthy(v));
    return use ? arg(e, pos, 0, "default_value", Value::string("")) : v;
  }
  if (f == "string") return Value::string(to_str(v));
  if (f == "tojson") {
    const Value ind = arg(e, pos, 0, "indent", Value::none());
    try {
      return Value::string(to_json(v, ind.type == Value::Int ? int(ind.i) : -1));
    } catch (const std::invalid_argument& x) {
      fail(e, what + ": " + x.what());
    }
  }
  if (f == "trim") {
    want(v.type == Value::Str, "a string");
    const Value chars = arg(e, pos, 0, "chars", Value::none());
    return Value::string(strip_chars(v.s, chars.type == Value::Str ? chars.s : kSpace, true, true));
  }
  if (f == "upper" || f == "lower" || f == "title" || f == "capitalize") {
    want(v.type == Value::Str, "a string");
    if (f == "upper" || f == "lower") return string_method(e, v.s, f, {});
    return Value::string(title(f == "title" ? v.s : [&] {
      std::string r = v.s;
      for (char& c : r) c = char(std::tolower(uint8_t(c)));
      return r;
    }(), f == "title"));
  }
  if (f == "replace") {
    want(v.type == Value::Str, "a string");
    return string_method(e, v.s, "replace", pos);
  }
  if (f == "wordcount") {
    want(v.type == Value::Str, "a string");
    return Value::integer(int64_t(split(e, v.s, {}).list->size()));
  }
  if (f == "indent") {
    want(v.type == Value::Str, "a string");
    const Value w = arg(e, pos, 0, "width", Value::integer(4));
    const std::string pad =
        w.type == Value::Str ? w.s : std::string(size_t(std::max<int64_t>(0, w.i)), ' ');
    const bool first = truthy(arg(e, pos, 1, "first", Value::boolean(false)));
    const bool blank = truthy(arg(e, pos, 2, "blank", Value::boolean(false)));
    std::string r;
    size_t b = 0;
    bool is_first = true;
    while (b <= v.s.size()) {
      const size_t nl = std::min(v.s.find('\n', b), v.s.size());
      const std::string line = v.s.substr(b, nl - b);
      if ((is_first ? first : true) && (blank || !line.empty())) r += pad;
      r += line;
      if (nl < v.s.size()) r += '\n';
      is_first = false;
      b = nl + 1;
    }
    return Value::string(r);
  }
  if (f == "int" || f == "float") {
    double x = 0;
    if (v.is_number())
      x = v.as_double();
    else if (v.type == Value::Str) {
      try {
        x = std::stod(v.s);
      } catch (const std::exception&) {
        x = 0;
      }
    }
    return f == "int" ? Value::integer(int64_t(x)) : Value::number(x);
  }
  if (f == "abs") {
    want(v.is_number(), "a number");
    return v.type == Value::Float ? Value::number(std::fabs(v.f))
                                  : Value::integer(std::llabs(int64_t(v.as_double())));
  }
  if (f == "round") {
    want(v.is_number(), "a number");
    const Value prec = arg(e, pos, 0, "precision", Value::integer(0));
    const Value method = arg(e, pos, 1, "method", Value::string("common"));
    const double scale = std::pow(10.0, double(prec.i));
    double x = v.as_double() * scale;
    x = method.s == "ceil" ? std::ceil(x) : method.s == "floor" ? std::floor(x) : std::round(x);
    return Value::number(x / scale);
  }
  if (f == "length" || f == "count") {
    if (v.type == Value::Str) {
      int64_t n = 0;
      for (char c : v.s) n += (uint8_t(c) & 0xC0) != 0x80;
      return Value::integer(n);
    }
    want(v.type == Value::List || v.type == Value::Dict, "a string, list or dict");
    return Value::integer(int64_t(v.type == Value::List ? v.list->size() : v.dict->size()));
  }
  if (f == "items") {
    if (v.type == Value::Undefined) return Value::make_list();
    want(v.type == Value::Dict, "a dict");
    ValueList out;
    for (const auto& kv : *v.dict)
      out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
    return Value::make_list(std::move(out));
  }
  if (f == "dictsort") {
    want(v.type == Value::Dict, "a dict");
    ValueDict d = *v.dict;
    std::stable_sort(d.begin(), d.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    ValueList out;
    for (const auto& kv : d) out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
    return Value::make_list(std::move(out));
  }
  // The rest work on sequences.
  want(v.type == Value::List || v.type == Value::Dict || v.type == Value::Str ||
           v.type == Value::Undefined,
       "a sequence");
  ValueList items = iterate(v, e);
  if (f == "list") return Value::make_list(std::move(items));
  if (f == "first" || f == "last") {
    if (items.empty()) return Value::undefined("the " + f + " item of an empty sequence");
    return f == "first" ? items.front() : items.back();
  }
  if (f == "reverse") {
    std::reverse(items.begin(), items.end());
    if (v.type == Value::Str) {
      std::string r;
      for (const Value& c : items) r += c.s;
      return Value::string(r);
    }
    return Value::make_list(std::move(items));
  }
  if (f == "join") {
    const Value sep = arg(e, pos, 0, "d", Value::string(""));
    const Value attr = arg(e, pos, 1, "attribute", Value::none());
    std::string r;
    for (size_t k = 0; k < items.size(); ++k)
      r += (k ? to_str(sep) : "") +
           to_str(attr.type == Value::Str ? attribute_of(e, items[k], attr.s) : items[k]);
    return Value::string(r);
  }
  if (f == "unique") {
    ValueList out;
    for (const Value& x : items)
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); }))
        out.push_back(x);
    return Value::make_list(std::move(out));
  }
  if (f == "sum") {
    const Value attr = arg(e, pos, 0, "attribute", Value::none());
    Value total = arg(e, pos, 1, "start", Value::integer(0));
    for (const Value& x : items) {
      const Value y = attr.type == Value::Str ? attribute_of(e, x, attr.s) : x;
      if (!y.is_number() || !total.is_number()) fail(e, what + " wants numbers");
      total = (y.type == Value::Float || total.type == Value::Float)
                  ? Value::number(total.as_double() + y.as_double())
                  : Value::integer(int64_t(total.as_double()) + int64_t(y.as_double()));
    }
    return total;
  }
  auto less = [&](const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
    if (a.type == Value::Str && b.type == Value::Str) return a.s < b.s;
    fail(e, what + ": cannot compare a '" + type_name(a) + "' and a '" + type_name(b) + "'");
  };
  if (f == "min" || f == "max") {
    if (items.empty()) return Value::undefined("the " + f + " of an empty sequence");
    Value best = items[0];
    for (const Value& x : items)
      if (f == "min" ? less(x, best) : less(best, x)) best = x;
    return best;
  }
  if (f == "sort") {
    const bool rev = truthy(arg(e, pos, 0, "reverse", Value::boolean(false)));
    const Value attr = arg(e, pos, 2, "attribute", Value::none());
    auto key = [&](const Value& x) {
      return attr.type == Value::Str ? attribute_of(e, x, attr.s) : x;
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      return rev ? less(key(b), key(a)) : less(key(a), key(b));
    });
    return Value::make_list(std::move(items));
  }
  if (f == "selectattr" || f == "rejectattr" || f == "map") {
    if (f == "map") {
      const Value attr = arg(e, pos, 99, "attribute", Value::none());
      if (attr.type != Value::Str) fail(e, "filter 'map' is supported only as map(attribute=NAME)");
      const Value dflt = arg(e, pos, 99, "default", Value::undefined("default"));
      ValueList out;
      for (const Value& x : items) {
        Value y = attribute_of(e, x, attr.s);
        out.push_back(y.type == Value::Undefined && dflt.type != Value::Undefined ? dflt : y);
      }
      return Value::make_list(std::move(out));
    }
    if (pos.empty() || pos[0].type != Value::Str) fail(e, what + " wants an attribute name");
    Expr probe = e;  // a Test node over each attribute: `attr is TEST ARG`
    probe.kind = Expr::Test;
    probe.negate = false;
    probe.text = pos.size() > 1 && pos[1].type == Value::Str ? pos[1].s : "";
    probe.args.assign(e.args.begin(), e.args.begin() + std::min<size_t>(e.args.size(), 1));
    if (e.args.size() > 3) probe.args.push_back(e.args[3]);
    ValueList out;
    for (const Value& x : items) {
      const Value a = attribute_of(e, x, pos[0].s);
      const bool pass = probe.text.empty() ? truthy(a) : test(probe, a);
      if (pass == (f == "selectattr")) out.push_back(x);
    }
    return Value::make_list(std::move(out));
  }
  fail(e, "unsupported filter '" + f + "'");
}

}  // namespace tzero::jinja
