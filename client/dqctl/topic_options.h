// The words of `dqctl topic add|set|...`: the topic NAME and the field flags,
// read into the JSON object of topic fields every writer takes
// (common/registry/topic_fields.h: one table of fields, flags and checks).
#pragma once

#include <string>
#include <vector>

#include "common/core/json.h"

namespace dq::ctl {

// Splits args (after the subcommand) into the topic NAME and, when fields !=
// nullptr, the field flags of add/set as JSON fields. Prints the problem and
// returns false on a usage error.
bool parse_topic_args(const std::string& sub, const std::vector<std::string>& args,
                      std::string* name, Json* fields);

}  // namespace dq::ctl
