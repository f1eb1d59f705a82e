// Filters (`x | name(args)`) and tests (`x is name args`) of the chat-template interpreter
// (chat/chat_template_eval.h), with Jinja's (Python's) behaviour. Filters are a table from name
// to a small function; the parser accepts exactly the names of that table (is_filter) and the
// tests listed in its kTests (chat/chat_template_parse_expr.cpp).
#include <map>
#include <string_view>

#include "chat/chat_template_eval.h"
#include "chat/chat_template_parser.h"

namespace tzero::jinja {

// One application of a filter: the evaluator, the filter's node, its input and its positional
// arguments (evaluated in that order before the filter runs). A friend of Evaluator: the
// filters reach the evaluator's helpers through it.
struct FilterCall {
  Evaluator& ev;
  const Expr& e;
  const Value v;
  const std::vector<Value> pos;
  const std::string what;  // "filter 'name'", for messages
  ValueList items;         // the input as a sequence (filters marked on_sequence only)

  // Positional argument k or keyword `name`, else the fallback.
  Value arg(size_t k, const char* name, Value fallback) const {
    return ev.arg(e, pos, k, name, std::move(fallback));
  }
  [[noreturn]] void fail(const std::string& why) const { ev.fail(e, why); }
  // "filter 'f' wants TYPE, not a 'T'" unless ok.
  void want(bool ok, const std::string& type) const {
    if (ok) return;
    std::string why = what + " wants " + type + ", not a '" + type_name(v) + "'";
    if (v.type == Value::Undefined) why += " (" + v.s + " is undefined)";
    fail(why);
  }
  Value attribute(const Value& x, const std::string& path) const {
    return ev.attribute_of(e, x, path);
  }
  Value string_method(const std::string& m, const std::vector<Value>& args) const {
    return ev.string_method(e, v.s, m, args);
  }
  Value split_words() const { return ev.split(e, v.s, {}); }
  bool test(const Expr& probe, const Value& x) const { return ev.test(probe, x); }
  static std::string title(const std::string& s, bool every_word) {
    return Evaluator::title(s, every_word);
  }
  // The order of min, max and sort: numbers with numbers, strings with strings.
  bool less(const Value& a, const Value& b) const {
    if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
    if (a.type == Value::Str && b.type == Value::Str) return a.s < b.s;
    fail(what + ": cannot compare a '" + type_name(a) + "' and a '" + type_name(b) + "'");
  }
};

namespace {

using FilterFn = Value (*)(FilterCall&);

struct FilterDef {
  FilterFn fn;
  bool on_sequence;  // wants a list, dict, string or undefined, iterated into FilterCall::items
};

// Filters on any value.

Value f_safe(FilterCall& c) {
  return c.v;
}

Value f_default(FilterCall& c) {  // also "d"
  const bool boolean = truthy(c.arg(1, "boolean", Value::boolean(false)));
  const bool use = c.v.type == Value::Undefined || (boolean && !truthy(c.v));
  return use ? c.arg(0, "default_value", Value::string("")) : c.v;
}

Value f_string(FilterCall& c) {
  return Value::string(to_str(c.v));
}

Value f_tojson(FilterCall& c) {
  const Value ind = c.arg(0, "indent", Value::none());
  try {
    return Value::string(to_json(c.v, ind.type == Value::Int ? int(ind.i) : -1));
  } catch (const std::invalid_argument& x) {
    c.fail(c.what + ": " + x.what());
  }
}

// int and float: numbers convert, strings parse (0 when they do not), anything else is 0.
double number_of(const Value& v) {
  if (v.is_number()) return v.as_double();
  if (v.type == Value::Str) {
    try {
      return std::stod(v.s);
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

Value f_int(FilterCall& c) {
  return Value::integer(int64_t(number_of(c.v)));
}

Value f_float(FilterCall& c) {
  return Value::number(number_of(c.v));
}

Value f_length(FilterCall& c) {  // also "count"
  const Value& v = c.v;
  if (v.type == Value::Str) {
    int64_t n = 0;
    for (char ch : v.s) n += (uint8_t(ch) & 0xC0) != 0x80;  // code points
    return Value::integer(n);
  }
  c.want(v.type == Value::List || v.type == Value::Dict, "a string, list or dict");
  return Value::integer(int64_t(v.type == Value::List ? v.list->size() : v.dict->size()));
}

// Filters on strings.

Value f_trim(FilterCall& c) {
  c.want(c.v.type == Value::Str, "a string");
  const Value chars = c.arg(0, "chars", Value::none());
  return Value::string(strip_chars(c.v.s, chars.type == Value::Str ? chars.s : kSpace, true, true));
}

Value f_upper_lower(FilterCall& c) {  // "upper" and "lower": the string methods
  c.want(c.v.type == Value::Str, "a string");
  return c.string_method(c.e.text, {});
}

Value f_title(FilterCall& c) {
  c.want(c.v.type == Value::Str, "a string");
  return Value::string(FilterCall::title(c.v.s, true));
}

Value f_capitalize(FilterCall& c) {
  c.want(c.v.type == Value::Str, "a string");
  std::string r = c.v.s;
  for (char& ch : r) ch = char(std::tolower(uint8_t(ch)));
  return Value::string(FilterCall::title(r, false));
}

Value f_replace(FilterCall& c) {
  c.want(c.v.type == Value::Str, "a string");
  return c.string_method("replace", c.pos);
}

Value f_wordcount(FilterCall& c) {
  c.want(c.v.type == Value::Str, "a string");
  return Value::integer(int64_t(c.split_words().list->size()));
}

Value f_indent(FilterCall& c) {
  c.want(c.v.type == Value::Str, "a string");
  const std::string& s = c.v.s;
  const Value w = c.arg(0, "width", Value::integer(4));
  const std::string pad =
      w.type == Value::Str ? w.s : std::string(size_t(std::max<int64_t>(0, w.i)), ' ');
  const bool first = truthy(c.arg(1, "first", Value::boolean(false)));
  const bool blank = truthy(c.arg(2, "blank", Value::boolean(false)));
  std::string r;
  size_t b = 0;
  bool is_first = true;
  while (b <= s.size()) {
    const size_t nl = std::min(s.find('\n', b), s.size());
    const std::string line = s.substr(b, nl - b);
    if ((is_first ? first : true) && (blank || !line.empty())) r += pad;
    r += line;
    if (nl < s.size()) r += '\n';
    is_first = false;
    b = nl + 1;
  }
  return Value::string(r);
}

// Filters on numbers.

Value f_abs(FilterCall& c) {
  c.want(c.v.is_number(), "a number");
  return c.v.type == Value::Float ? Value::number(std::fabs(c.v.f))
                                  : Value::integer(std::llabs(int64_t(c.v.as_double())));
}

Value f_round(FilterCall& c) {
  c.want(c.v.is_number(), "a number");
  const Value prec = c.arg(0, "precision", Value::integer(0));
  const Value method = c.arg(1, "method", Value::string("common"));
  const double scale = std::pow(10.0, double(prec.i));
  double x = c.v.as_double() * scale;
  x = method.s == "ceil" ? std::ceil(x) : method.s == "floor" ? std::floor(x) : std::round(x);
  return Value::number(x / scale);
}

// Filters on dicts.

Value f_items(FilterCall& c) {
  if (c.v.type == Value::Undefined) return Value::make_list();
  c.want(c.v.type == Value::Dict, "a dict");
  ValueList out;
  for (const auto& kv : *c.v.dict)
    out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
  return Value::make_list(std::move(out));
}

Value f_dictsort(FilterCall& c) {
  c.want(c.v.type == Value::Dict, "a dict");
  ValueDict d = *c.v.dict;
  std::stable_sort(d.begin(), d.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ValueList out;
  for (const auto& kv : d) out.push_back(Value::make_list({Value::string(kv.first), kv.second}));
  return Value::make_list(std::move(out));
}

// Filters on sequences (on_sequence: c.items holds the input's items).

Value f_list(FilterCall& c) {
  return Value::make_list(std::move(c.items));
}

Value f_first_last(FilterCall& c) {  // "first" and "last"
  const std::string& f = c.e.text;
  if (c.items.empty()) return Value::undefined("the " + f + " item of an empty sequence");
  return f == "first" ? c.items.front() : c.items.back();
}

Value f_reverse(FilterCall& c) {
  std::reverse(c.items.begin(), c.items.end());
  if (c.v.type == Value::Str) {
    std::string r;
    for (const Value& ch : c.items) r += ch.s;
    return Value::string(r);
  }
  return Value::make_list(std::move(c.items));
}

Value f_join(FilterCall& c) {
  const Value sep = c.arg(0, "d", Value::string(""));
  const Value attr = c.arg(1, "attribute", Value::none());
  std::string r;
  for (size_t k = 0; k < c.items.size(); ++k)
    r += (k ? to_str(sep) : "") +
         to_str(attr.type == Value::Str ? c.attribute(c.items[k], attr.s) : c.items[k]);
  return Value::string(r);
}

Value f_unique(FilterCall& c) {
  ValueList out;
  for (const Value& x : c.items)
    if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); }))
      out.push_back(x);
  return Value::make_list(std::move(out));
}

Value f_sum(FilterCall& c) {
  const Value attr = c.arg(0, "attribute", Value::none());
  Value total = c.arg(1, "start", Value::integer(0));
  for (const Value& x : c.items) {
    const Value y = attr.type == Value::Str ? c.attribute(x, attr.s) : x;
    if (!y.is_number() || !total.is_number()) c.fail(c.what + " wants numbers");
    total = (y.type == Value::Float || total.type == Value::Float)
                ? Value::number(total.as_double() + y.as_double())
                : Value::integer(int64_t(total.as_double()) + int64_t(y.as_double()));
  }
  return total;
}

Value f_min_max(FilterCall& c) {  // "min" and "max"
  const std::string& f = c.e.text;
  if (c.items.empty()) return Value::undefined("the " + f + " of an empty sequence");
  Value best = c.items[0];
  for (const Value& x : c.items)
    if (f == "min" ? c.less(x, best) : c.less(best, x)) best = x;
  return best;
}

Value f_sort(FilterCall& c) {
  const bool rev = truthy(c.arg(0, "reverse", Value::boolean(false)));
  const Value attr = c.arg(2, "attribute", Value::none());
  auto key = [&](const Value& x) { return attr.type == Value::Str ? c.attribute(x, attr.s) : x; };
  std::stable_sort(c.items.begin(), c.items.end(), [&](const Value& a, const Value& b) {
    return rev ? c.less(key(b), key(a)) : c.less(key(a), key(b));
  });
  return Value::make_list(std::move(c.items));
}

Value f_map(FilterCall& c) {
  const Value attr = c.arg(99, "attribute", Value::none());
  if (attr.type != Value::Str) c.fail("filter 'map' is supported only as map(attribute=NAME)");
  const Value dflt = c.arg(99, "default", Value::undefined("default"));
  ValueList out;
  for (const Value& x : c.items) {
    Value y = c.attribute(x, attr.s);
    out.push_back(y.type == Value::Undefined && dflt.type != Value::Undefined ? dflt : y);
  }
  return Value::make_list(std::move(out));
}

Value f_select_reject(FilterCall& c) {  // "selectattr" and "rejectattr"
  const Expr& e = c.e;
  if (c.pos.empty() || c.pos[0].type != Value::Str) c.fail(c.what + " wants an attribute name");
  Expr probe = e;  // a Test node over each attribute: `attr is TEST ARG`
  probe.kind = Expr::Test;
  probe.negate = false;
  probe.text = c.pos.size() > 1 && c.pos[1].type == Value::Str ? c.pos[1].s : "";
  probe.args.assign(e.args.begin(), e.args.begin() + std::min<size_t>(e.args.size(), 1));
  if (e.args.size() > 3) probe.args.push_back(e.args[3]);
  ValueList out;
  for (const Value& x : c.items) {
    const Value a = c.attribute(x, c.pos[0].s);
    const bool pass = probe.text.empty() ? truthy(a) : c.test(probe, a);
    if (pass == (e.text == "selectattr")) out.push_back(x);
  }
  return Value::make_list(std::move(out));
}

const std::map<std::string, FilterDef, std::less<>>& filters() {
  static const std::map<std::string, FilterDef, std::less<>> table = {
      {"abs", {f_abs, false}},
      {"capitalize", {f_capitalize, false}},
      {"count", {f_length, false}},
      {"d", {f_default, false}},
      {"default", {f_default, false}},
      {"dictsort", {f_dictsort, false}},
      {"first", {f_first_last, true}},
      {"float", {f_float, false}},
      {"indent", {f_indent, false}},
      {"int", {f_int, false}},
      {"items", {f_items, false}},
      {"join", {f_join, true}},
      {"last", {f_first_last, true}},
      {"length", {f_length, false}},
      {"list", {f_list, true}},
      {"lower", {f_upper_lower, false}},
      {"map", {f_map, true}},
      {"max", {f_min_max, true}},
      {"min", {f_min_max, true}},
      {"rejectattr", {f_select_reject, true}},
      {"replace", {f_replace, false}},
      {"reverse", {f_reverse, true}},
      {"round", {f_round, false}},
      {"safe", {f_safe, false}},
      {"selectattr", {f_select_reject, true}},
      {"sort", {f_sort, true}},
      {"string", {f_string, false}},
      {"sum", {f_sum, true}},
      {"title", {f_title, false}},
      {"tojson", {f_tojson, false}},
      {"trim", {f_trim, false}},
      {"unique", {f_unique, true}},
      {"upper", {f_upper_lower, false}},
      {"wordcount", {f_wordcount, false}},
  };
  return table;
}

}  // namespace

bool is_filter(std::string_view name) {
  return filters().find(name) != filters().end();
}

Value Evaluator::filter(const Expr& e) {
  FilterCall c{*this, e, eval(*e.args[0]), args_of(e), "filter '" + e.text + "'", {}};
  const auto f = filters().find(e.text);
  if (f == filters().end()) c.fail("unsupported filter '" + e.text + "'");
  if (f->second.on_sequence) {
    c.want(c.v.type == Value::List || c.v.type == Value::Dict || c.v.type == Value::Str ||
               c.v.type == Value::Undefined,
           "a sequence");
    c.items = iterate(c.v, e);
  }
  return f->second.fn(c);
}

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

}  // namespace tzero::jinja
