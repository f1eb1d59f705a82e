// JSON Schema to GBNF (json_schema.h). The schema is walked once: each subschema becomes a
// rule named from its path, a $ref a rule of its own (so recursive schemas are recursive
// rules), and the shared pieces (ws, string, number, ...) rules emitted when used. Objects,
// arrays and allOf are in json_schema_objects.cpp; patterns and integer ranges in
// json_schema_regex.cpp.
#include "grammar/json_schema.h"

#include <cmath>

#include "base/bounded_json.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema_converter.h"

namespace tzero {
namespace schema_detail {

// The shared rules, emitted when used.
const std::map<std::string, std::string>& primitives() {
  static const std::map<std::string, std::string> p = {
      {"ws", R"(| " " | "\n" [ \t]{0,20})"},
      {"char",
       R"([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-C] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [eEfF] [0-9a-fA-F]{3})))"},
      {"string", R"("\"" char* "\"")"},
      {"integer", R"("-"? ("0" | [1-9] [0-9]{0,15}))"},
      {"number", R"(integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?)"},
      {"boolean", R"("true" | "false")"},
      {"null", R"("null")"},
      {"value", R"(object | array | string | number | boolean | null)"},
      {"object", R"("{" ws (string ws ":" ws value ws ("," ws string ws ":" ws value ws)*)? "}")"},
      {"array", R"("[" ws (value ws ("," ws value ws)*)? "]")"},
      {"date",
       R"([1-9] [0-9]{3} "-" (("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("04" | "06" | "09" | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02" "-" ("0" [1-9] | "1" [0-9] | "2" [0-8])))"},
      {"time",
       R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [-+] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
      {"date-time", R"(date "T" time)"},
      {"uuid",
       R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
  };
  return p;
}
// What each primitive uses.
const std::multimap<std::string, std::string>& primitive_deps() {
  static const std::multimap<std::string, std::string> d = {
      {"string", "char"},  {"number", "integer"}, {"value", "object"},  {"value", "array"},
      {"value", "string"}, {"value", "number"},   {"value", "boolean"}, {"value", "null"},
      {"object", "ws"},    {"object", "string"},  {"object", "value"},  {"array", "ws"},
      {"array", "value"},  {"date-time", "date"}, {"date-time", "time"}};
  return d;
}

const std::set<std::string, std::less<>>& annotations() {
  static const std::set<std::string, std::less<>> a = {
      "title",   "description", "examples",         "default",         "$schema",
      "$id",     "$comment",    "deprecated",       "readOnly",        "writeOnly",
      "$anchor", "$vocabulary", "contentMediaType", "contentEncoding", "contentSchema",
      "$defs",   "definitions", "$dynamicAnchor",   "$recursiveAnchor"};
  return a;
}

const std::set<std::string, std::less<>>& refused() {
  static const std::set<std::string, std::less<>> r = {"contains",
                                                       "minContains",
                                                       "maxContains",
                                                       "minProperties",
                                                       "maxProperties",
                                                       "multipleOf",
                                                       "not",
                                                       "if",
                                                       "then",
                                                       "else",
                                                       "patternProperties",
                                                       "dependentRequired",
                                                       "dependentSchemas",
                                                       "dependencies",
                                                       "propertyNames",
                                                       "unevaluatedItems",
                                                       "unevaluatedProperties",
                                                       "additionalItems",
                                                       "$dynamicRef",
                                                       "$recursiveRef",
                                                       "uniqueItems"};
  return r;
}

const std::set<std::string, std::less<>>& handled() {
  static const std::set<std::string, std::less<>> h = {"type",
                                                       "properties",
                                                       "required",
                                                       "additionalProperties",
                                                       "items",
                                                       "prefixItems",
                                                       "minItems",
                                                       "maxItems",
                                                       "enum",
                                                       "const",
                                                       "anyOf",
                                                       "oneOf",
                                                       "allOf",
                                                       "$ref",
                                                       "minLength",
                                                       "maxLength",
                                                       "pattern",
                                                       "format",
                                                       "minimum",
                                                       "maximum",
                                                       "exclusiveMinimum",
                                                       "exclusiveMaximum"};
  return h;
}

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (const char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// --- the converter ---------------------------------------------------------------------------

std::string Converter::run() {
  add_named("root", "\"\"");
  set_body("root", visit(root_, "", 0));
  while (!pending_.empty()) {
    const auto [name, target, where] = pending_.front();
    pending_.pop_front();
    set_body(name, visit(*target, where, 0));
  }
  std::string out;
  for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
  std::set<std::string> done;
  std::vector<std::string> todo(used_.begin(), used_.end());
  while (!todo.empty()) {
    const std::string p = todo.back();
    todo.pop_back();
    if (!done.insert(p).second) continue;
    auto [b, e] = primitive_deps().equal_range(p);
    for (auto it = b; it != e; ++it) todo.push_back(it->second);
  }
  for (const std::string& p : done) out += p + " ::= " + primitives().at(p) + "\n";
  if (out.size() > limits_.max_grammar_bytes) too_big();
  return out;
}

void Converter::too_big() const {
  throw SchemaError(
      "", "the grammar would be more than " + std::to_string(limits_.max_grammar_bytes) + " bytes");
}

std::string Converter::use(const std::string& primitive) {
  used_.insert(primitive);
  return primitive;
}

std::string Converter::rule_name(const std::string& where) {
  std::string base = where.empty() ? "root-schema" : "root";
  for (size_t i = 0; i < where.size(); ++i) {
    const char c = where[i];
    const bool ok = std::isalnum(uint8_t(c));
    if (ok)
      base += c;
    else if (base.back() != '-')
      base += '-';
  }
  while (base.size() > 1 && base.back() == '-') base.pop_back();
  // Shorter names: drop the keyword segments that every path has.
  for (const char* seg : {"-properties-", "-anyOf-", "-oneOf-", "-defs-", "-definitions-"}) {
    for (size_t at; (at = base.find(seg)) != std::string::npos;)
      base.replace(at, std::string(seg).size(), "-");
  }
  if (base.size() > 48) base.resize(48);
  std::string name = base;
  for (int k = 2; names_.count(name) || primitives().count(name); ++k)
    name = base + "-" + std::to_string(k);
  names_.insert(name);
  return name;
}

void Converter::set_body(const std::string& name, const std::string& body) {
  bytes_ += name.size() + body.size() + 6;
  if (bytes_ > limits_.max_grammar_bytes) too_big();
  rules_[index_.at(name)].second = body;
}

void Converter::add_named(const std::string& name, const std::string& body) {
  names_.insert(name);
  index_[name] = rules_.size();
  rules_.push_back({name, ""});
  set_body(name, body);
}

std::string Converter::add(const std::string& where, const std::string& body) {
  const std::string name = rule_name(where);
  add_named(name, body);
  return name;
}

std::string Converter::add_shared(const std::string& where, const std::string& body) {
  auto it = shared_.find(body);
  if (it != shared_.end()) return it->second;
  return shared_[body] = add(where, body);
}

std::string Converter::join(const std::vector<std::string>& alts) {
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

std::string Converter::visit(const ordered_json& s, const std::string& where, int depth) {
  if (depth >= kMaxDepth)  // depth 0 is the root, level 1
    throw SchemaError(where, "subschemas nested deeper than " + std::to_string(kMaxDepth) +
                                 " levels (the root is level 1)");
  if (s.is_boolean()) {
    if (!s.get<bool>()) throw SchemaError(where, "the schema false admits no value");
    return use("value");
  }
  if (!s.is_object()) throw SchemaError(where, "a schema must be an object or a boolean");
  std::vector<std::string> assertions;
  for (const auto& [key, value] : s.items()) {
    if (annotations().count(key)) continue;
    if (key == "uniqueItems" && value == false) continue;
    if (key == "format" && s.contains("type") && !type_matches(s["type"], "")) continue;
    if (refused().count(key))
      throw SchemaError(where + "/" + pointer_escape(key),
                        "the keyword `" + key + "` is not supported");
    if (handled().count(key)) assertions.push_back(key);
    // Any other keyword has no meaning in JSON Schema and is ignored.
  }
  const auto only = [&](const std::string& keyword, std::set<std::string> allowed) {
    allowed.insert(keyword);
    for (const std::string& k : assertions)
      if (!allowed.count(k))
        throw SchemaError(where + "/" + pointer_escape(k),
                          "`" + k + "` together with `" + keyword + "` is not supported");
  };
  if (s.contains("$ref")) {
    only("$ref", {});
    return ref(s["$ref"], where + "/$ref");
  }
  if (s.contains("const") || s.contains("enum")) {
    only(s.contains("const") ? "const" : "enum", {"type", "const", "enum"});
    return add(where, literals(s, where));
  }
  for (const char* k : {"anyOf", "oneOf"})
    if (s.contains(k)) {
      only(k, {});
      const ordered_json& list = s[k];
      if (!list.is_array() || list.empty())
        throw SchemaError(where + "/" + k, std::string("`") + k + "` must be a non-empty array");
      std::vector<std::string> alts;
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string w = where + "/" + k + "/" + std::to_string(i);
        if (list[i] == false) continue;
        alts.push_back(visit(list[i], w, depth + 1));
      }
      if (alts.empty()) throw SchemaError(where + "/" + k, "no branch admits a value");
      return add(where, join(alts));
    }
  if (s.contains("allOf")) return visit(merge_all_of(s, where), where, depth + 1);

  std::vector<std::string> types;
  if (s.contains("type")) {
    const ordered_json& t = s["type"];
    if (t.is_string())
      types.push_back(t.get<std::string>());
    else if (t.is_array() && !t.empty())
      for (const auto& x : t) {
        if (!x.is_string()) throw SchemaError(where + "/type", "a type must be a string");
        types.push_back(x.get<std::string>());
      }
    else
      throw SchemaError(where + "/type", "`type` must be a string or a non-empty array");
  } else {
    // No type: the instances of one type the keywords speak of (a subset of the valid ones).
    const auto has = [&](std::initializer_list<const char*> ks) {
      for (const char* k : ks)
        if (s.contains(k)) return true;
      return false;
    };
    if (has({"properties", "required", "additionalProperties"}))
      types = {"object"};
    else if (has({"items", "prefixItems", "minItems", "maxItems"}))
      types = {"array"};
    else if (has({"minLength", "maxLength", "pattern", "format"}))
      types = {"string"};
    else if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}))
      types = {"number"};
    else
      return use("value");
  }
  std::vector<std::string> alts;
  for (const std::string& t : types) alts.push_back(typed(t, s, where, depth));
  return alts.size() == 1 && alts[0].find(' ') == std::string::npos ? alts[0]
                                                                    : add(where, join(alts));
}

std::string Converter::typed(const std::string& t, const ordered_json& s, const std::string& where,
                             int depth) {
  if (t == "string") return string(s, where);
  if (t == "integer") return integer(s, where);
  if (t == "number") return number(s, where);
  if (t == "boolean") return use("boolean");
  if (t == "null") return use("null");
  if (t == "object") return object(s, where, depth);
  if (t == "array") return array(s, where, depth);
  throw SchemaError(where + "/type", "unknown type \"" + t + "\"");
}

std::string Converter::ref(const ordered_json& r, const std::string& where) {
  if (!r.is_string()) throw SchemaError(where, "`$ref` must be a string");
  const std::string target = r.get<std::string>();
  auto it = refs_.find(target);
  if (it != refs_.end()) return it->second;
  const ordered_json* node = nullptr;
  std::string pointer;
  if (target == "#") {
    return refs_[target] = "root";
  } else {
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (target.compare(0, p.size(), p) != 0) continue;
      std::string key;  // a JSON pointer token: ~1 is '/', ~0 is '~'
      const std::string tok = target.substr(p.size());
      for (size_t i = 0; i < tok.size(); ++i) {
        if (tok[i] == '/')
          throw SchemaError(where,
                            "only `$ref`s to #/$defs/NAME, #/definitions/NAME and # are supported");
        if (tok[i] == '~' && i + 1 < tok.size() && (tok[i + 1] == '0' || tok[i + 1] == '1'))
          key += tok[++i] == '0' ? '~' : '/';
        else
          key += tok[i];
      }
      const std::string container = p.substr(2, p.size() - 3);
      if (root_.is_object() && root_.contains(container) && root_[container].is_object() &&
          root_[container].contains(key)) {
        node = &root_[container][key];
        pointer = "/" + container + "/" + pointer_escape(key);
      }
      break;
    }
  }
  if (!node)
    throw SchemaError(where, "`$ref` \"" + target +
                                 "\" is not a #/$defs/NAME, #/definitions/NAME or # that exists");
  const std::string name = rule_name(pointer);
  add_named(name, "\"\"");
  refs_[target] = name;
  pending_.push_back({name, node, pointer});
  return name;
}

std::string Converter::literals(const ordered_json& s, const std::string& where) {
  std::vector<ordered_json> values;
  if (s.contains("const")) values.push_back(s["const"]);
  if (s.contains("enum")) {
    if (!s["enum"].is_array()) throw SchemaError(where + "/enum", "`enum` must be an array");
    for (const auto& v : s["enum"])
      if (!s.contains("const") || v == s["const"]) values.push_back(v);
    if (s.contains("const")) values.resize(std::min<size_t>(values.size(), 1));
  }
  std::vector<std::string> alts;
  for (const auto& v : values) {
    if (s.contains("type") && !type_matches(s["type"], v)) continue;
    alts.push_back(gbnf_literal(v.dump()));
  }
  if (alts.empty())
    throw SchemaError(where + (s.contains("const") ? "/const" : "/enum"), "no value admitted");
  return join(alts);
}

bool Converter::type_matches(const ordered_json& type, const ordered_json& v) {
  if (type.is_array()) {
    for (const auto& t : type)
      if (type_matches(t, v)) return true;
    return false;
  }
  const std::string t = type.is_string() ? type.get<std::string>() : "";
  if (t == "string") return v.is_string();
  if (t == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  return false;
}

long Converter::count(const ordered_json& s, const char* key, const std::string& where) {
  if (!s.contains(key)) return -1;
  const ordered_json& v = s[key];
  if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>())
    throw SchemaError(where + "/" + key,
                      std::string("`") + key + "` must be a non-negative integer");
  return long(std::min(v.get<double>(), 1e9));
}

std::string Converter::string(const ordered_json& s, const std::string& where) {
  long lo = count(s, "minLength", where), hi = count(s, "maxLength", where);
  if (lo > kMaxCount)
    throw SchemaError(where + "/minLength", "minLength above 1000 is not supported");
  if (hi > kMaxCount) hi = std::max(lo, long(kMaxCount));  // a subset: at most 1000
  if (lo >= 0 && hi >= 0 && lo > hi)
    throw SchemaError(where + "/minLength", "minLength above maxLength");
  if (s.contains("format")) {
    const ordered_json& f = s["format"];
    const std::string name = f.is_string() ? f.get<std::string>() : "";
    if (name != "date" && name != "time" && name != "date-time" && name != "uuid")
      throw SchemaError(where + "/format", "the format \"" + name + "\" is not supported");
    if (s.contains("pattern"))
      throw SchemaError(where + "/pattern", "`pattern` together with `format` is not supported");
    const long n_min = name == "date" ? 10 : name == "uuid" ? 36 : name == "time" ? 9 : 20;
    const long n_max = name == "date" ? 10 : name == "uuid" ? 36 : name == "time" ? 21 : 32;
    if (lo > n_min)
      throw SchemaError(where + "/minLength",
                        "`minLength` together with `format` is not supported");
    if (hi >= 0 && hi < n_max)
      throw SchemaError(where + "/maxLength",
                        "`maxLength` together with `format` is not supported");
    return add(where, "\"\\\"\" " + use(name) + " \"\\\"\"");
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string())
      throw SchemaError(where + "/pattern", "`pattern` must be a string");
    const std::string body = pattern_gbnf(
        s["pattern"].get<std::string>(), where + "/pattern", int(std::max(lo, 0L)), int(hi),
        [&](const std::string& b) { return add_shared(where + "/pattern", b); });
    return add(where, "\"\\\"\" " + (body.empty() ? "" : body + " ") + "\"\\\"\"");
  }
  if (lo <= 0 && hi < 0) return use("string");
  use("char");
  const std::string n = std::to_string(std::max(lo, 0L));
  return add(where,
             "\"\\\"\" char{" + n + "," + (hi >= 0 ? std::to_string(hi) : "") + "} \"\\\"\"");
}

std::optional<int64_t> Converter::bound(const ordered_json& s, bool lower,
                                        const std::string& where) {
  const char* inc = lower ? "minimum" : "maximum";
  const char* exc = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  std::optional<int64_t> best;
  const auto consider = [&](const char* k, bool exclusive) {
    const ordered_json& x = s[k];
    const std::string w = where + "/" + k;
    if (!x.is_number()) throw SchemaError(w, std::string("`") + k + "` must be a number");
    int64_t b = 0;
    if (x.is_number_integer()) {
      if (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(INT64_MAX))
        throw SchemaError(w, "a bound beyond 64-bit integers");
      const int64_t v = x.get<int64_t>();
      if (exclusive && v == (lower ? INT64_MAX : INT64_MIN))
        throw SchemaError(w, "a bound beyond 64-bit integers");
      b = exclusive ? (lower ? v + 1 : v - 1) : v;
    } else {
      const double d = x.get<double>();
      if (!(std::fabs(d) < 9e18)) throw SchemaError(w, "a bound beyond 64-bit integers");
      b = int64_t(lower ? (exclusive ? std::floor(d) + 1 : std::ceil(d))
                        : (exclusive ? std::ceil(d) - 1 : std::floor(d)));
    }
    if (!best || (lower ? b > *best : b < *best)) best = b;
  };
  const bool draft4 = s.contains(exc) && s[exc].is_boolean();
  if (s.contains(inc)) consider(inc, draft4 && s[exc] == true);
  if (s.contains(exc) && !draft4) consider(exc, true);
  return best;
}

std::string Converter::integer(const ordered_json& s, const std::string& where) {
  const auto lo = bound(s, true, where), hi = bound(s, false, where);
  if (!lo && !hi) return use("integer");
  return add(where, integer_range_gbnf(lo, hi, kIntegralDigits, where + "/minimum"));
}

std::string Converter::number(const ordered_json& s, const std::string& where) {
  const bool any_bound = s.contains("minimum") || s.contains("maximum") ||
                         s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum");
  if (!any_bound) return use("number");
  // Supported: an integral minimum >= 0, with an optional integral maximum. The instances are
  // then written without an exponent, so the integral part decides.
  for (const char* k : {"exclusiveMinimum", "exclusiveMaximum"})
    if (s.contains(k))
      throw SchemaError(where + "/" + k, std::string("`") + k +
                                             "` on a number is not supported (only on an integer)");
  const auto integral = [&](const char* k) {
    const ordered_json& v = s[k];
    if (!v.is_number() || std::floor(v.get<double>()) != v.get<double>() || v.get<double>() < 0 ||
        v.get<double>() > 9e15)
      throw SchemaError(
          where + "/" + k,
          std::string("`") + k +
              "` on a number is supported only as a non-negative integer (with `minimum`)");
    return int64_t(v.get<double>());
  };
  if (!s.contains("minimum"))
    throw SchemaError(where + "/maximum", "`maximum` on a number is supported only with `minimum`");
  const int64_t lo = integral("minimum");
  const std::string frac = "(\".\" [0-9]{1,16})?";
  if (!s.contains("maximum"))
    return add(where, integer_range_gbnf(lo, std::nullopt, kIntegralDigits, where + "/minimum") +
                          " " + frac);
  const int64_t hi = integral("maximum");
  if (hi < lo) throw SchemaError(where + "/maximum", "`maximum` below `minimum`");
  const std::string top = "\"" + std::to_string(hi) + "\" (\".\" \"0\"{1,16})?";
  if (hi == lo) return add(where, top);
  return add(where, integer_range_gbnf(lo, hi - 1, kIntegralDigits, where + "/minimum") + " " +
                        frac + " | " + top);
}

}  // namespace schema_detail

