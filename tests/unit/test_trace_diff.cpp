// tzero diff on traces made to order (TraceWriter): "identical" only when both traces hold the
// same whole records; an empty trace compares nothing (exit 2); a different prompt or
// fingerprint is said first; a hostile op name never reaches the terminal raw; NaN deviations
// are counted, not reported as 0; a record of no floats reads back.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "trace/diff.h"
#include "trace/trace_file.h"

namespace tzero {
namespace {

using nlohmann::json;

// A trace of n_pos positions x (attn_norm, l_out) of two layers, values dumped.
std::string make_trace(const std::string& name, int n_pos, const std::string& meta,
                       float poison = 0.0f, const std::string& op = "attn_norm") {
  const std::string path = test::scratch_dir() + "/" + name + ".trace";
  TraceWriter w(path, meta);
  std::vector<float> v(8);
  for (int p = 0; p < n_pos; ++p)
    for (int l = 0; l < 2; ++l)
      for (const std::string& o : {op, std::string("l_out")}) {
        for (size_t i = 0; i < v.size(); ++i) v[i] = float(p * 100 + l * 10 + int(i));
        if (poison != 0.0f && p == 1 && l == 1 && o == "l_out") v[3] = poison;
        w.write(uint32_t(p), l, o, v.data(), uint32_t(v.size()), true);
      }
  w.flush();
  return path;
}

json diff_json(const std::string& a, const std::string& b, int* exit_code) {
  const auto r = test::run_tzero({"diff", a, b, "--json"});
  *exit_code = r.exit_code;
  return r.exit_code == 2 ? json() : json::parse(r.out);
}

const char* kMeta = R"({"model":"m.gguf","fingerprint":"f1","prompt":"the dog"})";

TEST(TraceDiff, EmptyTraceComparesNothing) {
  const std::string full = make_trace("full", 3, kMeta);
  const std::string empty = make_trace("empty", 0, kMeta);
  const auto r = test::run_tzero({"diff", empty, full});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("no records: nothing to compare"), std::string::npos) << r.err;
}

TEST(TraceDiff, FewerRecordsIsNotIdentical) {
  const std::string full = make_trace("full3", 3, kMeta);
  const std::string part = make_trace("part2", 2, kMeta);  // cut at a record boundary
  int code = 0;
  const json j = diff_json(full, part, &code);
  EXPECT_EQ(code, 1);
  EXPECT_FALSE(j["identical"].get<bool>());
  EXPECT_TRUE(j["shared_identical"].get<bool>());
  EXPECT_EQ(j["only_a"], 4);
  const json same = diff_json(full, make_trace("full3b", 3, kMeta), &code);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(same["identical"].get<bool>());
}

TEST(TraceDiff, DifferentPromptAndFingerprintAreSaidFirst) {
  const std::string a = make_trace("meta_a", 2, kMeta);
  const std::string b =
      make_trace("meta_b", 2, R"({"model":"m.gguf","fingerprint":"f2","prompt":"a cat"})");
  int code = 0;
  const json j = diff_json(a, b, &code);
  EXPECT_EQ(j["metadata_differs"], json::array({"fingerprint", "prompt"}));
  const auto text = test::run_tzero({"diff", a, b});
  EXPECT_EQ(text.out.rfind("note: the traces are of a different fingerprint", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("different prompt: A \"the dog\", B \"a cat\""), std::string::npos);
}

TEST(TraceDiff, HostileNamesAreEscapedForTheTerminal) {
  const std::string evil = "attn\x1b]0;pwned\x07\x1b[2J";
  const std::string a = make_trace("evil_a", 2, kMeta, 0.0f, evil);
  const std::string b = make_trace("evil_b", 2, R"({"prompt":"\u001b[31mred"})", 7.5f, evil);
  const auto r = test::run_tzero({"diff", a, b});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "an escape sequence reached the terminal";
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_EQ(terminal_safe("a\x1b[b\\"), "a\\x1b[b\\x5c");
}

TEST(TraceDiff, NanIsCountedNotZero) {
  const std::string a = make_trace("nan_a", 2, kMeta);
  const std::string b = make_trace("nan_b", 2, kMeta, std::nanf(""));
  const TraceDiff d = diff_traces(read_trace(a), read_trace(b));
  ASSERT_EQ(d.deviations.size(), 1u);
  EXPECT_EQ(d.deviations[0].nan, 1u);
  int code = 0;
  const json j = diff_json(a, b, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(j["deviations"][0]["nan"], 1);
}

TEST(TraceDiff, RecordOfNoFloatsReadsBack) {
  const std::string path = test::scratch_dir() + "/zero.trace";
  {
    TraceWriter w(path, "{}");
    w.write(0, -1, "inp_embd", nullptr, 0, true);
    w.flush();
  }
  const TraceFile t = read_trace(path);
  ASSERT_EQ(t.records.size(), 1u);
  EXPECT_EQ(t.records[0].n, 0u);
  EXPECT_TRUE(t.records[0].values.empty());
}

}  // namespace
}  // namespace tzero
