// Builds alert texts and payloads (see alert_compose.h).
#include "checker/alert_compose.h"

#include <ctime>
#include <set>

#include "common/alerts/smtp_mail.h"

namespace dq {
namespace {

constexpr size_t kListedJobs = 100;  // jobs named in one dead-letter mail
constexpr size_t kErrorChars = 300;  // of each job's last error

std::string shorten(const std::string& text, size_t limit) {
  std::string line = text;
  for (char& c : line) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return line.size() <= limit ? line : line.substr(0, limit) + "...";
}

}  // namespace

AlertMessage shard_change_alert(const std::string& shard, const ShardChange& change,
                                int failures_needed, int interval_ms) {
  AlertMessage message;
  message.created_at_ms = change.at_ms;
  if (!change.up) {
    message.kind = "shard_down";
    message.subject = "[dq] Redis shard " + shard + " is DOWN";
    message.text = "Redis shard " + shard + " is down since " +
                   format_local_datetime(change.down_since_ms) + " (" +
                   std::to_string(failures_needed) + " failed checks in a row, one every " +
                   std::to_string(interval_ms) + " ms).\nReason: " + change.reason +
                   "\n\nProducers are not affected: new jobs go to the other shards.\n"
                   "Jobs already on this shard wait, and are delivered once it is back.\n"
                   "You get one more mail when it is up again.\n";
  } else {
    int64_t down_for = change.at_ms - change.down_since_ms;
    message.kind = "shard_up";
    message.subject =
        "[dq] Redis shard " + shard + " is back UP after " + format_duration(down_for);
    message.text = "Redis shard " + shard + " is up again since " +
                   format_local_datetime(change.at_ms) + ".\nIt was down for " +
                   format_duration(down_for) + ", from " +
                   format_local_datetime(change.down_since_ms) +
                   ".\nLast reason: " + change.reason + "\n\nIts jobs are being delivered again.\n";
    message.payload["down_for_ms"] = down_for;
  }
  message.payload["kind"] = message.kind;
  message.payload["shard"] = shard;
  message.payload["reason"] = change.reason;
  message.payload["since_ms"] = change.up ? change.at_ms : change.down_since_ms;
  message.payload["subject"] = message.subject;
  message.payload["text"] = message.subject + "\n" + message.text;
  return message;
}

AlertMessage data_lost_alert(const std::string& shard, const DataLoss& loss, int64_t now_ms) {
  AlertMessage message;
  message.kind = "shard_data_lost";
  message.created_at_ms = now_ms;
  message.subject = "[dq] Redis shard " + shard + " LOST its data (" +
                    std::to_string(loss.counted_jobs) + " jobs)";
  message.text =
      "Redis shard " + shard + " came back without its data at " + format_local_datetime(now_ms) +
      ": its identity key {dq}:identity (" + loss.before + ") is " +
      (loss.now.empty() ? "gone" : "now " + loss.now) + ".\ndq had counted " +
      std::to_string(loss.counted_jobs) +
      " job(s) on it; they are gone, and their producers were told they were accepted.\n\n"
      "Likely causes: Redis restarted without its AOF or RDB file (persistence off, another "
      "dir, a lost disk), FLUSHALL, or another Redis now answers at this address.\n"
      "Check the shard's persistence (dqd --check) and its log. A new identity has been "
      "written: this alert is sent once.\n";
  message.payload = {{"kind", message.kind},
                     {"shard", shard},
                     {"lost_jobs", loss.counted_jobs},
                     {"identity_before", loss.before},
                     {"identity_now", loss.now},
                     {"subject", message.subject},
                     {"text", message.subject + "\n" + message.text}};
  return message;
}

AlertMessage dead_letters_alert(const std::string& topic, const std::string& callback_url,
                                const std::vector<AlertMail>& events, int64_t now_ms) {
  AlertMessage message;
  message.kind = "dead_letters";
  message.created_at_ms = now_ms;
  size_t count = events.size();
  message.subject =
      count == 1 ? "[dq] job " + topic + "/" + events[0].job_id + " dead-lettered"
                 : "[dq] " + std::to_string(count) + " jobs of topic " + topic + " dead-lettered";
  std::set<std::string> recipients;
  for (const auto& event : events) {
    for (const auto& address : split_addresses(event.recipients)) {
      recipients.insert(address);
    }
  }
  for (const auto& address : recipients) {
    message.recipients += (message.recipients.empty() ? "" : ",") + address;
  }
  std::string text = "Topic: " + topic + "\n";
  if (!callback_url.empty()) {
    text += "Callback: " + callback_url + "\n";
  }
  text += "Dead-lettered: " + std::to_string(count) + " job" + (count == 1 ? "" : "s") +
          " between " + format_local_datetime(events.front().created_at_ms) + " and " +
          format_local_datetime(events.back().created_at_ms) + "\n\n";
  Json jobs = Json::array();
  for (size_t i = 0; i < count && i < kListedJobs; ++i) {
    const AlertMail& event = events[i];
    text += "  " + event.job_id + "  (" + std::to_string(event.attempts) +
            " attempts)  last error: " + shorten(event.error, kErrorChars) + "\n";
    jobs.push_back({{"id", event.job_id},
                    {"attempts", event.attempts},
                    {"error", shorten(event.error, kErrorChars)}});
  }
  if (count > kListedJobs) {
    text += "  ... and " + std::to_string(count - kListedJobs) + " more\n";
  }
  text += "\nThe jobs are kept in the topic's dead letters. See them with\n  dqctl dead list " +
          topic + "\nand requeue them once the callback works again with\n  dqctl dead requeue " +
          topic + " --all\n";
  message.text = text;
  message.payload = {{"kind", message.kind},
                     {"topic", topic},
                     {"count", count},
                     {"jobs", jobs},
                     {"subject", message.subject},
                     {"text", message.subject + "\n" + text}};
  return message;
}

AlertMessage crash_loop_message(const AlertMail& event, int64_t now_ms) {
  AlertMessage message;
  message.kind = "crash_loop";
  message.created_at_ms = now_ms;
  message.subject = event.subject;
  message.text = event.text;
  message.recipients = event.recipients;
  message.payload = {{"kind", message.kind},
                     {"child", event.job_id},
                     {"detail", event.error},
                     {"subject", event.subject},
                     {"text", event.subject + "\n" + event.text}};
  return message;
}

}  // namespace dq
