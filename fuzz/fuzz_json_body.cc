// Fuzz target: JSON request bodies. Whatever nlohmann accepts, the raw-span
// scanner (common/core/json_span.h) that keeps job bodies byte for byte must find
// the same "body" and "jobs" members, and the text it hands back must parse
// to the same value. The add request's scanner (common/core/json_scan.h) answers
// only for text nlohmann accepts, with the members nlohmann sees, and an add
// read through it (server/add_request_text.h) has the same outcome as one
// read through the whole document. What plainly_json (common/core/json_check.h)
// calls JSON, nlohmann must accept.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "common/core/json.h"
#include "common/core/json_check.h"
#include "common/core/json_scan.h"
#include "common/core/json_span.h"
#include "common/registry/registry.h"
#include "common/registry/topic_cache.h"
#include "server/add_request_text.h"

namespace {

void same_value(std::string_view raw, const dq::Json& expected) {
  dq::Json again = dq::Json::parse(raw, nullptr, false);
  if (again.is_discarded() || again != expected) std::abort();
}

// A registry with the topic "orders" (default delay 7 s), made once.
struct AddWorld {
  AddWorld() {
    char pattern[] = "/tmp/dq-fuzz-add-XXXXXX";
    if (mkdtemp(pattern) == nullptr) std::abort();
    dir = pattern;
    auto registry = dq::Registry::open(dir + "/dq.db");
    if (!registry.is_ok()) std::abort();
    dq::Topic topic;
    topic.name = "orders";
    topic.callback_url = "http://127.0.0.1:8080/cb";
    topic.default_delay_s = 7;
    if (!(*registry)->add_topic(topic).is_ok()) std::abort();
    topics = std::make_unique<dq::TopicCache>(dir + "/dq.db");
    if (!topics->refresh().is_ok()) std::abort();
    config.max_body_bytes = 256;
  }
  ~AddWorld() { std::filesystem::remove_all(dir); }
  std::string dir;
  std::unique_ptr<dq::TopicCache> topics;
  dq::Config config;
};

std::string outcome(const dq::ParsedAdd& parsed) {
  if (!parsed.request.is_ok()) {
    return std::to_string(parsed.is_json) +
           std::to_string(static_cast<int>(parsed.request.status().code())) +
           parsed.request.status().message() + "|" + parsed.logged_id;
  }
  const dq::AddRequest& add = *parsed.request;
  return add.topic + "|" + add.id + "|" + add.body + "|" + std::to_string(add.due.relative) + "|" +
         std::to_string(add.due.ms);
}

void same_add_both_ways(const std::string& text) {
  static AddWorld world;
  const int64_t now = 1772368496000;
  auto fast = dq::parse_add_text("orders", text, *world.topics, world.config, now);
  auto dom = dq::parse_add_text_dom("orders", text, *world.topics, world.config, now);
  if (outcome(fast) != outcome(dom)) std::abort();
}

// What the scanner reports must be what nlohmann parsed.
void scan_agrees(const std::string& text, const dq::Json& parsed) {
  auto scan = dq::scan_json_object(text);
  if (!scan) return;  // not sure: allowed
  if (parsed.is_discarded() || !parsed.is_object()) std::abort();
  for (size_t i = 0; i < scan->count; ++i) {
    const dq::JsonMember& member = scan->members[i];
    if (dq::Json::parse(member.value, nullptr, false).is_discarded()) std::abort();
    if (member.key_escaped) continue;
    std::string key(member.key);
    if (!parsed.contains(key)) std::abort();
    bool last = true;
    for (size_t k = i + 1; k < scan->count; ++k) last = last && scan->members[k].key != member.key;
    if (last) same_value(member.value, parsed[key]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  dq::Json parsed = dq::Json::parse(text, nullptr, false);
  dq::embeddable_json(text);  // any stored bytes must be embeddable
  if (dq::plainly_json(text) && parsed.is_discarded()) std::abort();
  scan_agrees(text, parsed);
  same_add_both_ways(text);
  if (parsed.is_discarded()) return 0;
  if (parsed.is_object()) {
    for (const char* name : {"body", "jobs", "id"}) {
      auto span = dq::json_member_span(text, name);
      if (parsed.contains(name) != span.has_value()) std::abort();
      if (span) same_value(*span, parsed[name]);
    }
    if (auto body = dq::json_member_span(text, "body")) {
      std::string reply = dq::with_raw_member(dq::Json{{"id", "x"}}.dump(), "body", *body);
      same_value(reply, dq::Json{{"id", "x"}, {"body", parsed["body"]}});
    }
  }
  if (parsed.is_array()) {
    auto spans = dq::json_array_spans(text);
    if (!spans || spans->size() != parsed.size()) std::abort();
    for (size_t i = 0; i < spans->size(); ++i) same_value((*spans)[i], parsed[i]);
  }
  return 0;
}
