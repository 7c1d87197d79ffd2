// Small JSON state files shared between dq's processes (the master's status,
// the checker's shard health): written atomically (a temp file renamed over
// the old one), so a reader never sees half a file.
#pragma once

#include <string>

#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

Status write_json_file(const std::string& path, const Json& value);

// kNotFound when the file is missing; kInternal when it is not a JSON object.
// `what` names the file in messages ("status file").
Result<Json> read_json_object_file(const std::string& path, const std::string& what);

}  // namespace dq
