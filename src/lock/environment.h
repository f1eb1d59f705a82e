// The machine a lock was made or verified on, as recorded in the lock file: the tzero version,
// the CPU (model name, the x86 features the kernels use, the kernel variants this CPU can run
// and the one chosen), the OS (uname) and the compiler tzero was built with. Recorded for the
// reader, not hashed: the contract says none of it changes the bits (docs/DETERMINISM.md), and
// when a verify drifts, the differing entries are listed beside the manifest's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tzero::lock {

// kernel_variant: the kernel set the run chose ("" when it ran no engine here).
nlohmann::json environment_json(const std::string& kernel_variant);

}  // namespace tzero::lock
