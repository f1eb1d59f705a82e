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
  static Value make_list(ValueList items = {}) {
    Value v = with(List);
    v.list = std::make_shared<ValueList>(std::move(items));
    return v;
  }
  static Value make_dict(ValueDict items = {}) {
    Value v = with(Dict);
    v.dict = std::make_shared<ValueDict>(std::move(items));
    return v;
  }

  bool is_number() const { return type == Int || type == Float || type == Bool; }
  double as_double() const { return type == Float ? f : type == Bool ? double(b) : double(i); }
  // Dict lookup; nullptr when absent.
  const Value* get(const std::string& key) const;
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
Value from_json(const nlohmann::ordered_json& j);

}  // namespace tzero::jinja
