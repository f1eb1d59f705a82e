// The JSON Schema converter's walk (json_schema.cpp: schemas, strings, numbers, $ref;
// json_schema_objects.cpp: objects, arrays, allOf). Not a public API.
#pragma once

#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/json_schema_internal.h"

namespace tzero::schema_detail {

using nlohmann::ordered_json;

constexpr int kMaxDepth = 64;    // nested subschemas
constexpr int kMaxCount = 1000;  // minItems / minLength (and the cap of maxItems / maxLength)
constexpr int kIntegralDigits = 16;

// The shared rules (name -> body), emitted when used, and what each uses.
const std::map<std::string, std::string>& primitives();
const std::multimap<std::string, std::string>& primitive_deps();
// Keywords: ignored annotations, refused ones, and those the converter reads.
const std::set<std::string, std::less<>>& annotations();
const std::set<std::string, std::less<>>& refused();
const std::set<std::string, std::less<>>& handled();
std::string pointer_escape(const std::string& key);  // a JSON pointer token

// Walks a schema once, collecting rules; run() returns the GBNF text.
class Converter {
 public:
  Converter(const ordered_json& root, const SchemaLimits& limits) : root_(root), limits_(limits) {}

  std::string run();

 private:
  [[noreturn]] void too_big() const;

  std::string use(const std::string& primitive);

  std::string rule_name(const std::string& where);

  void set_body(const std::string& name, const std::string& body);
  void add_named(const std::string& name, const std::string& body);
  std::string add(const std::string& where, const std::string& body);
  // A helper rule, shared by every use of the same body.
  std::string add_shared(const std::string& where, const std::string& body);

  static std::string join(const std::vector<std::string>& alts);

  // --- the walk ---------------------------------------------------------------------------

  // A GBNF expression (usually a rule name) for the JSON texts the schema at `where` admits.
  std::string visit(const ordered_json& s, const std::string& where, int depth);

  std::string typed(const std::string& t, const ordered_json& s, const std::string& where,
                    int depth);

  std::string ref(const ordered_json& r, const std::string& where);

  std::string literals(const ordered_json& s, const std::string& where);

  static bool type_matches(const ordered_json& type, const ordered_json& v);

  // A non-negative count keyword (minItems, maxLength, ...), or -1 when absent.
  static long count(const ordered_json& s, const char* key, const std::string& where);

  std::string string(const ordered_json& s, const std::string& where);

  // Integer bounds: the least (lower) or greatest integer minimum / exclusiveMinimum (or
  // maximum / exclusiveMaximum) admit; draft 4's boolean exclusiveMinimum too.
  static std::optional<int64_t> bound(const ordered_json& s, bool lower, const std::string& where);

  std::string integer(const ordered_json& s, const std::string& where);

  std::string number(const ordered_json& s, const std::string& where);

  std::string object(const ordered_json& s, const std::string& where, int depth);
  std::string array(const ordered_json& s, const std::string& where, int depth);
  std::string extra_key(const std::vector<std::string>& declared, const std::string& where);
  ordered_json merge_all_of(const ordered_json& s, const std::string& where);

  struct Pending {
    std::string name;
    const ordered_json* target;
    std::string where;
  };
  const ordered_json& root_;
  const SchemaLimits& limits_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> names_, used_;
  std::map<std::string, std::string> refs_, shared_;
  std::map<std::string, size_t> index_;  // rule name -> its place in rules_
  std::deque<Pending> pending_;
  size_t bytes_ = 0;
};

}  // namespace tzero::schema_detail
