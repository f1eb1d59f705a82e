// Example: register three custom f32 matmul kernels and ask tzero which ones keep the
// reproducibility contract. Exit status 0 when every verdict is the expected one.
#include <cstdio>

#include "my_kernels.h"
#include "tzero/check_op.h"
#include "tzero/ops.h"

int main() {
  example::register_my_kernels();
  struct Expect {
    const char* name;
    tzero::OpVerdict verdict;
  } expected[] = {{"canonical_x4", tzero::OpVerdict::IdenticalToReference},
                  {"sequential", tzero::OpVerdict::StableButDifferent},
                  {"batch_dependent", tzero::OpVerdict::Unstable}};
  int wrong = 0;
  for (const auto& e : expected) {
    const tzero::OpCheckReport r = tzero::check_op("matmul.f32", e.name);
    std::printf("%-16s %s%s%s\n", e.name, tzero::verdict_name(r.verdict),
                r.detail.empty() ? "" : ": ", r.detail.c_str());
    wrong += r.verdict != e.verdict;
  }
  return wrong == 0 ? 0 : 1;
}
