// Implements the checker's alert composing and sending (see alert_loop.h).
#include "checker/alert_loop.h"

#include <algorithm>
#include <map>

#include "checker/alert_compose.h"
#include "common/alerts/smtp_mail.h"
#include "common/alerts/webhook.h"
#include "common/core/clock.h"
#include "common/core/log.h"

namespace dq {
namespace {

constexpr size_t kEventsPerTurn = 10000;
constexpr size_t kMessagesPerTurn = 20;

int64_t retry_delay_ms(int attempts, int retry_max_s) {
  int shift = std::min(std::max(attempts - 1, 0), 20);
  return std::min<int64_t>(int64_t{1000} << shift, int64_t{retry_max_s} * 1000);
}

}  // namespace

AlertLoop::AlertLoop(const Config& config) : config_(config) {}

bool AlertLoop::open() {
  if (registry_ && outbox_ && messages_) {
    return true;
  }
  auto registry = Registry::open(config_.sqlite_path);
  auto outbox = AlertOutbox::open(config_.sqlite_path);
  auto messages = AlertMessages::open(config_.sqlite_path);
  for (const Status* status : {&registry.status(), &outbox.status(), &messages.status()}) {
    if (!status->is_ok()) {
      open_errors_.note("checker: cannot open the alert tables in " + config_.sqlite_path +
                        " (alerts wait): " + status->message());
      return false;
    }
  }
  if (open_errors_.clear()) {
    err_log().info("checker: the alert tables in {} are open again", config_.sqlite_path);
  }
  registry_ = std::move(*registry);
  outbox_ = std::move(*outbox);
  messages_ = std::move(*messages);
  return true;
}

void AlertLoop::turn() {
  if (!open()) {
    return;
  }
  int64_t now = now_ms();
  compose(now);
  send(now);
}

void AlertLoop::compose(int64_t now) {
  auto events = outbox_->unsent(kEventsPerTurn);
  if (!events.is_ok()) {
    compose_errors_.note("checker: cannot read the alert outbox (new alerts wait): " +
                         events.status().message());
    return;
  }
  compose_errors_.clear();
  std::map<std::string, std::vector<AlertMail>> dead_by_topic;
  for (auto& event : *events) {
    if (event.kind == "dead_letter") {
      dead_by_topic[event.topic].push_back(std::move(event));
    } else if (event.kind == "crash_loop") {
      auto added = messages_->add(crash_loop_message(event, now), {event.id});
      if (!added.is_ok()) {
        err_log().error("checker: cannot queue the crash-loop alert: {}", added.status().message());
      }
    } else {
      // An event from a newer dq: mail it as it is, so nothing is dropped.
      AlertMessage message;
      message.kind = event.kind;
      message.subject = event.subject;
      message.text = event.text;
      message.recipients = event.recipients;
      message.created_at_ms = now;
      message.payload = {{"kind", event.kind},
                         {"subject", event.subject},
                         {"text", event.subject + "\n" + event.text}};
      (void)messages_->add(message, {event.id});
    }
  }
  int64_t window_ms = int64_t{config_.alert_group_window_s} * 1000;
  for (auto& [topic, group] : dead_by_topic) {
    if (now - group.front().created_at_ms < window_ms) {
      continue;  // still gathering
    }
    std::string callback;
    auto known = registry_->get_topic(topic);
    if (known.is_ok()) {
      callback = known->callback_url;
    }
    std::vector<int64_t> ids;
    for (const auto& event : group) {
      ids.push_back(event.id);
    }
    auto added = messages_->add(dead_letters_alert(topic, callback, group, now), ids);
    if (!added.is_ok()) {
      err_log().error("checker: cannot queue the dead-letter alert of {}: {}", topic,
                      added.status().message());
    } else {
      err_log().info("checker: {} dead letter(s) of topic {} go out in one alert", group.size(),
                     topic);
    }
  }
}

void AlertLoop::send(int64_t now) {
  auto due = messages_->due(now, kMessagesPerTurn);
  if (!due.is_ok()) {
    send_errors_.note("checker: cannot read the alert messages (alerts wait): " +
                      due.status().message());
    return;
  }
  if (due->empty()) {
    send_errors_.clear();
    return;
  }
  auto settings = load_alert_settings(*registry_);
  if (!settings.is_ok()) {
    send_errors_.note("checker: cannot read the alert settings (alerts wait): " +
                      settings.status().message());
    return;
  }
  send_errors_.clear();
  int64_t lease_ms = 2 * int64_t{config_.alert_send_timeout_ms} + 1000;
  for (auto& message : *due) {
    auto claimed = messages_->claim(message, now + lease_ms);
    if (!claimed.is_ok() || !*claimed) {
      continue;
    }
    send_one(message, *settings, now);
  }
}

void AlertLoop::send_one(AlertMessage& message, const AlertSettings& settings, int64_t now) {
  std::vector<std::string> errors;
  if (message.mail_state == "pending") {
    std::vector<std::string> to = split_addresses(settings.to + "," + message.recipients);
    if (!settings.mail_on() || to.empty()) {
      message.mail_state = "off";
      err_log().warn("checker: alert '{}' is not mailed: {}", message.subject,
                     settings.mail_on() ? "no recipient (set one with dqctl alert set --to)"
                                        : "no SMTP host (dqctl alert set --smtp-host)");
    } else {
      auto sent =
          send_mail(settings, {to, message.subject, message.text}, config_.alert_send_timeout_ms);
      if (sent.is_ok()) {
        message.mail_state = "sent";
        err_log().info("checker: mailed '{}' to {} recipient(s): {}", message.subject, to.size(),
                       *sent);
      } else {
        errors.push_back(sent.status().message());
      }
    }
  }
  if (message.webhook_state == "pending") {
    if (!settings.webhook_on()) {
      message.webhook_state = "off";
    } else {
      // The rules again at every send: a URL stored by another host or
      // before them, or a name whose address changed, is not called.
      auto posted =
          post_webhook(settings.webhook_url, message.payload, config_.alert_send_timeout_ms,
                       webhook_policy(config_, *registry_));
      if (posted.is_ok()) {
        message.webhook_state = "sent";
        err_log().info("checker: webhook took '{}': {}", message.subject, posted->text());
      } else {
        errors.push_back(posted.status().message());
      }
    }
  }
  if (message.done()) {
    message.sent_at_ms = now_ms();
    message.last_error.clear();
  } else {
    ++message.attempts;
    int64_t delay = retry_delay_ms(message.attempts, config_.alert_retry_max_s);
    message.next_attempt_at_ms = now + delay;
    message.last_error.clear();
    for (const auto& error : errors) {
      message.last_error += (message.last_error.empty() ? "" : "; ") + error;
    }
    err_log().warn("checker: alert '{}' not sent (attempt {}), retrying in {} ms: {}",
                   message.subject, message.attempts, delay, message.last_error);
  }
  Status stored = messages_->update(message);
  if (!stored.is_ok()) {
    err_log().error("checker: cannot record the alert's state: {}", stored.message());
  }
}

}  // namespace dq
