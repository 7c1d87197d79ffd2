// The topics part of the admin API: list with search and paging, add, edit,
// online/offline, delete (refused while it holds jobs unless confirmed), and
// a test delivery to the callback URL.
#include "admin/admin_app.h"
#include "common/core/clock.h"
#include "common/core/log.h"
#include "common/http/callback_probe.h"
#include "common/registry/callback_rules.h"
#include "common/registry/signing_keys.h"
#include "common/registry/topic_fields.h"
#include "common/registry/topic_json.h"
#include "common/registry/topic_writes.h"

namespace dq {
namespace {

std::string lower(std::string text) {
  for (char& c : text) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return text;
}

void reply_invalid(Exchange& exchange, const Status& status) {
  if (status.code() != Code::kInvalid) {
    return exchange.reply_error(status);
  }
  exchange.reply_json(400, Json{{"error", status.message()}, {"field", field_of(status)}});
}

}  // namespace

// The URL rules of dqctl: the config's, plus the shards added in the registry.
Status AdminApp::check_callback_url(const std::string& url) {
  return dq::check_callback_url(config_, *registry_, url);
}

void AdminApp::list_topics(Exchange& exchange) {
  int64_t offset = 0;
  int64_t limit = 0;
  if (!exchange.page(&offset, &limit)) {
    return;
  }
  auto topics = registry_->list_topics();
  if (!topics.is_ok()) {
    return exchange.reply_error(topics.status());
  }
  // Search is a substring match done here, never SQL text.
  std::string needle = lower(exchange.query("q"));
  Json listed = Json::array();
  int64_t total = 0;
  for (const Topic& topic : *topics) {
    if (!needle.empty() && lower(topic.name).find(needle) == std::string::npos &&
        lower(topic.creator).find(needle) == std::string::npos &&
        lower(topic.callback_url).find(needle) == std::string::npos) {
      continue;
    }
    if (total >= offset && total < offset + limit) {
      listed.push_back(topic_to_json(topic));
    }
    ++total;
  }
  exchange.reply_json(200, Json{{"total", total}, {"offset", offset}, {"topics", listed}});
}

// The topic writes are common/registry/topic_writes.h, as for dqctl and the
// HTTP API; here only what the page sends and is answered.
TopicWriteContext AdminApp::topic_writes() {
  return TopicWriteContext{registry_.get(), &config_, &shards()};
}

void AdminApp::create_topic(Exchange& exchange) {
  auto form = exchange.json_object();
  if (!form.is_ok()) {
    return exchange.reply_error(form.status());
  }
  auto name = form->find("name");
  if (name == form->end() || !name->is_string()) {
    return reply_invalid(exchange, Status(Code::kInvalid, "name: required"));
  }
  TopicWriteRequest request{name->get<std::string>(), *form, TopicEdit::kCreate, std::nullopt,
                            nullptr};
  write_topic(topic_writes(), request, [held = exchange.hold()](Result<TopicWritten> written) {
    if (written.status().code() == Code::kConflict) {
      return held->reply_json(409, Json{{"error", written.status().message()}, {"field", "name"}});
    }
    if (!written.is_ok()) {
      return reply_invalid(*held, written.status());
    }
    err_log().info("dq-admin: topic {} added (version {})", written->topic.name,
                   written->topic.version);
    held->reply_json(201, written->to_json());
  });
}

void AdminApp::write_versioned(const ObjectWrite& write,
                               std::function<void(Result<int64_t>)> done) {
  if (config_.shared_registry) {
    return write_registry_object_async(registry_->db(), shards(), write, std::move(done));
  }
  done(write_registry_object(registry_->db(), nullptr, write));
}

void AdminApp::topic_route(Exchange& exchange, const std::string& name) {
  const std::string& method = exchange.method();
  if (method == "PUT") {
    return update_topic(exchange, name);
  }
  if (method == "DELETE") {
    return delete_topic(exchange, name);
  }
  if (method != "GET") {
    return exchange.reply_error(405, "GET, PUT or DELETE");
  }
  auto topic = registry_->get_topic(name);
  if (!topic.is_ok()) {
    return exchange.reply_error(topic.status());
  }
  exchange.reply_json(200, topic_to_json(*topic));
}

void AdminApp::list_schedules(Exchange& exchange, const std::string& name) {
  auto topic = registry_->get_topic(name);
  if (!topic.is_ok()) {
    return exchange.reply_error(topic.status());
  }
  constexpr size_t kShownRuns = 5;
  Json schedules = Json::array();
  int64_t now = now_ms();
  for (const TopicSchedule& schedule : topic->schedules) {
    schedules.push_back(schedule_to_json(schedule, topic->tz, now, kShownRuns));
  }
  exchange.reply_json(200, Json{{"topic", name}, {"schedules", std::move(schedules)}});
}

// The page's PUT changes the fields it sends (the API's PATCH).
void AdminApp::update_topic(Exchange& exchange, const std::string& name) {
  auto form = exchange.json_object();
  if (!form.is_ok()) {
    return exchange.reply_error(form.status());
  }
  auto version = edit_version(*form, exchange.header("If-Match"));
  if (!version.is_ok()) {
    return reply_invalid(exchange, version.status());
  }
  TopicWriteRequest request{name, *form, TopicEdit::kUpdate, *version, nullptr};
  write_topic(
      topic_writes(), request, [held = exchange.hold(), name](Result<TopicWritten> written) {
        if (!written.is_ok()) {
          return reply_invalid(*held, written.status());
        }
        err_log().info("dq-admin: topic {} updated (version {})", name, written->topic.version);
        held->reply_json(200, written->to_json());
      });
}

// Refused while the topic holds jobs, unless ?confirm=yes deletes them with it.
void AdminApp::delete_topic(Exchange& exchange, const std::string& name) {
  auto version = edit_version(Json::object(), exchange.header("If-Match"));
  if (!version.is_ok()) {
    return reply_invalid(exchange, version.status());
  }
  bool confirmed = exchange.query("confirm") == "yes";
  dq::delete_topic(topic_writes(), name, confirmed, *version,
                   [held = exchange.hold()](const Status& status, const TopicDeleted& deleted) {
                     if (deleted.held_jobs > 0) {
                       return held->reply_json(
                           409,
                           Json{{"error", status.message() + "; confirm to delete them with it"},
                                {"jobs", deleted.held_jobs}});
                     }
                     if (!status.is_ok()) {
                       return held->reply_error(status);
                     }
                     err_log().info("dq-admin: topic {} deleted with {} job(s)", deleted.name,
                                    deleted.purged_jobs);
                     held->reply_json(200, Json{{"deleted", deleted.name},
                                                {"purged_jobs", deleted.purged_jobs},
                                                {"in_flight_jobs", deleted.in_flight_jobs}});
                   });
}

void AdminApp::test_callback(Exchange& exchange, const std::string& name) {
  auto topic = registry_->get_topic(name);
  if (!topic.is_ok()) {
    return exchange.reply_error(topic.status());
  }
  CallbackPolicy policy = CallbackPolicy::from_config(config_);
  Status allowed = check_callback_url(topic->callback_url);
  CallbackProbeResult probe;
  if (allowed.is_ok()) {
    probe = probe_callback(*topic, policy);
  } else {
    probe.error = allowed.message();
  }
  exchange.reply_json(200, Json{{"url", topic->callback_url},
                                {"method", topic->method},
                                {"reached", probe.reached},
                                {"ok", probe.ok()},
                                {"status", probe.status},
                                {"time_ms", probe.time_ms},
                                {"first_bytes", probe.first_bytes},
                                {"error", probe.error}});
}

}  // namespace dq