using schema_detail::Converter;
using schema_detail::ordered_json;
using schema_detail::primitives;

std::string json_schema_to_gbnf(std::string_view schema_json, const SchemaLimits& limits) {
  ordered_json schema;
  try {
    // The nesting limit first (a scan that stops at the first level past it), so that a deep
    // hostile text is refused as such whatever its size.
    check_json_depth(schema_json);
    if (schema_json.size() > limits.max_schema_bytes)
      throw SchemaError("", "the schema is " + std::to_string(schema_json.size()) +
                                " bytes, more than the limit of " +
                                std::to_string(limits.max_schema_bytes));
    schema = parse_json_bounded<ordered_json>(schema_json);
  } catch (const nlohmann::json::exception& e) {
    throw SchemaError("", std::string("not valid JSON: ") + e.what());
  }
  std::string gbnf = Converter(schema, limits).run();
  try {
    GrammarLimits g;
    g.max_text_bytes = limits.max_grammar_bytes;
    compile_gbnf(gbnf, g);
  } catch (const GrammarError& e) {
    throw SchemaError("", std::string("the grammar it becomes is refused: ") + e.what());
  }
  return gbnf;
}

std::string json_object_gbnf() {
  std::string out = "root ::= object\n";
  for (const char* p :
       {"object", "value", "array", "string", "char", "number", "integer", "boolean", "null", "ws"})
    out += std::string(p) + " ::= " + primitives().at(p) + "\n";
  return out;
}

}  // namespace tzero
