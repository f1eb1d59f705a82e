// JSON Schema to GBNF (src/grammar/json_schema.h): per keyword, texts the grammar must accept
// and must refuse (through the byte-level matcher), the refusals naming the keyword and its
// path, and the limits.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"

namespace tzero {
namespace {

struct Compiled {
  explicit Compiled(const std::string& schema)
      : gbnf(json_schema_to_gbnf(schema)),
        matcher(std::make_shared<const Grammar>(compile_gbnf(gbnf))) {}
  bool matches(const std::string& s) {
    uint32_t st = matcher.start();
    for (const char c : s)
      if ((st = matcher.next(st, uint8_t(c))) == GrammarMatcher::kDead) return false;
    return matcher.accepting(st);
  }
  std::string gbnf;
  GrammarMatcher matcher;
};

// Every `good` text matches the schema's grammar and no `bad` one does.
void check(const std::string& schema, std::initializer_list<std::string> good,
           std::initializer_list<std::string> bad) {
  Compiled c(schema);
  for (const std::string& g : good)
    EXPECT_TRUE(c.matches(g)) << schema << "\nshould match: " << g << "\n" << c.gbnf;
  for (const std::string& b : bad)
    EXPECT_FALSE(c.matches(b)) << schema << "\nshould not match: " << b << "\n" << c.gbnf;
}

// The SchemaError's message ("" when none), and its path.
std::string refusal(const std::string& schema, std::string* where = nullptr,
                    const SchemaLimits& limits = {}) {
  try {
    json_schema_to_gbnf(schema, limits);
  } catch (const SchemaError& e) {
    if (where) *where = e.where;
    return e.what();
  }
  return "";
}

TEST(JsonSchema, PrimitiveTypes) {
  check(R"({"type": "string"})", {R"("")", R"("abc")", R"("a\"b\\c\n\u00e9\/")", "\"\xC3\xA9\""},
        {R"(abc)", R"("a)", "\"a\nb\"", "\"\x01\"", R"("\x")", R"("\ud800")", R"( "a")"});
  check(R"({"type": "integer"})", {"0", "-7", "1234567890123456"},
        {"01", "1.5", "-", "+1", "12345678901234567", "1e3", " 1"});
  check(R"({"type": "number"})", {"0", "-0.5", "3.25e-7", "1E+10", "12", "9e99"},
        {".5", "1.", "01", "1e", "1e1234", "9e308", "0.12345678901234567"});
  check(R"({"type": "boolean"})", {"true", "false"}, {"True", "1", "null"});
  check(R"({"type": "null"})", {"null"}, {"nul", "None", "\"null\""});
  check(R"({"type": ["integer", "null"]})", {"3", "null"}, {"\"3\"", "true"});
}

TEST(JsonSchema, AnyValueAndJsonObject) {
  for (const char* any : {"{}", "true"})
    check(any, {"1", R"({"a": [1, {"b": null}], "c": "d"})", "[]", "\"x\"", "null"},
          {"{", "[1,]", "nul"});
  GrammarMatcher m(std::make_shared<const Grammar>(compile_gbnf(json_object_gbnf())));
  const auto ok = [&](const std::string& s) {
    uint32_t st = m.start();
    for (const char c : s)
      if ((st = m.next(st, uint8_t(c))) == GrammarMatcher::kDead) return false;
    return m.accepting(st);
  };
  EXPECT_TRUE(ok(R"({"a": [1, 2], "b": {"c": "d"}})"));
  EXPECT_TRUE(ok("{}"));
  EXPECT_FALSE(ok("[1]"));
  EXPECT_FALSE(ok("\"s\""));
}

TEST(JsonSchema, ObjectPropertiesInOrderWithOptionalOnes) {
  const std::string s = R"({"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
      "required": ["b"]})";
  check(s,
        {R"({"b": "x"})", R"({"a": 1, "b": "x"})", R"({"b": "x", "c": true})",
         R"({"a": 1, "b": "x", "c": false})", "{\n  \"a\":1,\"b\" : \"x\"\n}"},
        {R"({})", R"({"a": 1})", R"({"b": "x", "a": 1})", R"({"b": "x",})", R"({, "b": "x"})",
         R"({"b": "x", "d": 1})", R"({"b": 1})"});
  // All optional: the empty object, any subset in order.
  check(R"({"properties": {"x": {"type": "null"}, "y": {"type": "null"}, "z": {"type": "null"}}})",
        {"{}", R"({"y": null})", R"({"x": null, "z": null})", R"({"x":null,"y":null,"z":null})"},
        {R"({"z": null, "x": null})", R"({"x": null,})", R"({,"y": null})"});
}

