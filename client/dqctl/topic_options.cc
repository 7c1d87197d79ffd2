// Implements client/dqctl/topic_options.h.
#include "client/dqctl/topic_options.h"

#include <climits>
#include <cstdio>

#include "client/dqctl/command.h"

namespace dq::ctl {

bool parse_topic_args(const std::string& sub, const std::vector<std::string>& args,
                      std::string* name, TopicOptions* options) {
  std::vector<std::string> positional;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional.push_back(arg);
      continue;
    }
    if (options == nullptr) {
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
    auto integer = [&](int64_t max, auto* field) {
      int64_t number = 0;
      if (!parse_int_arg(value, -max, max, &number)) {
        std::string message = arg + " '";
        message += value;
        message += "' is not an integer";
        usage_error("topic", message);
        return false;
      }
      *field = static_cast<typename std::remove_reference_t<decltype(*field)>::value_type>(number);
      return true;
    };
    if (arg == "--callback") {
      options->callback_url = value;
    } else if (arg == "--method") {
      for (char& c : value) {
        c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
      }
      options->method = value;
    } else if (arg == "--timeout-ms") {
      if (!integer(INT_MAX, &options->timeout_ms)) {
        return false;
      }
    } else if (arg == "--delay") {
      if (!integer(INT64_MAX, &options->default_delay_s)) {
        return false;
      }
    } else if (arg == "--max-attempts") {
      if (!integer(INT_MAX, &options->max_attempts)) {
        return false;
      }
    } else if (arg == "--priority") {
      if (!integer(INT_MAX, &options->priority)) {
        return false;
      }
    } else if (arg == "--email") {
      options->alert_emails = value;
    } else if (arg == "--retry-ms") {
      options->retry_ms = value;
    } else if (arg == "--creator") {
      options->creator = value;
    } else if (arg == "--format") {
      for (char& c : value) {
        c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
      }
      options->callback_format = value;
    } else if (arg == "--success-json") {
      options->success_json = value;  // "" turns the rule off
    } else if (arg == "--max-deferrals") {
      if (!integer(INT_MAX, &options->max_deferrals)) {
        return false;
      }
    } else if (arg == "--dead-on") {
      options->dead_on = value;
    } else if (arg == "--retry-jitter") {
      if (!integer(INT_MAX, &options->retry_jitter)) {
        return false;
      }
    } else if (arg == "--circuit-breaker") {
      if (value != "on" && value != "off") {
        usage_error("topic", "--circuit-breaker '" + value + "' must be on or off");
        return false;
      }
      options->circuit_breaker = value == "on";
    } else if (arg == "--circuit-failures") {
      if (!integer(INT_MAX, &options->circuit_failures)) {
        return false;
      }
    } else if (arg == "--circuit-open-ms") {
      if (!integer(INT_MAX, &options->circuit_open_ms)) {
        return false;
      }
    } else if (arg == "--max-in-flight") {
      if (!integer(INT_MAX, &options->max_in_flight)) {
        return false;
      }
    } else if (arg == "--max-rate") {
      if (!integer(INT_MAX, &options->max_rate)) {
        return false;
      }
    } else if (arg == "--max-burst") {
      if (!integer(INT_MAX, &options->max_burst)) {
        return false;
      }
    } else if (arg == "--dead-callback") {
      options->dead_callback = value == "off" ? std::string() : value;
    } else if (std::string error; options->signing.take(arg, value, &error)) {
      if (!error.empty()) {
        usage_error("topic", error);
        return false;
      }
    } else {
      usage_error("topic", "unknown option " + arg);
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
