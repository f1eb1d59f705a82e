// The audit's report from a report built by hand (src/audit/audit_json.cpp, audit_html.cpp,
// audit_charts.cpp): values that were not measured are null / n/a with their reason, the
// heatmap has a colour scale, and the throughput shows its spread, or says it is noise.
#include <gtest/gtest.h>

#include "audit/audit.h"

namespace {
using namespace tzero;

AuditTiming timing(const std::string& config, RateStats decode, double decode_s) {
  AuditTiming t;
  t.config = config;
  t.runs = 5;
  t.decode = decode;
  t.prefill = {1000, 900, 1100};
  t.decode_seconds = decode_s;
  t.below_noise_floor = decode_s < kTimingNoiseFloorS;
  return t;
}

AuditReport report() {
  AuditReport r;
  r.model = "m.gguf";
  r.prompts = {"p1", "p2"};
  r.min_gap = {0.5f, 0.25f};
  r.min_gap_step = {1, 2};
  r.timing_runs = 3;
  for (const char* name : {"baseline (1 thread)", "threads=2", "batch: 3 mates", "fast mode #1"}) {
    AuditConfig c;
    c.name = name;
    c.deterministic = std::string(name).rfind("fast", 0) != 0;
    r.configs.push_back(c);
  }
  auto outcome = [&](const std::string& config, size_t prompt) -> AuditOutcome& {
    AuditOutcome o;
    o.config = config;
    o.prompt = prompt;
    r.outcomes.push_back(o);
    return r.outcomes.back();
  };
  outcome("baseline (1 thread)", 0);
  outcome("threads=2", 0);
  AuditOutcome& b = outcome("batch: 3 mates", 0);
  b.identical = false;
  b.na.deviation = "digest only";
  b.na.prefill = "shared passes";
  b.tg_tokens_per_s = 42;
  for (size_t p = 0; p < 2; ++p) {
    AuditOutcome& f = outcome("fast mode #1", p);
    f.identical = false;
    f.has_first = true;
    f.first_layer = 1;
    f.first_pos = 3;
    f.first_op = "kqv_out";
    f.max_logit_deviation = 7.15e-07;
  }
  AuditOutcome& g = outcome("threads=2", 1);
  g.identical = false;
  g.has_first = true;
  g.first_layer = 0;
  g.first_pos = 12;
  g.first_op = "ffn_up";
  r.timing = {timing("baseline (1 thread)", {100, 90, 120}, 0.15),
              timing("threads=2", {180, 170, 300}, 0.08),
              timing("batch: 3 mates", {250, 240, 2600}, 0.06),
              timing("fast mode #1", {190, 185, 195}, 0.079)};
  r.timing[2].prefill_na = "shared passes";
  return r;
}
}  // namespace

TEST(AuditReportJson, NotMeasuredIsNullWithItsReason) {
  const nlohmann::json j = audit_json(report());
  const auto& batch = j["outcomes"][2];
  EXPECT_TRUE(batch["max_logit_deviation"].is_null());
  EXPECT_TRUE(batch["pp_tokens_per_s"].is_null());
  EXPECT_EQ(batch["tg_tokens_per_s"], 42.0);
  EXPECT_EQ(batch["not_measured"], (nlohmann::json{{"max_logit_deviation", "digest only"},
                                                   {"pp_tokens_per_s", "shared passes"}}));
  EXPECT_EQ(j["outcomes"][3]["max_logit_deviation"], 7.15e-07);
  EXPECT_FALSE(j["outcomes"][3].contains("not_measured"));
  const auto& t = j["throughput"];
  EXPECT_EQ(t["noise_floor_s"], kTimingNoiseFloorS);
  ASSERT_EQ(t["configs"].size(), 4u);
  EXPECT_EQ(t["configs"][0]["decode_tokens_per_s"],
            (nlohmann::json{{"median", 100.0}, {"min", 90.0}, {"max", 120.0}}));
  EXPECT_EQ(t["configs"][0]["below_noise_floor"], false);
  EXPECT_EQ(t["configs"][2]["below_noise_floor"], false);
  EXPECT_TRUE(t["configs"][2]["prefill_tokens_per_s"].is_null());
  EXPECT_EQ(t["configs"][2]["not_measured"]["prefill_tokens_per_s"], "shared passes");
}

