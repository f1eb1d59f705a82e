// The engine side of the custom-op registry (include/tzero/ops.h): lookups, and a kernel set
// with registered kernels in place of some of its ops.
#pragma once

#include <string>
#include <vector>

#include "format/tensor_type.h"
#include "kernels/kernel_set.h"
#include "tzero/ops.h"

namespace tzero {

// "matmul.q8_0" -> Q8_0; std::nullopt for non-matmul op names.
std::optional<TensorType> matmul_op_type(const std::string& op);

tzero::GemmKernel find_gemm(const std::string& op, const std::string& name);  // nullptr if absent
tzero::RmsNormKernel find_rmsnorm(const std::string& name);
tzero::SwigluKernel find_swiglu(const std::string& name);

// A copy of `base` with the overrides "op=name" applied. Throws tzero::Error naming an unknown op
// or kernel.
KernelSet with_overrides(const KernelSet& base, const std::vector<std::string>& overrides);

}  // namespace tzero
