// Implements client/dqctl/topic_remote.h.
#include "client/dqctl/topic_remote.h"

#include <cstdio>

#include "client/dqctl/api_client.h"

namespace dq::ctl {
namespace {

namespace dc = dq::client;

constexpr int kTopicTimeoutMs = 10000;  // a delete with --purge walks every shard

// The topic as the server answered: JSON, or "key: value" lines; a signing
// secret a write made is shown this once.
int print_settings(const CtlOptions& options, const dc::TopicSettings& settings,
                   const std::string& message) {
  Json topic = Json::parse(settings.json, nullptr, false);
  if (options.json) {
    print_json(topic);
    return kExitOk;
  }
  if (!message.empty()) {
    printf("%s\n", message.c_str());
    std::string secret = topic.value("signing_secret", "");
    if (secret.rfind("whsec_", 0) == 0 && secret.find("...") == std::string::npos) {
      printf("signing secret (shown this once; keep it for the receiver): %s\n", secret.c_str());
    }
    return kExitOk;
  }
  for (const auto& [key, value] : topic.items()) {
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    printf("%-19s %s\n", (key + ":").c_str(), text.c_str());
  }
  return kExitOk;
}

int list_topics(const CtlOptions& options, dc::Client& client) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "STATUS"}};
  Json all = Json::array();
  for (int64_t offset = 0;;) {
    auto page = client.list_topics("", offset, 500);
    if (!page) {
      return report_client_error(page.error(), options.json);
    }
    for (const auto& topic : page->topics) {
      rows.push_back({topic.name, topic.online ? "online" : "offline"});
    }
    Json listed = Json::parse(page->raw_json, nullptr, false);
    for (const Json& topic : listed.value("topics", Json::array())) {
      all.push_back(topic);
    }
    offset += static_cast<int64_t>(page->topics.size());
    if (page->topics.empty() || offset >= page->total) {
      break;
    }
  }
  if (options.json) {
    print_json(all);
  } else {
    print_rows(rows);
  }
  return kExitOk;
}

}  // namespace

int run_remote_topic(const CtlOptions& options, const std::string& sub, const std::string& name,
                     const Json& fields, bool purge) {
  dc::Client client = make_api_client(options, kTopicTimeoutMs);
  if (sub == "list") {
    return list_topics(options, client);
  }
  if (sub == "del") {
    auto deleted = client.delete_topic(name, purge);
    if (!deleted) {
      return report_client_error(deleted.error(), options.json);
    }
    if (options.json) {
      print_json(Json{{"deleted", deleted->name},
                      {"purged_jobs", deleted->purged_jobs},
                      {"in_flight_jobs", deleted->in_flight_jobs}});
    } else {
      printf("topic %s deleted with %lld job(s)\n", name.c_str(),
             static_cast<long long>(deleted->purged_jobs));
    }
    return kExitOk;
  }
  dc::Result<dc::TopicSettings> settings = dc::Error{};
  std::string message;
  if (sub == "show") {
    settings = client.get_topic(name);
  } else if (sub == "add") {
    settings = client.create_topic(name, fields.dump());
    message = "topic " + name + " added";
  } else {
    settings = client.patch_topic(name, fields.dump());
    message = sub == "set" ? "topic " + name + " updated" : "topic " + name + " is " + sub;
  }
  if (!settings) {
    return report_client_error(settings.error(), options.json);
  }
  return print_settings(options, *settings, message);
}

}  // namespace dq::ctl
