// Values of the chat-template interpreter (chat/chat_template_value.h).
#include "chat/chat_template_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "base/error.h"

namespace tzero::jinja {

namespace {

[[noreturn]] void too_deep() {
  throw Error("chat template: a value nested deeper than " + std::to_string(kMaxValueDepth) +
              " levels (lists and dicts inside each other)");
}

[[noreturn]] void too_long() {
  throw Error("chat template: a value whose text passes " + std::to_string(kMaxValueText >> 20) +
              " MiB");
}

// The depth a list or dict gets from holding `item` (checked against kMaxValueDepth).
int depth_holding(const Value& item) {
  if (item.ns)
    throw Error(
        "chat template: a namespace() cannot be put inside a list, a dict or another namespace");
  if (item.depth >= kMaxValueDepth) too_deep();
  return item.depth + 1;
}

}  // namespace

Value Value::make_list(ValueList items) {
  Value v = with(List);
  v.depth = 1;
  for (const Value& item : items) v.depth = std::max(v.depth, depth_holding(item));
  v.list = std::make_shared<ValueList>(std::move(items));
  return v;
}

Value Value::make_dict(ValueDict items) {
  Value v = with(Dict);
  v.depth = 1;
  for (const auto& kv : items) v.depth = std::max(v.depth, depth_holding(kv.second));
  v.dict = std::make_shared<ValueDict>(std::move(items));
  return v;
}

const Value* Value::get(const std::string& key) const {
  if (type != Dict) return nullptr;
  for (const auto& kv : *dict)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void Value::put(const std::string& key, Value v) {
  // A namespace's other copies keep their depth: it is never inside anything (above), so no
  // other value's depth depends on it, and each item is checked here.
  depth = std::max(depth, depth_holding(v));
  for (auto& kv : *dict)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  dict->emplace_back(key, std::move(v));
}

const char* type_name(const Value& v) {
  switch (v.type) {
    case Value::Undefined:
      return "undefined";
    case Value::None:
      return "NoneType";
    case Value::Bool:
      return "bool";
    case Value::Int:
      return "int";
    case Value::Float:
      return "float";
    case Value::Str:
      return "str";
    case Value::List:
      return "list";
    case Value::Dict:
      return v.ns ? "namespace" : "dict";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.type) {
    case Value::Undefined:
    case Value::None:
      return false;
    case Value::Bool:
      return v.b;
    case Value::Int:
      return v.i != 0;
    case Value::Float:
      return v.f != 0;
    case Value::Str:
      return !v.s.empty();
    case Value::List:
      return !v.list->empty();
    case Value::Dict:
      return v.ns || !v.dict->empty();
  }
  return false;
}

namespace {

// Recursion: at most a's depth (kMaxValueDepth) levels; `steps` counts the items compared.
bool equal_at(const Value& a, const Value& b, size_t& steps) {
  if (++steps > kMaxCompareSteps)
    throw Error("chat template: comparing values of more than " + std::to_string(kMaxCompareSteps) +
                " items");
  if (a.is_number() && b.is_number()) {
    if (a.type != Value::Float && b.type != Value::Float)
      return (a.type == Value::Bool ? int64_t(a.b) : a.i) ==
             (b.type == Value::Bool ? int64_t(b.b) : b.i);
    return a.as_double() == b.as_double();
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Value::Undefined:
    case Value::None:
      return true;
    case Value::Str:
      return a.s == b.s;
    case Value::List:
      if (a.list == b.list) return true;  // one list (Python's == starts with identity too)
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equal_at((*a.list)[k], (*b.list)[k], steps)) return false;
      return true;
    case Value::Dict:
      if (a.dict == b.dict) return true;
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& kv : *a.dict) {
        const Value* o = b.get(kv.first);
        if (!o || !equal_at(kv.second, *o, steps)) return false;
      }
      return true;
    default:
      return false;
  }
}

}  // namespace

bool equal(const Value& a, const Value& b) {
  size_t steps = 0;
  return equal_at(a, b, steps);
}

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // "-d.ddde+XX"
  const size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (std::isdigit(uint8_t(sci[k]))) digits += sci[k];
  const std::string sign = d < 0 ? "-" : "";
  if (exp < -4 || exp >= 16) {
    std::string m = digits.substr(0, 1);
    if (digits.size() > 1) m += "." + digits.substr(1);
    char ex[16];
    std::snprintf(ex, sizeof ex, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return sign + m + ex;
  }
  std::string out;
  if (exp < 0) {
    out = "0." + std::string(size_t(-exp - 1), '0') + digits;
  } else {
    if (digits.size() <= size_t(exp) + 1)
      digits += std::string(size_t(exp) + 1 - digits.size(), '0');
    out = digits.substr(0, size_t(exp) + 1);
    const std::string frac = digits.substr(size_t(exp) + 1);
    out += "." + (frac.empty() ? std::string("0") : frac);
  }
  return sign + out;
}

