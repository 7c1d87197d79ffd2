// Implements client/dqctl/api_client.h.
#include "client/dqctl/api_client.h"

#include <algorithm>
#include <cstdio>

namespace dq::ctl {

namespace dc = dq::client;

dc::Client make_api_client(const CtlOptions& options, int timeout_ms) {
  return dc::Client({.servers = options.servers,
                     .timeout_ms = timeout_ms,
                     .connect_timeout_ms = std::min(timeout_ms, 2000),
                     .token = options.token});
}

Json client_error_json(const dc::Error& error) {
  Json out{{"error", error.message}, {"code", dc::error_code_name(error.code)}};
  if (error.http_status != 0) {
    out["http_status"] = error.http_status;
  }
  return out;
}

int report_client_error(const dc::Error& error, bool json) {
  std::string status = error.http_status != 0 ? " (" + std::to_string(error.http_status) + ")" : "";
  fprintf(stderr, "dqctl: %s%s: %s\n", dc::error_code_name(error.code), status.c_str(),
          error.message.c_str());
  if (json) {
    printf("%s\n", client_error_json(error).dump().c_str());
  }
  return client_exit_code(error);
}

int client_exit_code(const dc::Error& error) {
  bool unreachable = error.code == dc::ErrorCode::Unavailable ||
                     error.code == dc::ErrorCode::Timeout ||
                     error.code == dc::ErrorCode::OutcomeUnknown;
  return unreachable ? kExitUnavailable : kExitFailed;
}

}  // namespace dq::ctl
