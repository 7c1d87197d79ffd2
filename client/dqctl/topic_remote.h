// `dqctl --url http://HOST:PORT topic ...`: the topic commands over the HTTP
// API of a dq host (GET/PUT/PATCH/DELETE /v1/topics/{topic}, through
// libdqclient), for an operator who is not on a dq host. The host runs the
// same write as dqctl does locally (common/registry/topic_writes.h); with
// [server] require_token = yes the token needs the admin scope to write.
#pragma once

#include <string>

#include "client/dqctl/command.h"

namespace dq::ctl {

// sub: list, show, add, set, online, offline or del, already parsed: the
// topic's name, the fields of add/set/online/offline, del's --purge.
int run_remote_topic(const CtlOptions& options, const std::string& sub, const std::string& name,
                     const Json& fields, bool purge);

}  // namespace dq::ctl
