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
  sub->add_option("--draft-max", f.draft_max,
                  "Most tokens drafted per verification pass (default 16)");
  sub->add_option("--draft-min", f.draft_min, "Fewer drafted tokens are not verified (default 0)");
}

SpeculativeOptions speculative_options(const SpeculativeFlags& f, const Session& target) {
  SpeculativeOptions o;
  const bool drafting = f.spec_type == "ngram-simple" || !f.draft_model.empty();
  check(drafting || (f.draft_max < 0 && f.draft_min < 0),
        std::string(f.draft_max >= 0 ? "--draft-max" : "--draft-min") +
            " needs --draft-model FILE or --spec-type ngram-simple");
  if (f.draft_max >= 0) o.draft_max = f.draft_max;
  if (f.draft_min >= 0) o.draft_min = f.draft_min;
  check(o.draft_max >= 1 && o.draft_max <= 256, "--draft-max: between 1 and 256");
  check(o.draft_min <= o.draft_max, "--draft-min: at most --draft-max");
  if (f.spec_type == "ngram-simple") {
    check(f.draft_model.empty(), "give --draft-model or --spec-type ngram-simple, not both");
    o.source = DraftSource::ngram;
  } else if (!f.draft_model.empty()) {
    check(f.spec_type.empty() || f.spec_type == "draft",
          "--spec-type none turns speculative decoding off: not with --draft-model");
    o.draft = open_draft_model(f.draft_model, target);
    o.source = DraftSource::model;
  } else {
    check(f.spec_type.empty() || f.spec_type == "none",
          "--spec-type draft needs --draft-model FILE");
  }
  return o;
}

}  // namespace tzero::cli