TEST(JsonSchema, OptionalPropertiesStayLinear) {
  // 200 optional properties: a linear number of rules, not 2^200.
  std::string s = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 200; ++i)
    s += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\": {\"type\": \"integer\"}";
  s += "}}";
  const std::string g = json_schema_to_gbnf(s);
  EXPECT_LT(g.size(), 60000u);
  Compiled c(s);
  EXPECT_TRUE(c.matches(R"({"p3": 1, "p150": 2, "p199": 3})"));
  EXPECT_FALSE(c.matches(R"({"p150": 2, "p3": 1})"));
}

TEST(JsonSchema, AdditionalProperties) {
  // Absent with properties: no extras (a valid subset); false: none.
  for (const char* s :
       {R"({"properties": {"a": {"type": "integer"}}})",
        R"({"properties": {"a": {"type": "integer"}}, "additionalProperties": false})"})
    check(s, {R"({"a": 1})", "{}"}, {R"({"a": 1, "b": 2})", R"({"b": 2})"});
  // A schema: extra pairs after the declared ones, with keys other than the declared ones.
  check(R"({"properties": {"a": {"type": "integer"}}, "required": ["a"],
            "additionalProperties": {"type": "string"}})",
        {R"({"a": 1})", R"({"a": 1, "b": "x", "ab": "y"})", R"({"a": 1, "": "e"})"},
        {R"({"a": 1, "b": 2})", R"({"a": 1, "a": "x"})", R"({"b": "x", "a": 1})", R"({"b": "x"})"});
  check(R"({"properties": {"a": {"type": "integer"}}, "additionalProperties": true})",
        {R"({"b": [1, {}]})", R"({"a": 1, "zz": null})", "{}"},
        {R"({"a": 1, "a": 2})", R"({"a": "s"})"});
  // No properties at all: any object.
  check(R"({"type": "object"})", {"{}", R"({"x": {"y": [1]}})"}, {"[]", "{\"x\"}"});
  check(R"({"type": "object", "additionalProperties": {"type": "integer"}})",
        {R"({"x": 1, "y": 2})", "{}"}, {R"({"x": "1"})"});
}

TEST(JsonSchema, RequiredWithoutDeclarationTakesAnyValue) {
  check(R"({"type": "object", "required": ["id"]})", {R"({"id": 1})", R"({"id": {"a": []}})"},
        {"{}", R"({"other": 1})"});
}

TEST(JsonSchema, Arrays) {
  check(R"({"type": "array", "items": {"type": "integer"}})", {"[]", "[1]", "[1, 2,3]", "[ 1 ]"},
        {"[1,]", "[,1]", "[\"a\"]", "["});
  check(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})",
        {"[1, 2]", "[1, 2, 3]"}, {"[]", "[1]", "[1, 2, 3, 4]"});
  check(R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"});
  check(R"({"type": "array"})", {"[]", R"([1, "a", {"b": null}])"}, {"[1,]"});
  check(R"({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false})",
        {R"([1, "a"])"}, {R"([1])", R"(["a", 1])", R"([1, "a", 2])"});
  check(R"({"prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}, "maxItems": 3})",
        {"[1]", "[1, true]", "[1, true, false]"}, {"[1, true, false, true]", "[true]"});
  check(R"({"items": [{"type": "null"}, {"type": "boolean"}]})", {"[null, true]"},
        {"[true, null]"});
}

