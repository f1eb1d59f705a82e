// Linked into a tzero binary (tzero_with_my_kernels, the way TZ_EXTRA_KERNEL_SOURCES links yours),
// this registers the example's kernels before main runs, so the ordinary command line can use
// them: `tzero_with_my_kernels check-op --op matmul.f32 --name canonical_x4` and
// `tzero_with_my_kernels run -m MODEL.gguf --op matmul.f32=canonical_x4 ...`.
#include "my_kernels.h"

namespace {
const bool registered = (example::register_my_kernels(), true);
}  // namespace
