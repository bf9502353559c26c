#pragma once
// Where a tensor's storage lives. Only the CPU exists today; every kernel is looked up per
// device type (see core/dispatch.h), so a CUDA backend adds kernels, not branches.
#include <string>

namespace nf {

enum class DeviceType : unsigned char { cpu = 0, cuda = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  std::string str() const { return type == DeviceType::cpu ? "cpu" : "cuda:" + std::to_string(index); }
  bool operator==(const Device&) const = default;
};

}  // namespace nf