TEST(JsonSchema, EnumAndConst) {
  check(R"({"enum": ["red", "green", 3, null, {"a": [1]}, "q\"uote"]})",
        {R"("red")", "3", "null", R"({"a":[1]})", R"("q\"uote")"},
        {R"("blue")", R"("Red")", "4", R"({"a": [1]})"});
  check(R"({"type": "string", "enum": ["a", 1, "b"]})", {R"("a")", R"("b")"}, {"1"});
  check(R"({"const": "fixed"})", {R"("fixed")"}, {R"("fixe")", R"("fixed2")"});
  check(R"({"const": {"k": true}})", {R"({"k":true})"}, {R"({"k":false})"});
  check(R"({"const": "\u00e9\n"})", {"\"\xC3\xA9\\n\""}, {"\"\xC3\xA9\n\""});
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  check(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]})", {"1", R"("ab")"},
        {R"("abc")", "true"});
  check(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})", {"true", "null"}, {"1"});
  check(
      R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                      {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})",
      {R"({"a": 1, "b": "x"})"}, {R"({"a": 1})", R"({"b": "x"})", R"({"b": "x", "a": 1})"});
  check(R"({"$defs": {"base": {"properties": {"id": {"type": "integer"}}, "required": ["id"]}},
            "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"name": {"type": "string"}}}]})",
        {R"({"id": 1})", R"({"id": 1, "name": "n"})"}, {R"({"name": "n"})"});
}

