// Structured output fields of a request, turned into the GBNF grammar the engine constrains the
// output to (RequestParams::grammar; docs/GRAMMAR.md):
//   OpenAI   response_format {"type": "text" | "json_object" | "json_schema",
//                             "json_schema": {"name", "schema", "strict", "description"}}
//   llama.cpp  grammar (GBNF text), json_schema (a schema object), response_format
//              {"type": "json_object", "schema": {...}}
//   vLLM     guided_json (a schema object or its JSON text), guided_grammar (GBNF),
//            guided_choice (a list of strings: the output is exactly one of them)
// At most one may be given. A schema or grammar that does not compile, uses an unsupported
// keyword, or passes the size limits is a 400 naming the field and the keyword or line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tzero::server {

// The request fields this file reads (for the endpoints' lists of known fields).
extern const char* const kStructuredOutputFields[];

// The grammar the body asks for ("" for none). The body is parsed keeping key order (a schema's
// properties come out in its order). Throws ApiError (400).
std::string structured_output_grammar(const nlohmann::ordered_json& body);

// The GBNF grammar of a JSON schema given as a JSON value, or as a string holding its JSON text
// (vLLM's guided_json; accepted wherever a schema goes). param names the field in errors: text
// that is not JSON, or is nested deeper than kMaxJsonDepth, is a 400 (invalid_schema) saying so.
std::string schema_grammar(const nlohmann::ordered_json& schema, const std::string& param);

// Throws ApiError (400, param) when the GBNF does not compile.
void check_grammar(const std::string& gbnf, const std::string& param);

}  // namespace tzero::server
