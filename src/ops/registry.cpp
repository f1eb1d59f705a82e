#include "ops/registry.h"

#include <map>
#include <mutex>

#include "base/error.h"

namespace tzero {

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, std::map<std::string, tzero::GemmKernel>> gemm;  // op -> name -> fn
  std::map<std::string, tzero::RmsNormKernel> rmsnorm;
  std::map<std::string, tzero::SwigluKernel> swiglu;
};
Registry& registry() {
  static Registry r;  // constructed on first use, so static registrations work in any order
  return r;
}
const char* kMatmulOps[][2] = {
    {"matmul.f32", "f32"},   {"matmul.f16", "f16"},      {"matmul.bf16", "bf16"},
    {"matmul.q8_0", "q8_0"}, {"matmul.q4_0", "q4_0"},    {"matmul.q4_k", "q4_k"},
    {"matmul.q5_k", "q5_k"}, {"matmul.q6_k", "q6_k"},    {"matmul.q2_k", "q2_k"},
    {"matmul.q3_k", "q3_k"}, {"matmul.iq4_xs", "iq4_xs"}};
}  // namespace

std::optional<TensorType> matmul_op_type(const std::string& op) {
  for (const auto& m : kMatmulOps)
    if (op == m[0]) return tensor_type_from_name(m[1]);
  return std::nullopt;
}

tzero::GemmKernel find_gemm(const std::string& op, const std::string& name) {
  const std::string builtin = "builtin:";
  if (name.rfind(builtin, 0) == 0) {
    const auto t = matmul_op_type(op);
    for (const KernelSet* k : available_kernels())
      if (t && name.substr(builtin.size()) == k->name) return k->gemm_for(*t);
    return nullptr;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.gemm.find(op);
  if (it == r.gemm.end()) return nullptr;
  auto jt = it->second.find(name);
  return jt == it->second.end() ? nullptr : jt->second;
}

tzero::RmsNormKernel find_rmsnorm(const std::string& name) {
  if (name.rfind("builtin:", 0) == 0)
    for (const KernelSet* k : available_kernels())
      if (name.substr(8) == k->name) return k->rmsnorm;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.rmsnorm.find(name);
  return it == r.rmsnorm.end() ? nullptr : it->second;
}

tzero::SwigluKernel find_swiglu(const std::string& name) {
  if (name.rfind("builtin:", 0) == 0)
    for (const KernelSet* k : available_kernels())
      if (name.substr(8) == k->name) return k->swiglu;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.swiglu.find(name);
  return it == r.swiglu.end() ? nullptr : it->second;
}

KernelSet with_overrides(const KernelSet& base, const std::vector<std::string>& overrides) {
  KernelSet k = base;
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    check(eq != std::string::npos, "--op wants OP=NAME, not '" + o + "'");
    const std::string op = o.substr(0, eq), name = o.substr(eq + 1);
    auto missing = [&] { return Error("--op: no kernel '" + name + "' registered for " + op); };
    if (auto t = matmul_op_type(op)) {
      tzero::GemmKernel fn = find_gemm(op, name);
      if (!fn) throw missing();
      // The set's own Blocks8 kernel would bypass the override: rows in that layout are
      // unpacked for the override instead (kernels/matmul.h, MatrixGemm).
      k.drop_blocks8(*t);
      switch (*t) {
        case TensorType::F32:
          k.gemm_f32 = fn;
          break;
        case TensorType::F16:
          k.gemm_f16 = fn;
          break;
        case TensorType::BF16:
          k.gemm_bf16 = fn;
          break;
        case TensorType::Q8_0:
          k.gemm_q8_0 = fn;
          break;
        case TensorType::Q4_0:
          k.gemm_q4_0 = fn;
          break;
        case TensorType::Q4_K:
          k.gemm_q4_k = fn;
          break;
        case TensorType::Q5_K:
          k.gemm_q5_k = fn;
          break;
        case TensorType::Q2_K:
          k.gemm_q2_k = fn;
          break;
        case TensorType::Q3_K:
          k.gemm_q3_k = fn;
          break;
        case TensorType::IQ4_XS:
          k.gemm_iq4_xs = fn;
          break;
        default:
          k.gemm_q6_k = fn;
          break;
      }
    } else if (op == "rmsnorm") {
      if (!(k.rmsnorm = find_rmsnorm(name))) throw missing();
    } else if (op == "swiglu") {
      if (!(k.swiglu = find_swiglu(name))) throw missing();
    } else {
      throw Error("--op: unknown op '" + op + "' (matmul.<type>, rmsnorm, swiglu)");
    }
  }
  return k;
}

}  // namespace tzero

namespace tzero {

bool register_gemm(const std::string& op, const std::string& name, GemmKernel fn) {
  if (!tzero::matmul_op_type(op) || !fn || name.rfind("builtin:", 0) == 0) return false;
  auto& r = tzero::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.gemm[op].emplace(name, fn).second;
}

bool register_rmsnorm(const std::string& name, RmsNormKernel fn) {
  if (!fn || name.rfind("builtin:", 0) == 0) return false;
  auto& r = tzero::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.rmsnorm.emplace(name, fn).second;
}

bool register_swiglu(const std::string& name, SwigluKernel fn) {
  if (!fn || name.rfind("builtin:", 0) == 0) return false;
  auto& r = tzero::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.swiglu.emplace(name, fn).second;
}

std::vector<RegisteredOp> registered_ops() {
  std::vector<RegisteredOp> out;
  for (const tzero::KernelSet* k : tzero::available_kernels()) {
    if (std::string(k->name) == "scalar") continue;  // the reference itself
    for (const auto& m : tzero::kMatmulOps)
      out.push_back({m[0], std::string("builtin:") + k->name});
    out.push_back({"rmsnorm", std::string("builtin:") + k->name});
    out.push_back({"swiglu", std::string("builtin:") + k->name});
  }
  auto& r = tzero::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [op, names] : r.gemm)
    for (const auto& [name, fn] : names) out.push_back({op, name});
  for (const auto& [name, fn] : r.rmsnorm) out.push_back({"rmsnorm", name});
  for (const auto& [name, fn] : r.swiglu) out.push_back({"swiglu", name});
  return out;
}

}  // namespace tzero