TEST(AuditReportHtml, HeatmapHasAColourScaleAndThroughputItsSpread) {
  const std::string h = audit_html(report());
  // n/a with its reason, and a deviation in significant digits rather than 0.000001.
  EXPECT_NE(h.find("<span class='na' title='digest only'>n/a*</span>"), std::string::npos);
  EXPECT_NE(h.find("<td>7.15e-07</td>"), std::string::npos);
  EXPECT_EQ(h.find("0.000001"), std::string::npos);
  // The heatmap: two cells (2 runs at blk.1 position 3, 1 at blk.0 position 12) and a scale.
  EXPECT_NE(h.find("aria-label='first divergences'"), std::string::npos);
  EXPECT_NE(h.find("<title>2 run(s) first diverged at position 3, blk.1:"), std::string::npos);
  EXPECT_NE(h.find("runs per cell:"), std::string::npos);
  EXPECT_NE(h.find("fill='rgba(200,40,40,0.25)' stroke='#999'/><text"), std::string::npos);
  EXPECT_NE(h.find("fill='rgba(200,40,40,1.00)' stroke='#999'/><text"), std::string::npos);
  // Throughput: median bars with a min-max whisker; the scale fits the medians (1.25 x 250),
  // so the whisker of the 2600 run is cut at the edge and its label says where it ends.
  EXPECT_NE(h.find("aria-label='throughput'"), std::string::npos);
  EXPECT_NE(h.find(">100.0 (90.0&ndash;120.0)</text>"), std::string::npos);
  EXPECT_NE(h.find("<line x1='577' y1='47' x2='670' y2='47' stroke='#222'/>"), std::string::npos)
      << "batch row: whisker from 240 tokens/s (x = 270 + 400 * 240 / 312.5) to 2600, cut at "
         "the edge (x = 270 + 400)";
  EXPECT_NE(h.find(">250.0 (240.0&ndash;2600.0)</text>"), std::string::npos);
  EXPECT_NE(h.find("fastest run is more than twice their slowest"), std::string::npos);
  EXPECT_EQ(h.find("No bars drawn"), std::string::npos);
  EXPECT_NE(h.find("title='shared passes'>n/a&dagger;</span>"), std::string::npos);
  EXPECT_EQ(h.find("https://"), std::string::npos) << "self-contained";
}

TEST(AuditReportHtml, NoBarsWhenAnyRateIsNoise) {
  // One configuration under the noise floor: no bars at all (a bar beside noise would compare
  // the two), the reason given, every rate still in the table.
  AuditReport r = report();
  r.timing[2].decode = {25000, 300, 26000};
  r.timing[2].decode_seconds = 0.0006;
  r.timing[2].below_noise_floor = true;
  const std::string h = audit_html(r);
  EXPECT_EQ(h.find("aria-label='throughput'"), std::string::npos);
  EXPECT_NE(h.find("<b>No bars drawn:</b> 1 of 4 configurations decoded their tokens in under 5 "
                   "ms per run (median)"),
            std::string::npos);
  EXPECT_NE(h.find("<td>25000.0 (300.0&ndash;26000.0)</td>"), std::string::npos);
  EXPECT_NE(h.find("<td class='fast'>0.60 ms (under the noise floor)</td>"), std::string::npos);
  EXPECT_NE(h.find("<td>100.0 (90.0&ndash;120.0)</td>"), std::string::npos);
  r.timing.clear();
  EXPECT_NE(audit_html(r).find("Not measured (<code>--timing-runs 0</code>)"), std::string::npos);
}
