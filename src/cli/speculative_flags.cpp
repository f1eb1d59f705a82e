#include "cli/speculative_flags.h"

#include "base/error.h"

namespace tzero::cli {

void add_speculative_flags(CLI::App* sub, SpeculativeFlags& f) {
  sub->add_option("--draft-model", f.draft_model,
                  "Draft model for speculative decoding (same vocabulary): the output does not "
                  "change, only the speed");
  sub->add_option("--spec-type", f.spec_type,
                  "Speculative decoding without a draft model: ngram-simple (the tokens that "
                  "followed the last earlier match of the text's tail)")
      ->check(CLI::IsMember({"none", "draft", "ngram-simple"}));
  sub->add_option("--draft-max", f.draft_max, "Most tokens drafted per verification pass")
      ->capture_default_str();
  sub->add_option("--draft-min", f.draft_min, "Fewer drafted tokens are not verified")
      ->capture_default_str();
}

SpeculativeOptions speculative_options(const SpeculativeFlags& f, const ComputeOptions& target) {
  SpeculativeOptions o;
  o.draft_max = f.draft_max;
  o.draft_min = f.draft_min;
  if (f.spec_type == "ngram-simple") {
    check(f.draft_model.empty(), "give --draft-model or --spec-type ngram-simple, not both");
    o.source = DraftSource::ngram;
  } else if (!f.draft_model.empty()) {
    check(f.spec_type.empty() || f.spec_type == "draft",
          "--spec-type " + f.spec_type + " with --draft-model");
    ComputeOptions c = target;
    c.gpu_layers = 0;
    try {
      o.draft = Session::open(f.draft_model, c);
    } catch (const Error& e) {
      throw Error(std::string("--draft-model: ") + e.what());
    }
    o.source = DraftSource::model;
  } else {
    check(f.spec_type.empty() || f.spec_type == "none",
          "--spec-type draft needs --draft-model FILE");
  }
  return o;
}

}  // namespace tzero::cli
