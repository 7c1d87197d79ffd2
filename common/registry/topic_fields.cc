// Implements common/registry/topic_fields.h: the table of a topic's settable
// fields, read from JSON (the API, the admin page) or from dqctl's flags.
#include "common/registry/topic_fields.h"

#include <cctype>
#include <limits>
#include <type_traits>
#include <utility>

#include "common/registry/topic_json.h"

namespace dq {
namespace {

// How dqctl's flag gives the value (JSON always gives it typed).
enum class FlagKind {
  kText,      // as written
  kOffText,   // as written; "off" is "" (none)
  kInteger,   // a whole number
  kOnOff,     // "on" or "off": a boolean
  kDuration,  // 90s, 30m, 24h, 7d: seconds
};

using Setter = Status (*)(const Json& value, const std::string& field, Topic* topic);

struct TopicField {
  const char* name;  // the JSON name (topic_to_json's)
  const char* flag;  // dqctl topic add|set's flag; nullptr: none
  FlagKind flag_kind;
  Setter set;  // nullptr: applied apart (the signing fields)
};

Status wrong(const std::string& field, const char* what) {
  return Status(Code::kInvalid, field + ": must be " + what);
}

template <typename T>
Status read_int(const Json& value, const std::string& field, T* out) {
  if (!value.is_number_integer()) {
    return wrong(field, "a whole number");
  }
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return wrong(field, "a smaller number");
  }
  int64_t number = value.get<int64_t>();
  if (number < std::numeric_limits<T>::min() || number > std::numeric_limits<T>::max()) {
    return wrong(field, "a smaller number");
  }
  *out = static_cast<T>(number);
  return Status::ok();
}

Status read_text(const Json& value, const std::string& field, std::string* out) {
  if (!value.is_string()) {
    return wrong(field, "text");
  }
  *out = value.get<std::string>();
  return Status::ok();
}

Status read_bool(const Json& value, const std::string& field, bool* out) {
  if (!value.is_boolean()) {
    return wrong(field, "true or false");
  }
  *out = value.get<bool>();
  return Status::ok();
}

template <auto Member>
Status set_member(const Json& value, const std::string& field, Topic* topic) {
  auto& target = topic->*Member;
  using T = std::remove_reference_t<decltype(target)>;
  if constexpr (std::is_same_v<T, std::string>) {
    return read_text(value, field, &target);
  } else if constexpr (std::is_same_v<T, bool>) {
    return read_bool(value, field, &target);
  } else {
    return read_int(value, field, &target);
  }
}

// Text compared without case: kept in the case the registry checks.
template <auto Member, int (*Convert)(int)>
Status set_folded(const Json& value, const std::string& field, Topic* topic) {
  std::string text;
  Status status = read_text(value, field, &text);
  if (!status.is_ok()) {
    return status;
  }
  for (char& c : text) {
    c = static_cast<char>(Convert(static_cast<unsigned char>(c)));
  }
  topic->*Member = std::move(text);
  return Status::ok();
}

int to_upper(int c) { return std::toupper(c); }
int to_lower(int c) { return std::tolower(c); }

// Every field a writer sets, once. The signing fields are applied after the
// others, with the overlap the same object names.
const TopicField kTopicFields[] = {
    {"mode", "--mode", FlagKind::kText, &set_folded<&Topic::mode, to_lower>},
    {"callback_url", "--callback", FlagKind::kText, &set_member<&Topic::callback_url>},
    {"method", "--method", FlagKind::kText, &set_folded<&Topic::method, to_upper>},
    {"callback_format", "--format", FlagKind::kText,
     &set_folded<&Topic::callback_format, to_lower>},
    {"success_json", "--success-json", FlagKind::kText, &set_member<&Topic::success_json>},
    {"timeout_ms", "--timeout-ms", FlagKind::kInteger, &set_member<&Topic::timeout_ms>},
    {"default_delay_s", "--delay", FlagKind::kInteger, &set_member<&Topic::default_delay_s>},
    {"tz", "--tz", FlagKind::kText, &set_member<&Topic::tz>},
    {"delivery_window", "--delivery-window", FlagKind::kOffText,
     &set_member<&Topic::delivery_window>},
    {"max_attempts", "--max-attempts", FlagKind::kInteger, &set_member<&Topic::max_attempts>},
    {"priority", "--priority", FlagKind::kInteger, &set_member<&Topic::priority>},
    {"retry_ms", "--retry-ms", FlagKind::kText, &set_member<&Topic::retry_ms>},
    {"retry_jitter", "--retry-jitter", FlagKind::kInteger, &set_member<&Topic::retry_jitter>},
    {"alert_emails", "--email", FlagKind::kText, &set_member<&Topic::alert_emails>},
    {"creator", "--creator", FlagKind::kText, &set_member<&Topic::creator>},
    {"max_deferrals", "--max-deferrals", FlagKind::kInteger, &set_member<&Topic::max_deferrals>},
    {"dead_on", "--dead-on", FlagKind::kText, &set_member<&Topic::dead_on>},
    {"dead_callback", "--dead-callback", FlagKind::kOffText, &set_member<&Topic::dead_callback>},
    {"circuit_breaker", "--circuit-breaker", FlagKind::kOnOff,
     &set_member<&Topic::circuit_breaker>},
    {"circuit_failures", "--circuit-failures", FlagKind::kInteger,
     &set_member<&Topic::circuit_failures>},
    {"circuit_open_ms", "--circuit-open-ms", FlagKind::kInteger,
     &set_member<&Topic::circuit_open_ms>},
    {"max_in_flight", "--max-in-flight", FlagKind::kInteger, &set_member<&Topic::max_in_flight>},
    {"max_rate", "--max-rate", FlagKind::kInteger, &set_member<&Topic::max_rate>},
    {"max_burst", "--max-burst", FlagKind::kInteger, &set_member<&Topic::max_burst>},
    {"dedup_window_s", "--dedup-window-s", FlagKind::kInteger, &set_member<&Topic::dedup_window_s>},
    {"max_retry_duration_s", "--max-retry-duration-s", FlagKind::kInteger,
     &set_member<&Topic::max_retry_duration_s>},
    {"ttl", "--ttl", FlagKind::kInteger, &set_member<&Topic::ttl>},
    {"keep_done_days", "--keep-done-days", FlagKind::kInteger, &set_member<&Topic::keep_done_days>},
    {"late_policy", "--late-policy", FlagKind::kText, &set_member<&Topic::late_policy>},
    {"on_dependency_dead", "--on-dependency-dead", FlagKind::kText,
     &set_folded<&Topic::on_dependency_dead, to_lower>},
    {"online", nullptr, FlagKind::kText,
     &set_member<&Topic::online>},  // dqctl topic online|offline
    {"signing_secret", "--signing-secret", FlagKind::kOffText, nullptr},
    {"signing_public_key", "--signing-ed25519", FlagKind::kOffText, nullptr},
    {"signing_overlap_s", "--overlap", FlagKind::kDuration, nullptr},
};

// Shown by topic_to_json, never set by a writer: accepted and ignored.
bool shown_only(const std::string& key) {
  return key == "created_at_ms" || key == "updated_at_ms" || key == "signing_keys" ||
         key == "version";
}

const TopicField* find_field(const std::string& name) {
  for (const TopicField& field : kTopicFields) {
    if (name == field.name) {
      return &field;
    }
  }
  return nullptr;
}

const TopicField* find_flag(const std::string& flag) {
  for (const TopicField& field : kTopicFields) {
    if (field.flag != nullptr && flag == field.flag) {
      return &field;
    }
  }
  return nullptr;
}

// The signing fields, with the overlap of the rotation they make.
Status apply_signing(const Json& fields, Topic* topic, int64_t now_ms) {
  int64_t overlap_ms = kDefaultSigningOverlapMs;
  if (auto overlap = fields.find("signing_overlap_s"); overlap != fields.end()) {
    if (!overlap->is_number_integer()) {
      return wrong("signing_overlap_s", "a whole number of seconds");
    }
    auto checked = signing_overlap_ms(overlap->get<int64_t>());
    if (!checked.is_ok()) {
      return checked.status();
    }
    overlap_ms = *checked;
  }
  for (const char* key : {"signing_secret", "signing_public_key"}) {
    auto value = fields.find(key);
    if (value == fields.end()) {
      continue;
    }
    if (!value->is_string()) {
      return wrong(key, "text");
    }
    Status status = set_topic_signing(topic, key, value->get<std::string>(), overlap_ms, now_ms);
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

}  // namespace

Status apply_topic_fields(const Json& fields, Topic* topic, int64_t now_ms) {
  if (!fields.is_object()) {
    return Status(Code::kInvalid, "expected a JSON object of topic fields");
  }
  for (const auto& [key, value] : fields.items()) {
    if (key == "name") {
      if (!value.is_string() || value.get<std::string>() != topic->name) {
        return Status(Code::kInvalid, "name: a topic cannot be renamed");
      }
      continue;
    }
    if (shown_only(key)) {
      continue;
    }
    const TopicField* field = find_field(key);
    if (field == nullptr) {
      return Status(Code::kInvalid, key + ": no such field");
    }
    if (field->set == nullptr) {
      continue;  // signing: below
    }
    Status status = field->set(value, key, topic);
    if (!status.is_ok()) {
      return status;
    }
  }
  return apply_signing(fields, topic, now_ms);
}

std::vector<std::string> topic_field_names() {
  std::vector<std::string> names;
  for (const TopicField& field : kTopicFields) {
    names.emplace_back(field.name);
  }
  return names;
}

bool is_topic_flag(const std::string& flag) { return find_flag(flag) != nullptr; }

Status topic_flag_to_json(const std::string& flag, const std::string& value, Json* fields) {
  const TopicField* field = find_flag(flag);
  if (field == nullptr) {
    return Status(Code::kInvalid, "unknown option " + flag);
  }
  Json& slot = (*fields)[field->name];
  switch (field->flag_kind) {
    case FlagKind::kText:
      slot = value;
      break;
    case FlagKind::kOffText:
      slot = value == "off" ? std::string() : value;
      break;
    case FlagKind::kInteger: {
      size_t digits = value.find_first_not_of("0123456789", value.rfind('-', 0) == 0 ? 1 : 0);
      if (value.empty() || value == "-" || digits != std::string::npos || value.size() > 19) {
        fields->erase(field->name);
        return Status(Code::kInvalid, flag + " '" + value + "' is not an integer");
      }
      slot = std::stoll(value);
      break;
    }
    case FlagKind::kOnOff:
      if (value != "on" && value != "off") {
        fields->erase(field->name);
        return Status(Code::kInvalid, flag + " '" + value + "' must be on or off");
      }
      slot = value == "on";
      break;
    case FlagKind::kDuration: {
      auto ms = parse_duration_ms(value);
      if (!ms) {
        fields->erase(field->name);
        return Status(Code::kInvalid,
                      flag + " '" + value + "' must be a duration such as 90s, 30m, 24h or 7d");
      }
      slot = *ms / 1000;
      break;
    }
  }
  return Status::ok();
}

std::optional<int64_t> parse_duration_ms(const std::string& text) {
  size_t digits = text.find_first_not_of("0123456789");
  if (digits == 0 || text.empty() || (digits != std::string::npos && digits + 1 != text.size()) ||
      text.size() > 12) {
    return std::nullopt;
  }
  int64_t number = std::stoll(text.substr(0, digits));
  char unit = digits == std::string::npos ? 's' : text[digits];
  int64_t unit_s = unit == 's'   ? 1
                   : unit == 'm' ? 60
                   : unit == 'h' ? 3600
                   : unit == 'd' ? 86400
                                 : 0;
  if (unit_s == 0) {
    return std::nullopt;
  }
  return number * unit_s * 1000;
}

Result<std::optional<int64_t>> edit_version(const Json& body, const std::string& if_match) {
  std::optional<int64_t> version;
  std::string tag = if_match;
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') {
    tag = tag.substr(1, tag.size() - 2);  // If-Match: "3" as well as 3
  }
  if (!tag.empty()) {
    if (tag.size() > 18 || tag.find_first_not_of("0123456789") != std::string::npos) {
      return Status(Code::kInvalid, "If-Match: must be the version read, a whole number");
    }
    version = std::stoll(tag);
  }
  auto field = body.is_object() ? body.find("version") : body.end();
  if (body.is_object() && field != body.end()) {
    if (!field->is_number_integer() || field->get<int64_t>() < 0) {
      return Status(Code::kInvalid, "version: must be the version read, a whole number");
    }
    if (version && *version != field->get<int64_t>()) {
      return Status(Code::kInvalid, "version: differs from If-Match");
    }
    version = field->get<int64_t>();
  }
  return version;
}

std::string field_of(const Status& status) {
  const std::string& message = status.message();
  size_t colon = message.find(": ");
  if (colon == std::string::npos) {
    return "";
  }
  std::string field = message.substr(0, colon);
  if (field.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos) {
    return "";
  }
  return field;
}

}  // namespace dq
