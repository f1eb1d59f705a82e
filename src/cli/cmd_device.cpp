// tzero device: whether this build has CUDA, the device it would use, and optionally the
// device's measured memory bandwidth (a copy kernel), the roofline of batch-1 decode.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "cli/commands.h"

namespace tzero::cli {

Command add_device(CLI::App& app) {
  auto* sub = app.add_subcommand("device", "Show the CUDA device (--gpu-layers) and its bandwidth");
  sub->footer(
      "Exit status 0: this is a report, with or without a device (in --json, \"usable\" says "
      "whether --gpu-layers can run). --bandwidth without a usable device is exit 2.");
  struct Opts {
    bool bandwidth = false, json = false;
    int mib = 1024;
  };
  auto o = std::make_shared<Opts>();
  sub->add_flag("--bandwidth", o->bandwidth,
                "Measure the device memory bandwidth with a copy kernel (GB/s, read + write)");
  sub->add_option("--mib", o->mib, "Buffer size of the bandwidth copy, MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_flag("--json", o->json, "Print one JSON object");
  return {sub, [o] {
            const DeviceInfo d = cuda_device_info();
            nlohmann::json j = {
                {"cuda_built", cuda_built()}, {"usable", d.usable}, {"device", describe_device(d)}};
            if (o->bandwidth)
              j["bandwidth_gb_s"] = measure_device_bandwidth(size_t(o->mib) << 20, 5);
            if (o->json) {
              std::printf("%s\n", j.dump().c_str());
            } else {
              std::printf("cuda: %s\ndevice: %s\n", cuda_built() ? "built" : "not built",
                          describe_device(d).c_str());
              if (o->bandwidth)
                std::printf("bandwidth: %.1f GB/s (copy of %d MiB, read + write)\n",
                            j["bandwidth_gb_s"].get<double>(), o->mib);
            }
            return 0;
          }};
}

}  // namespace tzero::cli
