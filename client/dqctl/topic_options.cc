// Implements client/dqctl/topic_options.h.
#include "client/dqctl/topic_options.h"

#include "client/dqctl/command.h"
#include "common/registry/topic_fields.h"

namespace dq::ctl {

bool parse_topic_args(const std::string& sub, const std::vector<std::string>& args,
                      std::string* name, Json* fields) {
  std::vector<std::string> positional;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional.push_back(arg);
      continue;
    }
    if (fields == nullptr) {
      std::string message = "topic " + sub;
      message += " takes no option ";
      message += arg;
      usage_error("topic", message);
      return false;
    }
    std::string value;
    if (!take_option(args, &i, &arg, &value)) {
      usage_error("topic", arg + " needs a value");
      return false;
    }
    if (!is_topic_flag(arg)) {
      usage_error("topic", "unknown option " + arg);
      return false;
    }
    Status read = topic_flag_to_json(arg, value, fields);
    if (!read.is_ok()) {
      usage_error("topic", read.message());
      return false;
    }
  }
  if (positional.size() != 1) {
    usage_error("topic", positional.empty() ? "topic " + sub + " needs a topic NAME"
                                            : "topic " + sub + " takes one NAME");
    return false;
  }
  *name = positional[0];
  return true;
}

}  // namespace dq::ctl
