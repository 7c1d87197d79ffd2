// Implements client/dqctl/php_topic_row.h.
#include "client/dqctl/php_topic_row.h"

#include <cctype>

namespace dq::ctl {
namespace {

std::string column(const PhpTopicRow& row, const char* name) {
  auto found = row.find(name);
  if (found == row.end()) {
    return {};
  }
  std::string value = found->second;
  size_t first = value.find_first_not_of(" \t\r\n");
  size_t last = value.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

bool whole_number(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 12 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::stoll(text);
  return true;
}

// "{res.code}!=0" -> "code=0": the PHP queue re-notified while the
// expression held, dq succeeds when the rule holds.
bool success_from_flag(const std::string& flag, std::string* rule) {
  const std::string open = "{res.";
  if (flag.rfind(open, 0) != 0) {
    return false;
  }
  size_t close = flag.find('}');
  if (close == std::string::npos) {
    return false;
  }
  std::string path = flag.substr(open.size(), close - open.size());
  size_t at = close + 1;
  while (at < flag.size() && flag[at] == ' ') {
    ++at;
  }
  if (flag.compare(at, 3, "!==") == 0) {
    at += 3;
  } else if (flag.compare(at, 2, "!=") == 0) {
    at += 2;
  } else {
    return false;
  }
  std::string value = flag.substr(at);
  size_t first = value.find_first_not_of(' ');
  value = first == std::string::npos ? "" : value.substr(first);
  if (value.size() >= 2 && (value[0] == '\'' || value[0] == '"') && value.back() == value[0]) {
    value = value.substr(1, value.size() - 2);
  }
  if (path.empty() || value.empty()) {
    return false;
  }
  *rule = path + "=" + value;
  return true;
}

}  // namespace

Result<Topic> topic_from_php_row(const PhpTopicRow& row, std::vector<std::string>* notes) {
  Topic topic;
  topic.name = column(row, "topic");
  topic.callback_url = column(row, "callback");
  if (topic.name.empty()) {
    return Status(Code::kInvalid, "a dq_topic row has no topic");
  }
  if (topic.callback_url.empty()) {
    return Status(Code::kInvalid, "topic " + topic.name + " has no callback");
  }
  topic.callback_format = "form";
  topic.method = column(row, "method");
  for (char& c : topic.method) {
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  }
  if (topic.method.empty()) {
    topic.method = "GET";
  }
  int64_t number = 0;
  if (whole_number(column(row, "delay"), &number)) {
    topic.default_delay_s = number;
  }
  if (whole_number(column(row, "timeout"), &number) && number > 0) {
    topic.timeout_ms = static_cast<int>(number <= 60 ? number * 1000 : number);
  }
  std::string emails = column(row, "email");
  std::string joined;
  for (char c : emails) {
    bool separator = c == ';' || c == ',' || c == ' ' || c == '\n' || c == '\r';
    if (!separator) {
      joined.push_back(c);
    } else if (!joined.empty() && joined.back() != ',') {
      joined.push_back(',');
    }
  }
  if (!joined.empty() && joined.back() == ',') {
    joined.pop_back();
  }
  topic.alert_emails = joined;
  topic.creator = column(row, "createor");
  if (topic.creator.empty()) {
    topic.creator = column(row, "creator");
  }
  topic.online = column(row, "status") == "1";
  if (whole_number(column(row, "priority"), &number) && number >= 1 && number <= 3) {
    topic.priority = static_cast<int>(number);
  }
  std::string flag = column(row, "re_notify_flag");
  if (!flag.empty() && !success_from_flag(flag, &topic.success_json)) {
    notes->push_back("topic " + topic.name + ": re_notify_flag '" + flag +
                     "' is not {res.PATH}!=VALUE; set --success-json by hand");
  }
  return topic;
}

}  // namespace dq::ctl
