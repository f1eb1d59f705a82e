// JSON Schema to GBNF (grammar/gbnf.h): the grammar of the JSON texts a schema accepts, for
// structured output (OpenAI's response_format json_schema, llama.cpp's json_schema field,
// `tzero run --json-schema`). docs/GRAMMAR.md lists the keywords supported.
//
// The grammar admits a subset of the valid instances, never an invalid one: compact JSON with
// bounded whitespace, object properties in the schema's order, numbers with a bounded count of
// digits (so a generation always ends), and no extra properties unless additionalProperties
// asks for them. A keyword that would need more than that, or that tzero does not implement,
// is refused with a SchemaError naming it and where it is, so no output can ever break the
// schema silently (one caveat: oneOf is read as anyOf, so branches that overlap can let an
// output match two of them; docs/GRAMMAR.md). Annotations (title, description, examples, default,
// $schema, $id, $comment, ...) are ignored.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace tzero {

struct SchemaLimits {
  size_t max_schema_bytes = 64 * 1024;    // the schema's JSON text
  size_t max_grammar_bytes = 256 * 1024;  // the GBNF it becomes (GrammarLimits::max_text_bytes)
};

struct SchemaError : std::runtime_error {
  // where: a JSON pointer-like path to the offending keyword, e.g. "/properties/age/minimum"
  // ("" for the whole schema).
  SchemaError(std::string where_, const std::string& message)
      : std::runtime_error(where_.empty() ? "json schema: " + message
                                          : "json schema at " + where_ + ": " + message),
        where(std::move(where_)) {}
  std::string where;
};

// The GBNF grammar (its start rule `root`) of the instances of the schema, a JSON text.
// Throws SchemaError for malformed JSON (JSON nested deeper than kMaxJsonDepth included,
// base/bounded_json.h), an unsupported keyword, or a schema or grammar beyond the limits.
std::string json_schema_to_gbnf(std::string_view schema_json, const SchemaLimits& limits = {});

// Any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace tzero
