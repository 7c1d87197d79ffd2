// Reading an add request (server/add_request_text.h).
#include "server/add_request_text.h"

#include <optional>

#include "common/core/json.h"
#include "common/core/json_big_numbers.h"
#include "common/core/json_scan.h"

namespace dq {
namespace {

// The members of a clean add request, as raw text; empty when absent.
struct AddMembers {
  std::string_view id, body, delay, at, tz, ttl, expire_at;
};

std::optional<AddMembers> add_members(std::string_view text) {
  auto scan = scan_json_object(text);
  if (!scan) {
    return std::nullopt;
  }
  AddMembers found;
  for (size_t i = 0; i < scan->count; ++i) {
    const JsonMember& member = scan->members[i];
    if (member.key_escaped) {
      return std::nullopt;
    }
    std::string_view* slot = member.key == "id"          ? &found.id
                             : member.key == "body"      ? &found.body
                             : member.key == "delay"     ? &found.delay
                             : member.key == "at"        ? &found.at
                             : member.key == "tz"        ? &found.tz
                             : member.key == "ttl"       ? &found.ttl
                             : member.key == "expire_at" ? &found.expire_at
                                                         : nullptr;
    if (slot == nullptr || !slot->empty()) {
      return std::nullopt;  // unknown or twice
    }
    *slot = member.value;
  }
  if (found.id.empty() || found.body.empty()) {
    return std::nullopt;
  }
  if (!found.delay.empty() && !found.at.empty()) {
    return std::nullopt;
  }
  return found;
}

// The id as build_add_request reads it: a string's value, or an integer's
// text as sent. nullopt for anything else (a refusal: the document path says why).
std::optional<std::string> id_of(std::string_view raw) {
  if (json_string_is_plain(raw)) {
    return std::string(raw.substr(1, raw.size() - 2));
  }
  if (raw.front() == '-' || (raw.front() >= '0' && raw.front() <= '9')) {
    auto number = id_of_number(raw);
    return number.is_ok() ? std::optional<std::string>(std::move(*number)) : std::nullopt;
  }
  if (raw.front() != '"') {
    return std::nullopt;
  }
  // Scanned already, so valid; were it not, the document path would refuse it.
  Json value = Json::parse(raw, nullptr, false);
  if (value.is_string()) {
    return value.get<std::string>();
  }
  return std::nullopt;
}

// A delay or at value as nlohmann parses it; plain digits (the usual form)
// without a parser. Text nlohmann refuses (the scanner let none through)
// would be a discarded value, which delay and at refuse: the document path.
Json value_of(std::string_view raw) {
  if (raw.size() <= 15 && (raw.size() == 1 || raw.front() != '0')) {
    uint64_t value = 0;
    for (char c : raw) {
      if (c < '0' || c > '9') {
        return Json::parse(raw, nullptr, false);
      }
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    return Json(value);
  }
  return Json::parse(raw, nullptr, false);
}

// nullopt: not a clean request, or one that is refused.
std::optional<AddRequest> fast_add(const std::string& topic, std::string_view text,
                                   TopicCache& topics, const Config& config, int64_t now_ms) {
  auto members = add_members(text);
  if (!members) {
    return std::nullopt;
  }
  auto id = id_of(members->id);
  if (!id || !check_topic_and_id(topic, *id, topics).is_ok()) {
    return std::nullopt;
  }
  std::optional<Json> delay, at, tz, ttl, expire_at;
  auto read = [](std::string_view raw, std::optional<Json>* value) -> const Json* {
    if (raw.empty()) {
      return nullptr;
    }
    *value = value_of(raw);
    return &**value;
  };
  JobTimes times{read(members->delay, &delay), read(members->at, &at), read(members->tz, &tz),
                 read(members->ttl, &ttl), read(members->expire_at, &expire_at)};
  auto built = add_request_of(topic, std::move(*id), members->body, times, topics, config, now_ms);
  if (!built.is_ok()) {
    return std::nullopt;
  }
  return std::move(*built);
}

}  // namespace

ParsedAdd parse_add_text(const std::string& topic, std::string_view text, TopicCache& topics,
                         const Config& config, int64_t now_ms) {
  if (auto added = fast_add(topic, text, topics, config, now_ms)) {
    ParsedAdd parsed;
    parsed.request = std::move(*added);
    return parsed;
  }
  return parse_add_text_dom(topic, text, topics, config, now_ms);
}

ParsedAdd parse_add_text_dom(const std::string& topic, std::string_view text, TopicCache& topics,
                             const Config& config, int64_t now_ms) {
  ParsedAdd parsed;
  Json job = parse_json_any_number(text);
  if (job.is_discarded()) {
    parsed.is_json = false;
    parsed.request =
        Status(Code::kInvalid, text.empty() ? "request body is empty; expected a JSON object"
                                            : "request body is not valid JSON");
    return parsed;
  }
  parsed.request = build_add_request(topic, job, text, topics, config, now_ms);
  if (!parsed.request.is_ok()) {
    parsed.logged_id = job.is_object() && job.contains("id") ? job["id"].dump() : "-";
  }
  return parsed;
}

}  // namespace dq