TEST(JsonSchema, RefsAndRecursion) {
  const std::string tree = R"({"$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"]}}, "$ref": "#/$defs/node"})";
  check(tree, {R"({"v": 1})", R"({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}, {"v": 4}]})"},
        {R"({"v": 1, "kids": [{}]})", R"({"kids": []})"});
  check(
      R"({"definitions": {"a b/c": {"type": "boolean"}}, "properties": {"x": {"$ref": "#/definitions/a b~1c"}}})",
      {R"({"x": true})"}, {R"({"x": 1})"});
  check(R"({"type": "object", "properties": {"next": {"$ref": "#"}}})",
        {"{}", R"({"next": {"next": {}}})"}, {R"({"next": 1})"});
  std::string where;
  EXPECT_NE(refusal(R"({"$ref": "#/$defs/missing"})", &where).find("missing"), std::string::npos);
  EXPECT_EQ(where, "/$ref");
  EXPECT_NE(refusal(R"({"$ref": "http://example.com/s.json"})").find("$ref"), std::string::npos);
  // A definition that is only itself never consumes a character: refused, not looped on.
  EXPECT_NE(refusal(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})"), "");
}

TEST(JsonSchema, StringLengths) {
  check(R"({"type": "string", "minLength": 2, "maxLength": 3})",
        {R"("ab")", R"("abc")", R"("a\n")", "\"\xE2\x82\xAC\xE2\x82\xAC\""},
        {R"("a")", R"("abcd")"});
  check(R"({"type": "string", "minLength": 1})", {R"("a")", R"("abcdefgh")"}, {R"("")"});
}

TEST(JsonSchema, Formats) {
  check(R"({"type": "string", "format": "date"})", {R"("2024-02-28")", R"("1999-12-31")"},
        {R"("2024-02-30")", R"("2024-13-01")", R"("2024-04-31")", R"("24-01-01")",
         R"("0000-01-01")"});
  check(R"({"type": "string", "format": "time"})", {R"("23:59:59Z")", R"("08:30:00.123+02:00")"},
        {R"("24:00:00Z")", R"("12:00:00")", R"("12:60:00Z")"});
  check(R"({"type": "string", "format": "date-time"})", {R"("2024-01-15T10:20:30Z")"},
        {R"("2024-01-15 10:20:30Z")", R"("2024-01-15")"});
  check(R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
        {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  check(R"({"type": ["string", "null"], "format": "date"})", {R"("2024-01-01")", "null"},
        {R"("x")"});
  EXPECT_EQ(refusal(R"({"type": "integer", "format": "int32"})"), "");  // not a string: no meaning
  std::string where;
  EXPECT_NE(refusal(R"({"type": "string", "format": "email"})", &where).find("email"),
            std::string::npos);
  EXPECT_EQ(where, "/format");
}

TEST(JsonSchema, Patterns) {
  check(R"({"type": "string", "pattern": "^[a-z]{2,3}-\\d+$"})", {R"("ab-1")", R"("abc-123")"},
        {R"("a-1")", R"("abcd-1")", R"("ab-")", R"("ab-1x")", R"("Xab-1")"});
  // Unanchored sides take any characters.
  check(R"({"type": "string", "pattern": "ab"})", {R"("ab")", R"("xxaby\n")"}, {R"("a b")"});
  check(R"({"type": "string", "pattern": "^ab"})", {R"("ab")", R"("abzz")"}, {R"("xab")"});
  check(R"({"type": "string", "pattern": "(?:cat|dog)s?$"})", {R"("cat")", R"("my dogs")"},
        {R"("cats!")"});
  check(R"({"type": "string", "pattern": "^\\w\\s\\W\\S\\D.$"})", {R"("a\t!xyz")", R"("_ .9a\"")"},
        {R"("a\n!x0z")", "\"a !xy\\n\""});
  check(R"({"type": "string", "pattern": "^[^a-c\\d]+$"})", {R"("xyz")", R"("Z_")"},
        {R"("xaz")", R"("x1")"});
  check(R"({"type": "string", "pattern": "^a{3}b{1,}c?$"})", {R"("aaab")", R"("aaabbbc")"},
        {R"("aab")", R"("aaa")"});
  // Characters JSON must escape: the grammar spells the JSON encoding of the string.
  check(R"({"type": "string", "pattern": "^\"\\\\\\n[\\t]$"})", {R"("\"\\\n\t")"},
        {"\"\"\\\n\t\"", R"("\"\\\n\u0009")"});
  check(R"({"type": "string", "pattern": "^\\.\\*\\x41\\u00e9$"})", {"\".*A\xC3\xA9\""},
        {R"("x*A\u00e9")"});
  // With maxLength / minLength the repetitions are narrowed to fit.
  check(R"({"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 5})",
        {R"("abc")", R"("abcde")"}, {R"("ab")", R"("abcdef")"});
  check(R"({"type": "string", "pattern": "x", "maxLength": 4})", {R"("x")", R"("axc")"},
        {R"("abcxd")", R"("axcde")"});
  for (const char* bad : {"(?=a)", "(?!a)", "(?<=a)b", "(a)\\1", "\\bword", "a^b", "\\p{L}",
                          "(?<n>a)", "a{2", "[]a]"}) {
    std::string where;
    const std::string why =
        refusal(nlohmann::ordered_json{{"type", "string"}, {"pattern", bad}}.dump(), &where);
    EXPECT_NE(why.find("pattern"), std::string::npos) << bad << ": " << why;
    EXPECT_EQ(where, "/pattern") << bad;
  }
}

TEST(JsonSchema, IntegerRangesAreExact) {
  const auto in_range = [](long lo, long hi, const std::string& schema) {
    Compiled c(schema);
    for (long v = lo - 150; v <= hi + 150; ++v)
      EXPECT_EQ(c.matches(std::to_string(v)), v >= lo && v <= hi) << schema << ": " << v;
    EXPECT_FALSE(c.matches("-0"));
    EXPECT_FALSE(c.matches("0" + std::to_string(std::max(1L, lo))));
  };
  in_range(0, 100, R"({"type": "integer", "minimum": 0, "maximum": 100})");
  in_range(7, 1234, R"({"type": "integer", "minimum": 7, "maximum": 1234})");
  in_range(-250, -3, R"({"type": "integer", "minimum": -250, "maximum": -3})");
  in_range(-99, 42, R"({"type": "integer", "exclusiveMinimum": -100, "exclusiveMaximum": 43})");
  in_range(-5, 5, R"({"type": "integer", "minimum": -5.5, "maximum": 5.9})");
  in_range(3, 9, R"({"type": "integer", "minimum": 3, "maximum": 9})");
  check(R"({"type": "integer", "minimum": 10})", {"10", "9999999999999999", "123"},
        {"9", "-1", "0"});
  check(R"({"type": "integer", "maximum": -10})", {"-10", "-11", "-9999999999999999"},
        {"-9", "0", "5"});
  check(R"({"type": "integer", "maximum": 5})", {"5", "0", "-123"}, {"6", "10"});
  check(R"({"type": "integer", "minimum": -9223372036854775808, "maximum": -9223372036854775800})",
        {"-9223372036854775808", "-9223372036854775801"},
        {"-9223372036854775809", "-9223372036854775799"});
  check(R"({"type": "integer", "minimum": 1, "exclusiveMinimum": true})", {"2"}, {"1"});  // draft 4
  EXPECT_NE(refusal(R"({"type": "integer", "minimum": 5, "maximum": 4})"), "");
}

TEST(JsonSchema, NumberBounds) {
  check(R"({"type": "number", "minimum": 0})", {"0", "0.5", "12.25"}, {"-1", "-0.5"});
  check(R"({"type": "number", "minimum": 1, "maximum": 3})", {"1", "2.75", "3", "3.00"},
        {"0.99", "3.01", "4", "-2"});
  std::string where;
  EXPECT_NE(refusal(R"({"type": "number", "minimum": 0.5})", &where).find("minimum"),
            std::string::npos);
  EXPECT_EQ(where, "/minimum");
  EXPECT_NE(
      refusal(R"({"type": "number", "exclusiveMinimum": 0})", &where).find("exclusiveMinimum"),
      std::string::npos);
  EXPECT_EQ(where, "/exclusiveMinimum");
  EXPECT_NE(refusal(R"({"type": "number", "maximum": 5})", &where).find("maximum"),
            std::string::npos);
}

TEST(JsonSchema, RefusalsNameTheKeywordAndPath) {
  for (const char* kw :
       {"uniqueItems\": true", "contains\": {}", "minProperties\": 1", "multipleOf\": 2",
        "not\": {}", "if\": {}", "patternProperties\": {}", "dependentRequired\": {}",
        "propertyNames\": {}", "unevaluatedProperties\": false", "maxProperties\": 3"}) {
    std::string where;
    const std::string schema =
        std::string(R"({"type": "object", "properties": {"a": {")") + kw + "}}}";
    const std::string why = refusal(schema, &where);
    const std::string name = std::string(kw).substr(0, std::string(kw).find('"'));
    EXPECT_NE(why.find("`" + name + "`"), std::string::npos) << why;
    EXPECT_EQ(where, "/properties/a/" + name) << schema;
  }
  EXPECT_NE(refusal("{\"type\": \"strin\"}").find("unknown type"), std::string::npos);
  EXPECT_NE(refusal("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(refusal("false").find("false"), std::string::npos);
  EXPECT_NE(refusal("[1]").find("object or a boolean"), std::string::npos);
  EXPECT_NE(refusal(R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})").find("allOf"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": false}, "required": ["a"]})"), "");
  // Annotations and unknown keywords are ignored; uniqueItems false means nothing.
  EXPECT_EQ(refusal(R"({"title": "t", "description": "d", "examples": [1], "default": 2,
      "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "$comment": "c",
      "deprecated": true, "readOnly": true, "x-custom": 1, "type": "array", "uniqueItems": false})"),
            "");
}

