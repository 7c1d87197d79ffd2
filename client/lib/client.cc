// dq::client::Client: the typed API over HTTP (JSON in and out): adds,
// gets and deletes; the reads are in client_reads.cc, the failover loop in
// client_impl.h.
#include "dq/client.h"

#include <variant>

#include "client_impl.h"

namespace dq::client {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "InvalidArgument";
    case ErrorCode::NotFound:
      return "NotFound";
    case ErrorCode::Conflict:
      return "Conflict";
    case ErrorCode::TooLarge:
      return "TooLarge";
    case ErrorCode::Unavailable:
      return "Unavailable";
    case ErrorCode::Timeout:
      return "Timeout";
    case ErrorCode::OutcomeUnknown:
      return "OutcomeUnknown";
    case ErrorCode::Protocol:
      return "Protocol";
    case ErrorCode::Server:
      return "Server";
    case ErrorCode::Unauthorized:
      return "Unauthorized";
    case ErrorCode::Forbidden:
      return "Forbidden";
  }
  return "Unknown";
}

const char* job_state_name(JobState state) {
  switch (state) {
    case JobState::Delayed:
      return "delayed";
    case JobState::Ready:
      return "ready";
    case JobState::Working:
      return "working";
    case JobState::Retrying:
      return "retrying";
    case JobState::Held:
      return "held";
    case JobState::Dead:
      return "dead";
    case JobState::Unknown:
      return "unknown";
  }
  return "unknown";
}

Client::Client(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

Result<Added> Client::add(const std::string& topic, const std::string& id,
                          const std::string& body_json, const When& when) {
  Json fields{{"id", id}};
  put_when(when, &fields);
  std::optional<std::string> job = job_text(fields, body_json);
  if (!job) {
    return body_not_json(id);
  }
  auto called = impl_->call("POST", impl_->jobs_path(topic), *job);
  if (!called) {
    return called.error();
  }
  const HttpAnswer& answer = called->answer;
  // 200 is the same job pending already (a retry whose first answer was lost).
  if (answer.status != 201 && answer.status != 200) {
    return error_from_answer(answer, called->server);
  }
  Json reply = Json::parse(answer.body, nullptr, false);
  if (!reply.is_object() || !reply.contains("due_at_ms") ||
      !reply["due_at_ms"].is_number_integer()) {
    return protocol_error(
        "add answered " + std::to_string(answer.status) + " without due_at_ms: " + answer.body,
        answer, called->server);
  }
  Added added{reply.value("topic", topic), reply.value("id", id), reply["due_at_ms"].get<int64_t>(),
              answer.body};
  added.existing = reply.value("existing", false);
  return added;
}

Result<JobInfo> Client::get(const std::string& topic, const std::string& id) {
  auto called =
      impl_->call("GET", impl_->jobs_path(topic) + "/" + impl_->transport_.escape(id), "");
  if (!called) {
    return called.error();
  }
  const HttpAnswer& answer = called->answer;
  if (answer.status != 200) {
    return error_from_answer(answer, called->server);
  }
  Json reply = Json::parse(answer.body, nullptr, false);
  if (!reply.is_object() || !reply.contains("body") || !reply.contains("state") ||
      !reply["state"].is_string()) {
    return protocol_error("get answered 200 without body and state: " + answer.body, answer,
                          called->server);
  }
  JobInfo info;
  info.topic = reply.value("topic", topic);
  info.id = reply.value("id", id);
  info.body_json = reply["body"].dump();
  info.state = state_from_name(reply["state"].get<std::string>());
  info.attempts = reply.value("attempts", 0);
  info.due_at_ms = reply.value("due_at_ms", int64_t{0});
  info.created_at_ms = reply.value("created_at_ms", int64_t{0});
  if (reply.contains("last_error") && reply["last_error"].is_string()) {
    info.last_error = reply["last_error"].get<std::string>();
  }
  info.raw_json = answer.body;
  return info;
}

Result<Deleted> Client::del(const std::string& topic, const std::string& id) {
  bool unsure = false;
  auto called = impl_->call("DELETE", impl_->jobs_path(topic) + "/" + impl_->transport_.escape(id),
                            "", &unsure);
  if (!called) {
    return called.error();
  }
  // An earlier attempt may have deleted it before its answer was lost.
  if (called->answer.status == 404 && unsure) {
    return Deleted{};
  }
  if (called->answer.status != 204 && called->answer.status != 200 &&
      called->answer.status != 202) {
    return error_from_answer(called->answer, called->server);
  }
  Deleted deleted;
  deleted.delivery_in_flight = called->answer.status == 202;
  return deleted;
}

Result<std::vector<BatchItemResult>> Client::add_batch(const std::string& topic,
                                                       const std::vector<BatchJob>& jobs) {
  std::string list;
  for (const auto& job : jobs) {
    Json fields{{"id", job.id}};
    put_when(job.when, &fields);
    std::optional<std::string> entry = job_text(fields, job.body_json);
    if (!entry) {
      return body_not_json(job.id);
    }
    list += (list.empty() ? "" : ",") + *entry;
  }
  auto called =
      impl_->call("POST", impl_->jobs_path(topic) + "/batch", "{\"jobs\":[" + list + "]}");
  if (!called) {
    return called.error();
  }
  const HttpAnswer& answer = called->answer;
  if (answer.status != 200) {
    return error_from_answer(answer, called->server);
  }
  Json reply = Json::parse(answer.body, nullptr, false);
  if (!reply.is_object() || !reply.contains("results") || !reply["results"].is_array() ||
      reply["results"].size() != jobs.size()) {
    return protocol_error("batch answer does not have one result per job: " + answer.body, answer,
                          called->server);
  }
  std::vector<BatchItemResult> results;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Json& item = reply["results"][i];
    BatchItemResult result;
    result.id = jobs[i].id;
    result.status = item.is_object() ? item.value("status", 0) : 0;
    if ((result.status == 201 || result.status == 200) && item.contains("due_at_ms") &&
        item["due_at_ms"].is_number_integer()) {
      result.due_at_ms = item["due_at_ms"].get<int64_t>();
    } else {
      std::string message = item.is_object() && item.contains("error") && item["error"].is_string()
                                ? item["error"].get<std::string>()
                                : "HTTP " + std::to_string(result.status);
      ErrorCode code = result.status == 201 || result.status == 200
                           ? ErrorCode::Protocol
                           : code_for_status(result.status);
      result.error = Error{code, result.status, message, called->server};
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace dq::client
