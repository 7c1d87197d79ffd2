// Parsing one config value by its key's type (common/core/config_keys.h).
// Each error names the key and says what the value must be.
#include <stdexcept>
#include <type_traits>

#include "common/core/config_keys.h"

namespace dq {
namespace {

Status parse_int(const std::string& key, const std::string& text, int64_t min, int64_t max,
                 int64_t* out) {
  try {
    size_t used = 0;
    long long value = std::stoll(text, &used);
    if (used != text.size() || value < min || value > max) {
      throw std::out_of_range(key);
    }
    *out = value;
    return Status::ok();
  } catch (const std::exception&) {
    return Status(Code::kInvalid, key + " = '" + text + "' must be an integer from " +
                                      std::to_string(min) + " to " + std::to_string(max));
  }
}

Status parse_bool(const std::string& key, const std::string& text, bool* out) {
  if (text == "yes" || text == "true" || text == "on" || text == "1") {
    *out = true;
  } else if (text == "no" || text == "false" || text == "off" || text == "0") {
    *out = false;
  } else {
    return Status(Code::kInvalid, key + " = '" + text + "' must be yes or no");
  }
  return Status::ok();
}

bool is_choice(const std::string& choices, const std::string& text) {
  return ("|" + choices + "|").find("|" + text + "|") != std::string::npos && !text.empty();
}

std::string trimmed(const std::string& text) {
  size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) {
    return "";
  }
  return text.substr(first, text.find_last_not_of(" \t") + 1 - first);
}

// A comma list of host names; blanks around each are ignored.
Status parse_hosts(const std::string& key, const std::string& text, std::vector<std::string>* out) {
  out->clear();
  std::string list = text + ",";
  size_t start = 0;
  for (size_t comma = list.find(','); comma != std::string::npos;
       start = comma + 1, comma = list.find(',', start)) {
    std::string host = trimmed(list.substr(start, comma - start));
    if (host.find_first_of(" \t/") != std::string::npos) {
      return Status(Code::kInvalid,
                    key + ": '" + host + "' is not a host name (a comma list of hosts)");
    }
    if (!host.empty()) {
      out->push_back(host);
    }
  }
  return Status::ok();
}

Status parse_shards(const std::string& key, const std::string& text,
                    std::vector<ShardAddress>* out) {
  auto shards = parse_shard_list(text);
  if (!shards.is_ok()) {
    return Status(Code::kInvalid, key + ": " + shards.status().message());
  }
  if (shards->empty()) {
    return Status(Code::kInvalid, key + " lists no shard");
  }
  *out = *shards;
  return Status::ok();
}

// What is wrong with a listen address parse_host_port refused.
std::string host_port_problem(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return "no :port (write 127.0.0.1:" + (text.empty() ? std::string("6780") : text) +
           " for a port, or name the host too)";
  }
  if (colon == 0) {
    return "no host before the ':' (127.0.0.1 for this machine only, 0.0.0.0 for every address)";
  }
  std::string port = text.substr(colon + 1);
  if (port.empty()) {
    return "no port after the ':'";
  }
  if (port.find_first_not_of("0123456789") != std::string::npos) {
    return "the port '" + port + "' is not a number";
  }
  return "the port " + port + " is out of range (1 to 65535)";
}

// Text kinds: checked, then stored as written.
Status check_text(const ConfigKey& key, const std::string& text) {
  std::string host;
  int port = 0;
  switch (key.type) {
    case ConfigType::kChoice:
      if (!is_choice(key.choices, text)) {
        return Status(Code::kInvalid, key.key() + " = '" + text + "' is not one of " + key.choices);
      }
      break;
    case ConfigType::kListenOrOff:
      if (text.empty()) {
        break;
      }
      [[fallthrough]];
    case ConfigType::kListen:
      if (!parse_host_port(text, &host, &port)) {
        return Status(Code::kInvalid,
                      key.key() + " = '" + text + "' is not host:port: " + host_port_problem(text));
      }
      break;
    default:
      break;
  }
  return Status::ok();
}

}  // namespace

Status apply_config_value(const ConfigKey& key, const std::string& text, Config* config) {
  return std::visit(
      [&](auto member) -> Status {
        using Field = std::remove_reference_t<decltype(config->*member)>;
        Field& field = config->*member;
        if constexpr (std::is_same_v<Field, bool>) {
          return parse_bool(key.key(), text, &field);
        } else if constexpr (std::is_integral_v<Field>) {
          int64_t value = 0;
          Status status = parse_int(key.key(), text, key.min, key.max, &value);
          if (status.is_ok()) {
            field = static_cast<Field>(value);
          }
          return status;
        } else if constexpr (std::is_same_v<Field, std::string>) {
          Status status = check_text(key, text);
          if (status.is_ok()) {
            field = text;
          }
          return status;
        } else if constexpr (std::is_same_v<Field, std::vector<ShardAddress>>) {
          return parse_shards(key.key(), text, &field);
        } else {
          return parse_hosts(key.key(), text, &field);
        }
      },
      key.field);
}

}  // namespace dq
