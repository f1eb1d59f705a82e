// The per-architecture half of kernel selection (kernels/kernel_set.cpp is the other half).
// Exactly one implementation is compiled: kernels/x86/select_x86.cpp (CPUID and XGETBV; the
// avx2, avx512 and AMX sets), kernels/arm/select_arm.cpp (getauxval HWCAP; the neon sets), or
// kernels/portable/select_portable.cpp (any other architecture: the scalar reference only).
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel_set.h"

namespace tzero {

// The sets beyond "scalar" that this CPU runs, best last. with_checked: also the sets that need a
// run-time check beyond the CPU's feature bits (x86's AMX: OS permission and a self-check gemm).
std::vector<const KernelSet*> isa_kernels(bool with_checked);

// The set called `choice` when it belongs to this architecture: the set, or tzero::Error with
// "--kernels CHOICE: why" when this CPU cannot run it. nullptr when the name is not one of this
// architecture's (kernel_set.cpp then names the architecture it belongs to, or refuses it).
const KernelSet* isa_select(const std::string& choice);

// This build's architecture ("x86-64", "aarch64" or "portable") and the names isa_select knows,
// for messages: "avx2, avx512, amx, amx-emu".
const char* isa_arch();
const char* isa_names();

}  // namespace tzero
