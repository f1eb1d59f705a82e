// Structured output fields to a GBNF grammar (server/structured_output.h).
#include "server/structured_output.h"

#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/json_fields.h"

namespace tzero::server {

using ojson = nlohmann::ordered_json;

const char* const kStructuredOutputFields[] = {
    "response_format", "grammar",       "json_schema", "guided_json",
    "guided_grammar",  "guided_choice", nullptr};

namespace {

using json_fields::bad;

const ojson* given(const ojson& body, const char* name) {
  return json_fields::field(body, name);
}

std::string type_error(const std::string& param, const ojson& v, const std::string& want) {
  return "Invalid type for '" + param + "': expected " + want + ", but got " + v.type_name() + ".";
}

std::string from_response_format(const ojson& rf) {
  if (!rf.is_object()) throw bad("response_format", type_error("response_format", rf, "an object"));
  const ojson* type = given(rf, "type");
  if (!type || !type->is_string())
    throw bad("response_format.type", "'response_format' needs a string 'type'.");
  const std::string t = type->get<std::string>();
  if (t == "text") return "";
  if (t == "json_object") {
    // llama.cpp lets json_object carry a schema.
    if (const ojson* schema = given(rf, "schema"))
      return schema_grammar(*schema, "response_format.schema");
    return json_object_gbnf();
  }
  if (t == "json_schema") {
    const ojson* js = given(rf, "json_schema");
    if (!js || !js->is_object())
      throw bad("response_format.json_schema",
                "response_format of type 'json_schema' needs a 'json_schema' object.",
                "missing_required_parameter");
    for (auto it = js->begin(); it != js->end(); ++it)
      if (it.key() != "name" && it.key() != "schema" && it.key() != "strict" &&
          it.key() != "description")
        throw bad("response_format.json_schema." + it.key(),
                  "Unrecognized json_schema field: " + it.key(), "unknown_parameter");
    if (const ojson* strict = given(*js, "strict"); strict && !strict->is_boolean())
      throw bad("response_format.json_schema.strict",
                type_error("response_format.json_schema.strict", *strict, "a boolean"));
    const ojson* schema = given(*js, "schema");
    // OpenAI makes `schema` optional: without one, any JSON value... of an object, as
    // json_object.
    if (!schema) return json_object_gbnf();
    return schema_grammar(*schema, "response_format.json_schema.schema");
  }
  throw bad("response_format.type",
            "response_format type '" + t + "' is not one of text, json_object, json_schema.");
}

std::string from_choices(const ojson& v) {
  if (!v.is_array() || v.empty())
    throw bad("guided_choice", "'guided_choice' must be a non-empty array of strings.");
  std::string g = "root ::= ";
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get<std::string>().empty())
      throw bad("guided_choice", "'guided_choice' must be a non-empty array of non-empty strings.");
    g += (i ? " | " : "") + gbnf_literal(v[i].get<std::string>());
  }
  return g + "\n";
}

}  // namespace

void check_grammar(const std::string& gbnf, const std::string& param) {
  try {
    compile_gbnf(gbnf);
  } catch (const GrammarError& e) {
    throw bad(param, e.what(), "invalid_grammar");
  }
}

std::string schema_grammar(const ojson& schema, const std::string& param) {
  try {
    // json_schema_to_gbnf parses the text with the nesting bound (base/bounded_json.h): a
    // string's JSON text is held to it as the body was.
    std::string gbnf = json_schema_to_gbnf(schema.is_string() ? schema.get_ref<const std::string&>()
                                                              : schema.dump());
    check_grammar(gbnf, param);
    return gbnf;
  } catch (const SchemaError& e) {
    throw bad(param, e.what(), "invalid_schema");
  }
}

std::string structured_output_grammar(const ojson& body) {
  std::vector<const char*> present;
  for (const char* const* f = kStructuredOutputFields; *f; ++f)
    if (const ojson* v = given(body, *f)) {
      // {"type": "text"} asks for nothing, so it may come with another field.
      if (std::string(*f) == "response_format" && v->is_object() && v->value("type", "") == "text")
        continue;
      present.push_back(*f);
    }
  if (present.empty()) return "";
  if (present.size() > 1)
    throw bad(present[1],
              std::string("Give one of '") + present[0] + "' and '" + present[1] + "', not both.");
  const std::string f = present[0];
  const ojson& v = *given(body, present[0]);
  if (f == "response_format") return from_response_format(v);
  if (f == "json_schema") return schema_grammar(v, f);
  if (f == "guided_json") return schema_grammar(v, f);  // an object or its JSON text
  if (f == "guided_choice") return from_choices(v);
  // grammar, guided_grammar: GBNF text.
  if (!v.is_string()) throw bad(f, type_error(f, v, "a string (GBNF)"));
  const std::string gbnf = v.get<std::string>();
  if (gbnf.empty()) return "";
  check_grammar(gbnf, f);
  return gbnf;
}

}  // namespace tzero::server
