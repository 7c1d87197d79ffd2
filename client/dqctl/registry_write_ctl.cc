// Implements client/dqctl/registry_write_ctl.h.
#include "client/dqctl/registry_write_ctl.h"

#include <memory>

namespace dq::ctl {

Status write_registry_change(const CtlOptions& options, Registry& registry,
                             const ObjectWrite& write) {
  Config config;
  int exit_code = kExitOk;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return Status(Code::kInvalid, "the config cannot be read");
  }
  std::unique_ptr<SharedRegistry> shared;
  if (config.shared_registry) {
    shared = std::make_unique<SharedRegistry>(config);
  }
  return write_registry_object(registry.db(), shared.get(), write).status();
}

}  // namespace dq::ctl
