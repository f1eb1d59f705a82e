// Device selection, memory and copies for the CUDA backend (cuda_kernels.h), and the copy
// kernel that measures the device's memory bandwidth for the benchmark's roofline.
#include <algorithm>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_kernels.h"

namespace tzero::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" / "no driver" error
    return 0;
  }
  return n;
}

bool device_props(std::string* name, int* cc_major, int* cc_minor, size_t* memory_bytes,
                  std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *why = std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
    cudaGetLastError();
    return false;
  }
  if (n == 0) {
    *why = "no CUDA device";
    return false;
  }
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    *why = "cudaGetDeviceProperties failed";
    cudaGetLastError();
    return false;
  }
  *name = p.name;
  *cc_major = p.major;
  *cc_minor = p.minor;
  *memory_bytes = p.totalGlobalMem;
  return true;
}

void* dev_alloc(size_t bytes) {
  void* p = nullptr;
  TZ_CUDA(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
  TZ_CUDA(cudaMemset(p, 0, std::max<size_t>(bytes, 1)));
  return p;
}

void dev_free(void* p) {
  if (p) cudaFree(p);
}

void to_device(void* d_dst, const void* src, size_t bytes) {
  if (bytes) TZ_CUDA(cudaMemcpy(d_dst, src, bytes, cudaMemcpyHostToDevice));
}

void to_host(void* dst, const void* d_src, size_t bytes) {
  if (bytes) TZ_CUDA(cudaMemcpy(dst, d_src, bytes, cudaMemcpyDeviceToHost));
}

void dev_copy(void* d_dst, const void* d_src, size_t bytes) {
  if (bytes) TZ_CUDA(cudaMemcpy(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice));
}

void dev_zero(void* d_dst, size_t bytes) {
  if (bytes) TZ_CUDA(cudaMemset(d_dst, 0, bytes));
}

void sync() {
  TZ_CUDA(cudaDeviceSynchronize());
}

namespace {
__global__ void copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}
}  // namespace

double copy_bandwidth(size_t bytes, int reps) {
  const size_t n = bytes / sizeof(int4);
  void* a = dev_alloc(n * sizeof(int4));
  void* b = dev_alloc(n * sizeof(int4));
  cudaEvent_t e0, e1;
  TZ_CUDA(cudaEventCreate(&e0));
  TZ_CUDA(cudaEventCreate(&e1));
  int sms = 0;
  TZ_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  double best = 0;
  for (int r = 0; r < reps + 1; ++r) {  // the first run warms up
    TZ_CUDA(cudaEventRecord(e0));
    copy_kernel<<<unsigned(sms) * 8, 512>>>(static_cast<const int4*>(a), static_cast<int4*>(b), n);
    TZ_CUDA(cudaEventRecord(e1));
    TZ_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    TZ_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0 && ms > 0) best = std::max(best, 2.0 * double(n * sizeof(int4)) / (ms * 1e6));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  dev_free(a);
  dev_free(b);
  return best;
}

}  // namespace tzero::cuda
