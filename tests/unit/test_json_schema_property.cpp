// The property test of JSON Schema to GBNF: a few hundred seeded random schemas (nested objects
// with required and optional properties, arrays with bounds, enums, consts, anyOf, oneOf,
// allOf, strings with lengths, patterns and formats, integer ranges, numbers, booleans, nulls,
// $defs refs), each converted and given to a random-weight model through the Engine at
// temperature 1; every output must end by EOS, parse as JSON and validate against its schema
// under an independent validator (python3-jsonschema, tests/support/validate_json_schema.py).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "grammar/json_schema.h"
#include "support/test_support.h"
#include "tzero/engine.h"

namespace tzero {
namespace {

using nlohmann::ordered_json;

// Random schemas, bounded so that every instance is short: strings of at most 8 characters,
// arrays of at most 3 items, objects of at most 4 properties, 3 levels deep. rng() % n only
// (the standard distributions differ between library implementations).
class SchemaGen {
 public:
  explicit SchemaGen(uint32_t seed) : rng_(seed) {}

  ordered_json make() {
    defs_ = ordered_json::object();
    done_.clear();
    n_defs_ = 0;
    ordered_json s = pick(4) ? object(0) : any(0);
    if (!defs_.empty()) s["$defs"] = defs_;
    return s;
  }

 private:
  uint32_t pick(uint32_t n) { return rng_() % n; }
  template <class T>
  const T& one_of(const std::vector<T>& v) {
    return v[pick(uint32_t(v.size()))];
  }

  ordered_json any(int depth) {
    const uint32_t k = pick(depth >= 2 ? 9 : 13);
    switch (k) {
      case 0:
        return string();
      case 1:
        return pattern();
      case 2:
        return format();
      case 3:
        return integer();
      case 4:
        return number();
      case 5:
        return {{"type", pick(2) ? "boolean" : "null"}};
      case 6:
        return enumeration();
      case 7:
        return {{"const", literal()}};
      case 8:
        return {
            {"type", ordered_json::array({"integer", "null"})}, {"maximum", 99}, {"minimum", -9}};
      case 9:
        return object(depth + 1);
      case 10:
        return array(depth + 1);
      case 11:
        return choice(depth + 1);
      default:
        return ref(depth + 1);
    }
  }

  ordered_json string() {
    ordered_json s{{"type", "string"}};
    const int lo = int(pick(3));
    if (lo) s["minLength"] = lo;
    s["maxLength"] = lo + int(pick(7));
    return s;
  }

  ordered_json pattern() {
    static const std::vector<std::pair<std::string, int>> patterns = {
        {"^[a-z]{1,6}$", -1},
        {"^\\d{3}-\\d{2}$", -1},
        {"^(foo|bar)[0-9]?$", -1},
        {"^[A-Z][a-z]{0,4}$", -1},
        {"^[^a-z]{0,5}$", -1},
        {"^[\"\\\\x]{1,4}$", -1},
        {"^\\w+$", 6},
        {"^a.c$", -1},
        {"ab", 6},
        {"^(?:x|yz)+$", 7},
        {"^\\S\\s?\\W$", -1},
        {"^[0-9a-f]{2}(:[0-9a-f]{2}){0,2}$", -1}};
    const auto& [p, max_len] = patterns[pick(uint32_t(patterns.size()))];
    ordered_json s{{"type", "string"}, {"pattern", p}};
    if (max_len > 0) s["maxLength"] = max_len;
    return s;
  }

  ordered_json format() {
    return {{"type", "string"},
            {"format", one_of<std::string>({"date", "time", "date-time", "uuid"})}};
  }

  ordered_json integer() {
    ordered_json s{{"type", "integer"}};
    const int64_t lo = int64_t(pick(2001)) - 1000;
    switch (pick(4)) {
      case 0:
        s["minimum"] = lo;
        s["maximum"] = lo + int64_t(pick(3000));
        break;
      case 1:
        s["exclusiveMinimum"] = lo;
        s["exclusiveMaximum"] = lo + 2 + int64_t(pick(50));
        break;
      case 2:
        s["minimum"] = lo;
        s["maximum"] = lo;
        break;
      default:
        s["minimum"] = -int64_t(pick(100000));
        s["maximum"] = int64_t(pick(100000));
        break;
    }
    return s;
  }

