// `dqctl alert ...`: the alert settings kept in SQLite (common/alerts/alert_settings.h)
// and a test send. The redis checker reads the settings before every send,
// so a change takes effect without a restart.
//   alert show    settings (password hidden) and the latest alerts with
//                 what became of each
//   alert set     --smtp-host H --smtp-port N --smtp-security none|starttls|tls
//                 --smtp-user U --smtp-password P --from ADDR --to a@x,b@y
//                 --webhook URL (only the given ones change; "" clears)
//   alert test    sends a test mail to the global recipients and a test
//                 webhook call now, and prints what each server answered
//                 (for the webhook: its status and the call's time only)

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "client/dqctl/registry_write_ctl.h"
#include "common/alerts/alert_messages.h"
#include "common/alerts/alert_settings.h"
#include "common/alerts/alert_test.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace alert_command {

constexpr const char* kCommand = "alert";
constexpr size_t kRecentShown = 10;

const std::map<std::string, std::string>& option_keys() {
  static const std::map<std::string, std::string> kKeys = {{"--smtp-host", "smtp_host"},
                                                           {"--smtp-port", "smtp_port"},
                                                           {"--smtp-security", "smtp_security"},
                                                           {"--smtp-user", "smtp_user"},
                                                           {"--smtp-password", "smtp_password"},
                                                           {"--from", "mail_from"},
                                                           {"--to", "to"},
                                                           {"--webhook", "webhook_url"}};
  return kKeys;
}

int show(const CtlOptions& options, Registry& registry, const Config& config) {
  auto settings = load_alert_settings(registry);
  if (!settings.is_ok()) {
    return report_failure(settings.status());
  }
  auto messages = AlertMessages::open(config.sqlite_path);
  if (!messages.is_ok()) {
    return report_failure(messages.status());
  }
  auto recent = (*messages)->recent(kRecentShown);
  if (!recent.is_ok()) {
    return report_failure(recent.status());
  }
  if (options.json) {
    Json list = Json::array();
    for (const auto& message : *recent) {
      list.push_back({{"id", message.id},
                      {"kind", message.kind},
                      {"subject", message.subject},
                      {"mail_state", message.mail_state},
                      {"webhook_state", message.webhook_state},
                      {"attempts", message.attempts},
                      {"last_error", message.last_error},
                      {"created_at_ms", message.created_at_ms},
                      {"sent_at_ms", message.sent_at_ms ? Json(*message.sent_at_ms) : Json()}});
    }
    std::printf("%s\n", Json{{"settings", settings->to_json()}, {"recent", list}}.dump(2).c_str());
    return kExitOk;
  }
  Json shown = settings->to_json();
  for (const auto& key : alert_setting_keys()) {
    std::string value = shown[key].is_string() ? shown[key].get<std::string>() : shown[key].dump();
    std::printf("%-14s %s\n", key.c_str(), value.empty() ? "-" : value.c_str());
  }
  if (!settings->mail_on()) {
    std::printf("(mail is off: no smtp_host)\n");
  }
  if (!settings->webhook_on()) {
    std::printf("(webhook is off: no webhook_url)\n");
  }
  std::printf("\nlatest alerts:\n");
  if (recent->empty()) {
    std::printf("  none\n");
  }
  for (const auto& message : *recent) {
    std::printf("  #%lld %-12s mail %-7s webhook %-7s %s\n", static_cast<long long>(message.id),
                message.kind.c_str(), message.mail_state.c_str(), message.webhook_state.c_str(),
                message.subject.c_str());
    if (!message.last_error.empty()) {
      std::printf("      attempt %d failed: %s\n", message.attempts, message.last_error.c_str());
    }
  }
  return kExitOk;
}

int set(const CtlOptions& options, const std::vector<std::string>& args, Registry& registry,
        const Config& config) {
  auto settings = load_alert_settings(registry);
  auto version = local_version(registry.db(), "alert_settings", "all");
  if (!settings.is_ok() || !version.is_ok()) {
    return report_failure(settings.is_ok() ? version.status() : settings.status());
  }
  if (args.size() < 2) {
    return usage_error(kCommand, "alert set needs at least one option");
  }
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg;
    std::string value;
    if (!take_option(args, &i, &arg, &value)) {
      return usage_error(kCommand, arg + " needs a value");
    }
    auto key = option_keys().find(arg);
    if (key == option_keys().end()) {
      return usage_error(kCommand, "unknown option " + arg);
    }
    Status applied = apply_alert_setting(&*settings, key->second, value);
    if (!applied.is_ok()) {
      return report_failure(applied);
    }
  }
  // Written at the version read (never versioned yet: the first write makes
  // them), so a change made meanwhile on another host is refused, not undone.
  PutMode mode = version->version == 0 ? PutMode::kCreate : PutMode::kUpdate;
  AlertSettings edited = *settings;
  Status saved = write_registry_change(
      options, registry,
      ObjectWrite{
          find_registry_kind("alert_settings"), "all", mode,
          mode == PutMode::kCreate ? std::nullopt : std::optional<int64_t>(version->version),
          [&registry, &config, &edited] { return save_alert_settings(registry, config, edited); }});
  if (!saved.is_ok()) {
    return report_failure(saved);
  }
  std::printf("alert settings saved\n");
  return kExitOk;
}

int test(const CtlOptions& options, Registry& registry, const Config& config) {
  auto settings = load_alert_settings(registry);
  if (!settings.is_ok()) {
    return report_failure(settings.status());
  }
  bool failed = false;
  auto sent = send_test_alert(*settings, config, registry, "`dqctl alert test`",
                              config.alert_send_timeout_ms, &failed);
  if (!sent.is_ok()) {
    return report_failure(sent.status());
  }
  const Json& out = *sent;
  if (options.json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    for (const char* channel : {"mail", "webhook"}) {
      if (!out.contains(channel)) {
        continue;
      }
      const Json& result = out[channel];
      std::printf(
          "%s: %s: %s\n", channel, result["ok"].get<bool>() ? "accepted" : "FAILED",
          result.value(result["ok"].get<bool>() ? "answer" : "error", std::string()).c_str());
    }
  }
  return failed ? kExitFailed : kExitOk;
}

int run_alert(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.empty()) {
    return usage_error(kCommand, "needs show, set or test");
  }
  const std::string& sub = args[0];
  if (sub != "show" && sub != "set" && sub != "test") {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }
  if (sub != "set" && args.size() != 1) {
    return usage_error(kCommand, "alert " + sub + " takes no arguments");
  }
  int exit_code = kExitOk;
  Config config;
  if (!load_ctl_config(options, &config, &exit_code)) {
    return exit_code;
  }
  auto registry = open_ctl_registry(options, &exit_code);
  if (!registry) {
    return exit_code;
  }
  if (sub == "show") {
    return show(options, *registry, config);
  }
  if (sub == "set") {
    return set(options, args, *registry, config);
  }
  return test(options, *registry, config);
}

constexpr const char* kUsage =
    "alert show\n"
    "alert set [--smtp-host H] [--smtp-port N] [--smtp-security none|starttls|tls]\n"
    "          [--smtp-user U] [--smtp-password P] [--from ADDR] [--to a@x,b@y]\n"
    "          [--webhook URL]\n"
    "alert test   send a test mail and webhook call; print the mail server's answer and the "
    "webhook's status and time";
const CommandRegistration kRegistered(kCommand, kUsage, &run_alert);

}  // namespace alert_command
}  // namespace dq::ctl