TEST(JsonSchema, LimitsAreCheckedEarly) {
  SchemaLimits small;
  small.max_schema_bytes = 100;
  EXPECT_NE(refusal(std::string(200, ' ') + "{}", nullptr, small).find("limit"), std::string::npos);
  // A big enum beyond the grammar size.
  std::string big = R"({"enum": [)";
  for (int i = 0; i < 2000; ++i)
    big += (i ? "," : "") + std::string("\"") + std::string(20, 'a' + i % 26) + std::to_string(i) +
           "\"";
  big += "]}";
  SchemaLimits g;
  g.max_grammar_bytes = 16 * 1024;
  EXPECT_NE(refusal(big, nullptr, g).find("bytes"), std::string::npos);
  EXPECT_EQ(refusal(big), "");
  // Deep nesting is refused, not recursed into without end.
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"type": "array", "items": )";
  deep += "{}";
  for (int i = 0; i < 200; ++i) deep += "}";
  EXPECT_NE(refusal(deep).find("deeper"), std::string::npos);
}

TEST(JsonSchema, SixtyFourLevelsAreTheLimit) {
  // Levels counted as the docs count them: the root is level 1.
  auto nested = [](int levels) {
    std::string s;
    for (int i = 1; i < levels; ++i) s += R"({"type": "array", "items": )";
    s += R"({"type": "integer"})";
    for (int i = 1; i < levels; ++i) s += "}";
    return s;
  };
  EXPECT_EQ(refusal(nested(64)), "");
  EXPECT_NE(refusal(nested(65)).find("deeper than 64"), std::string::npos) << refusal(nested(65));
}

TEST(JsonSchema, RuleNamesComeFromThePath) {
  const std::string g = json_schema_to_gbnf(
      R"({"properties": {"user name": {"properties": {"age": {"type": "integer", "minimum": 0}}}}})");
  EXPECT_NE(g.find("root-user-name-age ::="), std::string::npos) << g;
  EXPECT_EQ(g.rfind("root ::= ", 0), 0u) << g;
}

}  // namespace
}  // namespace tzero