  ordered_json number() {
    ordered_json s{{"type", "number"}, {"minimum", 0}};
    if (pick(2)) s["maximum"] = int(pick(1000));
    return s;
  }

  ordered_json literal() {
    static const std::vector<ordered_json> values = {"red",
                                                     "a\"b",
                                                     "line\nbreak",
                                                     "\xC3\xA9t\xC3\xA9",
                                                     "",
                                                     0,
                                                     -12,
                                                     3.5,
                                                     true,
                                                     false,
                                                     nullptr,
                                                     ordered_json::parse(R"({"k": [1, "v"]})"),
                                                     ordered_json::array()};
    return one_of(values);
  }

  ordered_json enumeration() {
    ordered_json e = ordered_json::array();
    const int n = 1 + int(pick(4));
    for (int i = 0; i < n; ++i) {
      ordered_json v = literal();
      if (std::find(e.begin(), e.end(), v) == e.end()) e.push_back(v);
    }
    return {{"enum", e}};
  }

  ordered_json object(int depth) {
    static const std::vector<std::string> keys = {"id",   "name",     "tags", "a b",
                                                  "q\"k", "\xC3\xA9", "x",    "value"};
    ordered_json props = ordered_json::object();
    ordered_json required = ordered_json::array();
    const int n = 1 + int(pick(4));
    for (int i = 0; i < n; ++i) {
      const std::string& k = one_of(keys);
      if (props.contains(k)) continue;
      props[k] = depth >= 3 ? string() : any(depth);
      if (pick(2)) required.push_back(k);
    }
    ordered_json s{{"type", "object"}, {"properties", props}};
    if (!required.empty()) s["required"] = required;
    if (depth < 2 && pick(8) == 0)  // allOf: this and another part with other properties
      return {
          {"allOf", ordered_json::array(
                        {s, {{"properties", {{"extra", integer()}}}, {"required", {"extra"}}}})}};
    if (pick(2)) s["additionalProperties"] = false;
    return s;
  }

  ordered_json array(int depth) {
    ordered_json s{{"type", "array"}};
    if (pick(4) == 0) {
      s["prefixItems"] = ordered_json::array({any(depth + 1), integer()});
      s["items"] = false;
      return s;
    }
    s["items"] = depth >= 3 ? integer() : any(depth);
    const int lo = int(pick(2));
    if (lo) s["minItems"] = lo;
    s["maxItems"] = lo + int(pick(3));
    return s;
  }

  ordered_json choice(int depth) {
    if (pick(2)) {  // anyOf: any branches
      ordered_json a = ordered_json::array({any(depth + 1), any(depth + 1)});
      return {{"anyOf", a}};
    }
    // oneOf with branches of different types, so an instance is never valid under two.
    ordered_json a = ordered_json::array({string(), {{"type", "boolean"}}});
    if (pick(2)) a.push_back(integer());
    return {{"oneOf", a}};
  }

  ordered_json ref(int depth) {
    // Only finished definitions are referred to again: no recursion, so instances stay short
    // (recursive schemas are in test_json_schema.cpp).
    if (!done_.empty() && pick(2)) return {{"$ref", "#/$defs/" + one_of(done_)}};
    const std::string name = "d" + std::to_string(n_defs_++);
    ordered_json def = depth >= 2 ? integer() : object(depth + 1);
    defs_[name] = def;
    done_.push_back(name);
    return {{"$ref", "#/$defs/" + name}};
  }

