// dqctl's side of libdqclient (client/include/dq/client.h): the client the
// global options describe (-s or --url, --token) and how its errors are
// reported, for every command that talks to the HTTP API.
#pragma once

#include "client/dqctl/command.h"
#include "dq/client.h"

namespace dq::ctl {

// A client of the servers of -s/--url with --token; timeout_ms per server.
dq::client::Client make_api_client(const CtlOptions& options, int timeout_ms);

// stderr: "dqctl: NotFound (404): unknown topic 'x'"; with --json also
// {"error", "code", "http_status"} on stdout. Returns the exit code: 3 when
// no server could be reached, timed out or could not tell (504), else 1.
int report_client_error(const dq::client::Error& error, bool json);

// 3 (kExitUnavailable) when no server could be reached, timed out or could
// not tell (504), else 1.
int client_exit_code(const dq::client::Error& error);

// The error as --json prints it.
Json client_error_json(const dq::client::Error& error);

}  // namespace dq::ctl
