// `dqctl --url http://HOST:PORT schedule ...`: a topic's schedules over the
// HTTP API of a dq host (/v1/topics/{topic}/schedules, through libdqclient),
// for an operator who is not on a dq host. The host runs the same writes as
// dqctl does locally (common/registry/schedule_writes.h); with [server]
// require_token = yes the token needs the admin scope to write.
#pragma once

#include <string>

#include "client/dqctl/command.h"

namespace dq::ctl {

// sub: list, add, del, pause or resume, already checked; spec: "" for list;
// request: add's {"spec", "tz"?, "body"?, "catch_up"?, "paused"?}.
int run_remote_schedule(const CtlOptions& options, const std::string& sub, const std::string& topic,
                        const std::string& spec, const Json& request);

}  // namespace dq::ctl
