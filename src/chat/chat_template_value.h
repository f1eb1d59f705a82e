// Internals of the chat-template interpreter: the values a template computes with, as Jinja
// (Python) sees them, and their conversions (Python str(), repr(), truth, ==, json.dumps).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tzero::jinja {

// Lists and dicts inside each other, at most (a scalar is 0 deep, `[[1]]` 2). Every walker of
// values (repr, str, ==, tojson, from_json, and the destruction of the shared lists and dicts)
// recurses once per level, so the depth is kept on each value as it is built and a value that
// would pass the limit is an error (tzero::Error) instead of a stack overflow. Twice
// kMaxJsonDepth (base/bounded_json.h): the JSON a request hands a template (tool-call arguments,
// tools' parameters) is at most that deep and sits a few levels down in `messages` or `tools`.
// A namespace() is the one value changed after it is built, so it may not be put inside a list,
// a dict or another namespace: what it holds then never deepens anything else, and no value
// contains itself.
constexpr int kMaxValueDepth = 512;
// A value may hold one list many times over (`[x, x]` of `[x, x]` of ...: 2^n items to print
// from n lists), so the walkers also stop by size: repr(), str() and tojson past this much text,
// == past kMaxCompareSteps items compared (each a tzero::Error).
constexpr size_t kMaxValueText = size_t(256) << 20;
constexpr size_t kMaxCompareSteps = size_t(1) << 24;

struct Value;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;  // insertion order kept

struct Value {
  enum Type { Undefined, None, Bool, Int, Float, Str, List, Dict };
  Type type = Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // Str: the text; Undefined: what was looked up (for error messages)
  // Lists and dicts are shared, as Python objects are (a namespace is changed in place).
  std::shared_ptr<ValueList> list;
  std::shared_ptr<ValueDict> dict;
  bool ns = false;  // Dict made by namespace(): its attributes may be assigned
  int depth = 0;    // List, Dict: 1 + the deepest item's (at most kMaxValueDepth)

  static Value undefined(std::string what) {
    Value v;
    v.s = std::move(what);
    return v;
  }
  static Value none() { return with(None); }
  static Value boolean(bool x) {
    Value v = with(Bool);
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v = with(Int);
    v.i = x;
    return v;
  }
  static Value number(double x) {
    Value v = with(Float);
    v.f = x;
    return v;
  }
  static Value string(std::string x) {
    Value v = with(Str);
    v.s = std::move(x);
    return v;
  }
  // Throw tzero::Error for an item that is a namespace() or would nest past kMaxValueDepth.
  static Value make_list(ValueList items = {});
  static Value make_dict(ValueDict items = {});

  bool is_number() const { return type == Int || type == Float || type == Bool; }
  double as_double() const { return type == Float ? f : type == Bool ? double(b) : double(i); }
  // Dict lookup; nullptr when absent.
  const Value* get(const std::string& key) const;
  // Sets a dict's key (the same checks as make_dict).
  void put(const std::string& key, Value v);

 private:
  static Value with(Type t) {
    Value v;
    v.type = t;
    return v;
  }
};

const char* type_name(const Value& v);  // Python's name: 'str', 'int', 'list', 'dict', ...
bool truthy(const Value& v);
bool equal(const Value& a, const Value& b);
std::string to_str(const Value& v);  // Python str(); undefined is ""
std::string repr(const Value& v);    // Python repr()
std::string python_float(double d);  // Python repr() of a float
// Python json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: none). Throws
// std::invalid_argument for an undefined value.
std::string to_json(const Value& v, int indent = -1);
// Throws tzero::Error for JSON nested deeper than kMaxValueDepth (checked before recursing).
Value from_json(const nlohmann::ordered_json& j);

}  // namespace tzero::jinja