namespace {

// Appends Python's repr() of a string.
void repr_str(std::string& out, const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  out += q;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c == q)
      out += {'\\', q};
    else
      out += c;
  }
  out += q;
}

// Appends Python's repr() of v. Recursion: at most v.depth (kMaxValueDepth) levels, each a
// small frame (the text goes straight into out).
void repr_to(std::string& out, const Value& v) {
  switch (v.type) {
    case Value::Str:
      repr_str(out, v.s);
      return;
    case Value::List:
      if (out.size() > kMaxValueText) too_long();
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += ", ";
        repr_to(out, (*v.list)[k]);
      }
      out += ']';
      return;
    case Value::Dict: {
      if (out.size() > kMaxValueText) too_long();
      out += v.ns ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& kv : *v.dict) {
        if (!first) out += ", ";
        repr_str(out, kv.first);
        out += ": ";
        repr_to(out, kv.second);
        first = false;
      }
      out += v.ns ? "}>" : "}";
      return;
    }
    default:
      out += to_str(v);
  }
}

}  // namespace

std::string repr(const Value& v) {
  std::string out;
  repr_to(out, v);
  return out;
}

std::string to_str(const Value& v) {
  switch (v.type) {
    case Value::Undefined:
      return "";
    case Value::None:
      return "None";
    case Value::Bool:
      return v.b ? "True" : "False";
    case Value::Int:
      return std::to_string(v.i);
    case Value::Float:
      return python_float(v.f);
    case Value::Str:
      return v.s;
    default:
      return repr(v);
  }
}

namespace {

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, int indent, int level) {
  const auto newline = [&](int lvl) {
    out += '\n';
    out += std::string(size_t(indent) * size_t(lvl), ' ');
  };
  switch (v.type) {
    case Value::Undefined:
      throw std::invalid_argument("an undefined value (" + v.s + ") is not JSON serializable");
    case Value::None:
      out += "null";
      return;
    case Value::Bool:
      out += v.b ? "true" : "false";
      return;
    case Value::Int:
      out += std::to_string(v.i);
      return;
    case Value::Float:
      if (std::isnan(v.f))
        out += "NaN";
      else if (std::isinf(v.f))
        out += v.f > 0 ? "Infinity" : "-Infinity";
      else
        out += python_float(v.f);
      return;
    case Value::Str:
      json_string(out, v.s);
      return;
    case Value::List:
    case Value::Dict: {
      if (out.size() > kMaxValueText) too_long();
      const bool is_list = v.type == Value::List;
      const size_t n = is_list ? v.list->size() : v.dict->size();
      out += is_list ? '[' : '{';
      if (n == 0) {
        out += is_list ? ']' : '}';
        return;
      }
      for (size_t k = 0; k < n; ++k) {
        if (k) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(level + 1);
        if (is_list) {
          json_value(out, (*v.list)[k], indent, level + 1);
        } else {
          json_string(out, (*v.dict)[k].first);
          out += ": ";
          json_value(out, (*v.dict)[k].second, indent, level + 1);
        }
      }
      if (indent >= 0) newline(level);
      out += is_list ? ']' : '}';
      return;
    }
  }
}

}  // namespace

std::string to_json(const Value& v, int indent) {
  std::string out;
  json_value(out, v, indent, 0);
  return out;
}

namespace {

Value from_json_at(const nlohmann::ordered_json& j, int level) {
  // `level` is the depth j's list or dict would have at the top: checked before recursing.
  if (level > kMaxValueDepth && (j.is_array() || j.is_object())) too_deep();
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) items.push_back(from_json_at(e, level + 1));
      return Value::make_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict items;
      for (auto it = j.begin(); it != j.end(); ++it)
        items.emplace_back(it.key(), from_json_at(*it, level + 1));
      return Value::make_dict(std::move(items));
    }
    default:
      return Value::none();
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) {
  return from_json_at(j, 1);
}

}  // namespace tzero::jinja