  std::mt19937 rng_;
  ordered_json defs_;
  std::vector<std::string> done_;
  int n_defs_ = 0;
};

struct Result {
  std::string text;
  FinishReason finish = FinishReason::none;
  StopReason stop = StopReason::none;
  int n_generated = 0;
  bool done = false;
};

TEST(JsonSchemaProperty, EveryOutputParsesAndValidates) {
  const char* python = "/usr/bin/python3";
  if (std::system((std::string(python) + " -c 'import jsonschema' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP()
        << "python3-jsonschema is absent (apt-get install python3-jsonschema; the Makefile's"
           " `make deps` installs it): outputs not validated";
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kSchemas = 400;
  std::vector<ordered_json> schemas;
  std::vector<std::string> grammars;
  for (int i = 0; i < kSchemas; ++i) {
    schemas.push_back(SchemaGen(uint32_t(1000 + i)).make());
    try {
      grammars.push_back(json_schema_to_gbnf(schemas.back().dump()));
    } catch (const SchemaError& e) {
      FAIL() << "schema " << i << " refused: " << e.what() << "\n" << schemas.back().dump(2);
    }
  }

  EngineOptions o;
  o.model_path = test::generated_model("tiny", "f32");
  o.n_threads = 2;
  o.max_seqs = 64;
  o.max_queue = 1024;
  Engine engine(o);
  std::vector<Result> results(static_cast<size_t>(kSchemas));
  const int kMaxTokens = 480;  // the context is 512
  for (int i = 0; i < kSchemas; ++i) {
    RequestParams r;
    r.prompt = "JSON:";
    r.max_tokens = kMaxTokens;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = uint64_t(i);
    r.grammar = grammars[size_t(i)];
    Result& res = results[size_t(i)];
    engine.submit(r, [&res](const TokenEvent& e) {
      res.text += e.text;
      if (e.finished) {
        res.finish = e.finish_reason;
        res.stop = e.stop_reason;
        res.n_generated = e.n_generated;
        res.done = true;
      }
    });
  }
  engine.run_until_idle();
  const auto t1 = std::chrono::steady_clock::now();

  const std::string dir = test::scratch_dir();
  const std::string jsonl = dir + "/outputs.jsonl";
  {
    std::ofstream f(jsonl);
    for (int i = 0; i < kSchemas; ++i)
      f << ordered_json{{"schema", schemas[size_t(i)]}, {"output", results[size_t(i)].text}}.dump()
        << "\n";
  }
  long tokens = 0, longest = 0;
  for (int i = 0; i < kSchemas; ++i) {
    const Result& r = results[size_t(i)];
    tokens += r.n_generated;
    longest = std::max<long>(longest, r.n_generated);
    ASSERT_TRUE(r.done) << i;
    EXPECT_EQ(r.finish, FinishReason::stop)
        << "schema " << i << " did not end by EOS (" << to_string(r.stop) << " after "
        << r.n_generated << " tokens)\n"
        << schemas[size_t(i)].dump() << "\noutput: " << r.text;
  }
  if (std::getenv("TZ_KEEP_OUTPUTS"))
    std::system(("cp " + jsonl + " /tmp/schema_outputs.jsonl").c_str());
  const std::string report = dir + "/validate.txt";
  const std::string cmd = std::string(python) +
                          " " TZ_SOURCE_DIR "/tests/support/validate_json_schema.py " + jsonl +
                          " > " + report + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_file(report);
  std::istringstream lines(test::read_file(report));
  std::string line;
  bool counted = false;
  while (std::getline(lines, line)) {
    if (line.rfind("checked\t", 0) == 0) {
      counted = true;
      EXPECT_NE(line.find("checked\t" + std::to_string(kSchemas) + "\t"), std::string::npos)
          << line;
      continue;
    }
    const size_t tab = line.find('\t');
    const int i = std::atoi(line.substr(0, tab).c_str());
    ADD_FAILURE() << "output " << i << ": " << line.substr(tab + 1)
                  << "\nschema: " << schemas[size_t(i)].dump() << "\ngrammar:\n"
                  << grammars[size_t(i)] << "output: " << results[size_t(i)].text;
  }
  EXPECT_TRUE(counted) << test::read_file(report);
  const auto t2 = std::chrono::steady_clock::now();
  const auto ms = [](auto a, auto b) {
    return long(std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count());
  };
  std::printf(
      "[ property ] %d schemas, %d outputs, %ld tokens (longest %ld), generation %ld ms, "
      "validation %ld ms\n",
      kSchemas, kSchemas, tokens, longest, ms(t0, t1), ms(t1, t2));
}

// The generator is seeded: the same schemas every run (so a failure reproduces).
TEST(JsonSchemaProperty, SchemasAreDeterministic) {
  EXPECT_EQ(SchemaGen(7).make().dump(), SchemaGen(7).make().dump());
  EXPECT_NE(SchemaGen(7).make().dump(), SchemaGen(8).make().dump());
}

}  // namespace
}  // namespace tzero
