// The topics part of the admin API: list with search and paging, add, edit,
// online/offline, delete (refused while it holds jobs unless confirmed), and
// a test delivery to the callback URL.
#include "admin/admin_app.h"
#include "admin/topic_form.h"
#include "common/core/log.h"
#include "common/http/callback_probe.h"
#include "common/registry/callback_rules.h"
#include "common/registry/signing_keys.h"
#include "common/store/topic_jobs.h"

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

// The answer of the call that set a new HMAC secret shows it in full, once
// (docs/security.md); every other answer shows it masked.
void reveal_new_secret(const Topic& before, const Topic& after, Json* answer) {
  std::string secret = new_signing_secret(before, after);
  if (!secret.empty()) {
    (*answer)["signing_secret"] = secret;
  }
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

void AdminApp::create_topic(Exchange& exchange) {
  auto form = exchange.json_object();
  if (!form.is_ok()) {
    return exchange.reply_error(form.status());
  }
  Topic topic;
  auto name = form->find("name");
  if (name == form->end() || !name->is_string()) {
    return reply_invalid(exchange, Status(Code::kInvalid, "name: required"));
  }
  topic.name = name->get<std::string>();
  Status status = apply_topic_form(*form, &topic);
  if (status.is_ok()) {
    status = validate_topic(topic);
  }
  if (status.is_ok()) {
    status = check_callback_url(topic.callback_url);
  }
  if (status.is_ok() && !topic.dead_callback.empty()) {
    status = dead_callback_status(check_callback_url(topic.dead_callback));
  }
  if (!status.is_ok()) {
    return reply_invalid(exchange, status);
  }
  ObjectWrite write{find_registry_kind("topic"), topic.name, PutMode::kCreate, std::nullopt,
                    [this, topic] { return registry_->add_topic(topic); }};
  write_versioned(write, [this, held = exchange.hold(), topic](Result<int64_t> written) {
    if (written.status().code() == Code::kConflict) {
      return held->reply_json(409, Json{{"error", written.status().message()}, {"field", "name"}});
    }
    if (!written.is_ok()) {
      return held->reply_error(written.status());
    }
    err_log().info("dq-admin: topic {} added (version {})", topic.name, *written);
    auto stored = registry_->get_topic(topic.name);
    Json answer = topic_to_json(stored.is_ok() ? *stored : topic);
    reveal_new_secret(Topic{}, topic, &answer);
    held->reply_json(201, answer);
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

void AdminApp::update_topic(Exchange& exchange, const std::string& name) {
  auto form = exchange.json_object();
  if (!form.is_ok()) {
    return exchange.reply_error(form.status());
  }
  auto topic = registry_->get_topic(name);
  if (!topic.is_ok()) {
    return exchange.reply_error(topic.status());
  }
  std::string old_url = topic->callback_url;
  std::string old_dead_callback = topic->dead_callback;
  Topic before = *topic;
  Status status = apply_topic_form(*form, &*topic);
  if (status.is_ok()) {
    status = validate_topic(*topic);
  }
  if (status.is_ok() && topic->callback_url != old_url) {
    status = check_callback_url(topic->callback_url);
  }
  if (status.is_ok() && !topic->dead_callback.empty() &&
      topic->dead_callback != old_dead_callback) {
    status = dead_callback_status(check_callback_url(topic->dead_callback));
  }
  if (!status.is_ok()) {
    return reply_invalid(exchange, status);
  }
  auto version = form_version(*form, exchange.header("If-Match"));
  if (!version.is_ok()) {
    return reply_invalid(exchange, version.status());
  }
  Topic edited = *topic;
  ObjectWrite write{find_registry_kind("topic"), name, PutMode::kUpdate, *version,
                    [this, edited] { return registry_->update_topic(edited); }};
  write_versioned(write,
                  [this, held = exchange.hold(), name, edited, before](Result<int64_t> written) {
                    if (!written.is_ok()) {
                      return held->reply_error(written.status());
                    }
                    err_log().info("dq-admin: topic {} updated (version {})", name, *written);
                    auto stored = registry_->get_topic(name);
                    Json answer = topic_to_json(stored.is_ok() ? *stored : edited);
                    reveal_new_secret(before, edited, &answer);
                    held->reply_json(200, answer);
                  });
}

// As `dqctl topic del`: refused while the topic holds jobs, unless
// ?confirm=yes, which deletes them with it (and sweeps once more after, for
// an add that raced the deletion).
void AdminApp::delete_topic(Exchange& exchange, const std::string& name) {
  auto topic = registry_->get_topic(name);
  if (!topic.is_ok()) {
    return exchange.reply_error(topic.status());
  }
  auto version = form_version(Json::object(), exchange.header("If-Match"));
  if (!version.is_ok()) {
    return reply_invalid(exchange, version.status());
  }
  auto held = exchange.hold();
  // Purged while being delivered: those callbacks still complete.
  auto in_flight = std::make_shared<int64_t>(0);
  // After the registry's delete: (confirmed) sweeps its jobs once more, answers.
  auto removed = [this, held, name, in_flight](bool confirmed, int64_t purged) {
    auto answer = [held, name, in_flight](int64_t total) {
      err_log().info("dq-admin: topic {} deleted with {} job(s)", name, total);
      held->reply_json(
          200, Json{{"deleted", name}, {"purged_jobs", total}, {"in_flight_jobs", *in_flight}});
    };
    if (!confirmed) {
      return answer(purged);
    }
    purge_topic_jobs(
        shards(), name,
        [answer, purged](Result<int64_t> late) { answer(purged + (late.is_ok() ? *late : 0)); },
        in_flight);
  };
  // Deletes the topic from the registry (at the version named, if any).
  ObjectWrite write{find_registry_kind("topic"), name, PutMode::kDelete, *version,
                    [this, name] { return registry_->delete_topic(name); }};
  auto remove = [this, held, write, removed](bool confirmed, int64_t purged) {
    write_versioned(write, [held, removed, confirmed, purged](Result<int64_t> written) {
      if (!written.is_ok()) {
        return held->reply_error(written.status());
      }
      removed(confirmed, purged);
    });
  };
  if (exchange.query("confirm") == "yes") {
    return purge_topic_jobs(
        shards(), name,
        [held, remove](Result<int64_t> gone) {
          if (!gone.is_ok()) {
            return held->reply_error(gone.status());
          }
          remove(true, *gone);
        },
        in_flight);
  }
  count_topic_jobs(shards(), name, [held, name, remove](Result<int64_t> count) {
    if (!count.is_ok()) {
      return held->reply_error(count.status());
    }
    if (*count > 0) {
      return held->reply_json(
          409, Json{{"error", "topic " + name + " still holds " + std::to_string(*count) +
                                  " job(s) (pending or dead); confirm to delete them with it"},
                    {"jobs", *count}});
    }
    remove(false, 0);
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
