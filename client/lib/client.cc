// dq::client::Client: the typed API over HTTP (JSON in and out) for jobs,
// topics and pull workers; the failover loop is client_impl.h, the
// schedule calls schedules.cc.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client_impl.h"

namespace dq::client {
namespace {

// Adds "delay" or "at" (with "tz"), and "ttl" or "expire_at", to a job object.
void put_when(const When& when, Json* job) {
  if (!when.tz().empty()) {
    (*job)["tz"] = when.tz();
  }
  if (when.ttl() > 0) {
    (*job)["ttl"] = when.ttl();
  }
  if (!when.expire_at().empty()) {
    (*job)["expire_at"] = when.expire_at();
  }
  if (!when.after().empty()) {
    Json after = Json::array();
    for (const After& dep : when.after()) {
      after.push_back(Json{{"topic", dep.topic}, {"id", dep.id}});
    }
    (*job)["after"] = std::move(after);
  }
  switch (when.kind()) {
    case When::Kind::kDefault:
      break;
    case When::Kind::kDelay:
      (*job)["delay"] = when.number();
      break;
    case When::Kind::kAtSeconds:
      (*job)["at"] = static_cast<int64_t>(when.number());
      break;
    case When::Kind::kAtText:
      (*job)["at"] = when.text();
      break;
  }
}

// A job object as JSON text: `fields` (id, delay or at) with the caller's
// body text spliced in as it is, so the server stores it byte for byte
// (parsing and dumping it would reorder keys and respell numbers). nullopt
// when the body is not JSON text or the id is not UTF-8.
std::optional<std::string> job_text(const Json& fields, const std::string& body_json) {
  if (!Json::accept(body_json)) {
    return std::nullopt;
  }
  std::string text;
  try {
    text = fields.dump();
  } catch (const Json::exception&) {
    return std::nullopt;
  }
  text.pop_back();  // the closing '}': fields is never empty (it has the id)
  return text + ",\"body\":" + body_json + "}";
}

Error body_not_json(const std::string& id) {
  return Error{ErrorCode::InvalidArgument, 0,
               "body of job '" + id +
                   "' must be JSON text, e.g. '\"text\"' or '{\"a\":1}', and its id UTF-8 text",
               ""};
}

}  // namespace

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
  // 200 is the same job pending already (a retry whose first answer was lost).
  auto written = impl_->write_call("POST", impl_->jobs_path(topic), *job, "add");
  if (!written) {
    return written.error();
  }
  const HttpAnswer& answer = written->answer;
  const Json& reply = written->reply;
  Added added;
  added.topic = reply.value("topic", topic);
  added.id = reply.value("id", id);
  added.due_at_ms = reply["due_at_ms"].get<int64_t>();
  added.raw_json = answer.body;
  added.existing = reply.value("existing", false);
  added.ended = reply.value("state", std::string());
  added.ended_at_ms = reply.value("ended_at_ms", int64_t{0});
  return added;
}

Result<JobInfo> Client::get(const std::string& topic, const std::string& id) {
  auto got = impl_->object_call("GET", impl_->jobs_path(topic) + "/" + impl_->transport_.escape(id),
                                "", "get", {"body", "state"});
  if (!got) {
    return got.error();
  }
  const Json& reply = got->reply;
  if (!reply["state"].is_string()) {
    return Error{ErrorCode::Protocol, 200, "get: unexpected answer: " + got->body, got->server};
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
  info.raw_json = got->body;
  return info;
}

Result<RunResult> Client::run(const std::string& topic, const std::string& id) {
  auto got = impl_->object_call(
      "POST", impl_->jobs_path(topic) + "/" + impl_->transport_.escape(id) + "/run", "", "run",
      {"state", "due_at_ms", "moved"});
  if (!got) {
    return got.error();
  }
  const Json& reply = got->reply;
  if (!reply["state"].is_string() || !reply["due_at_ms"].is_number_integer() ||
      !reply["moved"].is_boolean()) {
    return Error{ErrorCode::Protocol, 200, "run: unexpected answer: " + got->body, got->server};
  }
  RunResult result;
  result.state = state_from_name(reply["state"].get<std::string>());
  result.due_at_ms = reply["due_at_ms"].get<int64_t>();
  result.moved = reply["moved"].get<bool>();
  return result;
}

Result<UpdateResult> Client::update(const std::string& topic, const std::string& id,
                                    const std::optional<std::string>& body_json, const When& when) {
  Json fields = Json::object();
  put_when(when, &fields);
  std::string text;
  try {
    text = fields.dump();
  } catch (const Json::exception&) {
    return body_not_json(id);
  }
  if (body_json) {
    if (!Json::accept(*body_json)) {
      return body_not_json(id);
    }
    // The body's text spliced in as it is (see job_text).
    text.pop_back();
    text += std::string(fields.empty() ? "" : ",") + "\"body\":" + *body_json + "}";
  }
  auto written = impl_->write_call(
      "PUT", impl_->jobs_path(topic) + "/" + impl_->transport_.escape(id), text, "update");
  if (!written) {
    return written.error();
  }
  const HttpAnswer& answer = written->answer;
  const Json& reply = written->reply;
  if (!reply["state"].is_string()) {
    return protocol_error("update answered without state: " + answer.body, answer, written->server);
  }
  UpdateResult result;
  result.created = answer.status == 201;
  result.state = state_from_name(reply["state"].get<std::string>());
  result.previous_state = state_from_name(reply.value("previous_state", std::string()));
  result.due_at_ms = reply["due_at_ms"].get<int64_t>();
  result.raw_json = answer.body;
  return result;
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
  auto got = impl_->object_call("POST", impl_->jobs_path(topic) + "/batch",
                                "{\"jobs\":[" + list + "]}", "add_batch", {"results"});
  if (!got) {
    return got.error();
  }
  const Json& reply = got->reply;
  if (!reply["results"].is_array() || reply["results"].size() != jobs.size()) {
    return Error{ErrorCode::Protocol, 200,
                 "batch answer does not have one result per job: " + got->body, got->server};
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
      result.error = Error{code, result.status, message, got->server};
    }
    results.push_back(std::move(result));
  }
  return results;
}

Result<TopicList> Client::list_topics(const std::string& search, int64_t offset, int64_t limit) {
  std::string path = "/v1/topics?search=" + impl_->transport_.escape(search) +
                     "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(limit);
  auto got = impl_->object_call("GET", path, "", "list_topics", {"topics", "total"});
  if (!got) {
    return got.error();
  }
  const Json& reply = got->reply;
  TopicList list;
  list.total = reply.value("total", int64_t{0});
  list.unreachable_shards = strings_of(reply.value("unreachable_shards", Json::array()));
  for (const auto& item : reply["topics"]) {
    if (!item.is_object()) {
      continue;
    }
    TopicSummary topic;
    topic.name = item.value("name", "");
    topic.online = item.value("online", false);
    if (item.contains("now")) {
      topic.now = state_counts_of(item["now"]);
    }
    list.topics.push_back(std::move(topic));
  }
  list.raw_json = got->body;
  return list;
}

Result<TopicStats> Client::topic_stats(const std::string& topic) {
  auto got = impl_->object_call("GET", "/v1/topics/" + impl_->transport_.escape(topic) + "/stats",
                                "", "topic_stats", {"now", "total"});
  if (!got) {
    return got.error();
  }
  const Json& reply = got->reply;
  TopicStats stats;
  stats.topic = reply.value("topic", topic);
  stats.now = state_counts_of(reply["now"]);
  stats.total = event_counts_of(reply["total"]);
  for (const auto& row : reply.value("per_minute", Json::array())) {
    if (row.is_object()) {
      stats.per_minute.emplace_back(row.value("minute", int64_t{0}), event_counts_of(row));
    }
  }
  for (const auto& row : reply.value("per_day", Json::array())) {
    if (row.is_object()) {
      stats.per_day.emplace_back(row.value("day", ""), event_counts_of(row));
    }
  }
  stats.unreachable_shards = strings_of(reply.value("unreachable_shards", Json::array()));
  stats.raw_json = got->body;
  return stats;
}

Result<JobList> Client::list_jobs(const std::string& topic, JobState state, int64_t offset,
                                  int64_t limit) {
  if (state != JobState::Delayed && state != JobState::Ready && state != JobState::Working &&
      state != JobState::Retrying && state != JobState::Waiting) {
    return Error{ErrorCode::InvalidArgument, 0,
                 std::string("cannot list ") + job_state_name(state) +
                     " jobs; use Delayed, Ready, Working, Retrying or Waiting",
                 ""};
  }
  std::string path = impl_->jobs_path(topic) + "?state=" + job_state_name(state) +
                     "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(limit);
  auto got = impl_->object_call("GET", path, "", "list_jobs", {"jobs", "total"});
  if (!got) {
    return got.error();
  }
  const Json& reply = got->reply;
  JobList list;
  list.total = reply.value("total", int64_t{0});
  list.truncated = reply.value("truncated", false);
  list.unreachable_shards = strings_of(reply.value("unreachable_shards", Json::array()));
  for (const auto& item : reply["jobs"]) {
    if (!item.is_object()) {
      continue;
    }
    ListedJob job;
    job.id = item.value("id", "");
    job.state = state_from_name(item.value("state", ""));
    job.attempts = item.value("attempts", 0);
    job.due_at_ms = item.value("due_at_ms", int64_t{0});
    job.created_at_ms = item.value("created_at_ms", int64_t{0});
    if (item.contains("last_error") && item["last_error"].is_string()) {
      job.last_error = item["last_error"].get<std::string>();
    }
    job.last_error_at_ms = item.value("last_error_at_ms", int64_t{0});
    job.shard = item.value("shard", "");
    job.lease_deadline_ms = item.value("lease_deadline_ms", int64_t{0});
    list.jobs.push_back(std::move(job));
  }
  list.raw_json = got->body;
  return list;
}

Result<TopicSettings> Client::get_topic(const std::string& topic) {
  auto called = impl_->call("GET", "/v1/topics/" + impl_->transport_.escape(topic), "");
  if (!called) {
    return called.error();
  }
  if (called->answer.status != 200) {
    return error_from_answer(called->answer, called->server);
  }
  return topic_settings_of(called->answer, called->server);
}

Result<TopicSettings> Client::put_topic(const std::string& topic, const std::string& fields_json,
                                        std::optional<int64_t> if_version) {
  return impl_->topic_write("PUT", topic, fields_json, if_version);
}

Result<TopicSettings> Client::create_topic(const std::string& topic,
                                           const std::string& fields_json) {
  return impl_->topic_write("PUT", topic, fields_json, std::nullopt, "If-None-Match: *");
}

Result<TopicSettings> Client::patch_topic(const std::string& topic, const std::string& fields_json,
                                          std::optional<int64_t> if_version) {
  return impl_->topic_write("PATCH", topic, fields_json, if_version);
}

Result<TopicDeletion> Client::delete_topic(const std::string& topic, bool purge) {
  auto got = impl_->object_call(
      "DELETE", "/v1/topics/" + impl_->transport_.escape(topic) + (purge ? "?purge=true" : ""), "",
      "delete_topic", {"deleted"});
  if (!got) {
    return got.error();
  }
  TopicDeletion deletion;
  deletion.name = got->reply.value("deleted", topic);
  deletion.purged_jobs = got->reply.value("purged_jobs", int64_t{0});
  deletion.in_flight_jobs = got->reply.value("in_flight_jobs", int64_t{0});
  return deletion;
}

std::vector<Client::ServerState> Client::servers() const {
  std::vector<ServerState> states;
  int64_t now = internal::monotonic_ms();
  for (size_t i = 0; i < impl_->servers_.size(); ++i) {
    bool down = impl_->servers_.is_down(i, now);
    states.push_back(ServerState{impl_->servers_.address(i), down,
                                 down ? impl_->servers_.retry_at_ms(i) - now : 0});
  }
  return states;
}

const std::string& Client::last_server() const { return impl_->last_server_; }

Result<std::vector<ReservedJob>> Client::reserve(const std::string& topic,
                                                 const ReserveOptions& options) {
  std::string path = "/v1/topics/" + impl_->transport_.escape(topic) +
                     "/reserve?ttr=" + std::to_string(options.ttr_s) +
                     "&wait=" + std::to_string(options.wait_s) +
                     "&count=" + std::to_string(options.count);
  // A long poll answers after up to wait_s: the call waits that much longer.
  int timeout_ms = impl_->options_.timeout_ms + std::max(0, options.wait_s) * 1000;
  auto got = impl_->object_call("GET", path, "", "reserve", {"jobs"}, timeout_ms);
  if (!got) {
    return got.error();
  }
  const Json& list = got->reply["jobs"];
  if (!list.is_array()) {
    return Error{ErrorCode::Protocol, 200, "reserve: unexpected answer: " + got->body, got->server};
  }
  std::vector<ReservedJob> jobs;
  for (const Json& entry : list) {
    if (!entry.is_object() || !entry.contains("id") || !entry.contains("token") ||
        !entry["token"].is_string() || !entry.contains("body")) {
      return Error{ErrorCode::Protocol, 200, "reserve: unexpected job: " + entry.dump(),
                   got->server};
    }
    ReservedJob job;
    job.topic = entry.value("topic", topic);
    job.id = entry["id"].get<std::string>();
    job.body_json = entry["body"].dump();
    job.attempt = entry.value("attempt", 0);
    job.due_ms = entry.value("due_ms", int64_t{0});
    job.created_ms = entry.value("created_ms", int64_t{0});
    job.token = entry["token"].get<std::string>();
    job.lease_until_ms = entry.value("lease_until_ms", int64_t{0});
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<bool> Client::ack(const ReservedJob& job) {
  auto got = impl_->object_call(
      "POST", impl_->jobs_path(job.topic) + "/" + impl_->transport_.escape(job.id) + "/ack",
      Json{{"token", job.token}}.dump(), "ack", {"state"}, 0, /*stale=*/true);
  if (!got) {
    return got.error();
  }
  return true;
}

Result<NackResult> Client::nack(const ReservedJob& job, std::optional<int> delay_s,
                                const std::string& error) {
  std::string path = impl_->jobs_path(job.topic) + "/" + impl_->transport_.escape(job.id) + "/nack";
  if (delay_s) {
    path += "?delay=" + std::to_string(*delay_s);
  }
  Json body{{"token", job.token}};
  if (!error.empty()) {
    body["error"] = error;
  }
  std::string text;
  try {
    text = body.dump();
  } catch (const Json::exception&) {
    return Error{ErrorCode::InvalidArgument, 0, "nack: the error text must be UTF-8", ""};
  }
  auto got = impl_->object_call("POST", path, text, "nack", {"state"}, 0, /*stale=*/true);
  if (!got) {
    return got.error();
  }
  NackResult result;
  result.state = got->reply["state"].is_string() ? got->reply["state"].get<std::string>() : "";
  result.due_ms = got->reply.value("due_ms", int64_t{0});
  return result;
}

Result<int64_t> Client::touch(ReservedJob& job, std::optional<int> ttr_s) {
  Json body{{"token", job.token}};
  if (ttr_s) {
    body["ttr"] = *ttr_s;
  }
  auto got = impl_->object_call(
      "POST", impl_->jobs_path(job.topic) + "/" + impl_->transport_.escape(job.id) + "/touch",
      body.dump(), "touch", {"lease_until_ms"}, 0, /*stale=*/true);
  if (!got) {
    return got.error();
  }
  if (!got->reply["lease_until_ms"].is_number_integer()) {
    return Error{ErrorCode::Protocol, 200, "touch: unexpected answer: " + got->body, got->server};
  }
  job.lease_until_ms = got->reply["lease_until_ms"].get<int64_t>();
  return job.lease_until_ms;
}

Result<std::vector<BatchItemResult>> Client::ack_batch(const std::string& topic,
                                                       const std::vector<ReservedJob>& jobs) {
  Json acks = Json::array();
  for (const auto& job : jobs) {
    acks.push_back(Json{{"id", job.id}, {"token", job.token}});
  }
  std::string body;
  try {
    body = Json{{"acks", acks}}.dump();
  } catch (const Json::exception&) {
    return Error{ErrorCode::InvalidArgument, 0, "ack_batch: ids must be UTF-8 text", ""};
  }
  auto got = impl_->object_call("POST", "/v1/topics/" + impl_->transport_.escape(topic) + "/ack",
                                body, "ack_batch", {"results"});
  if (!got) {
    return got.error();
  }
  const Json& list = got->reply["results"];
  if (!list.is_array() || list.size() != jobs.size()) {
    return Error{ErrorCode::Protocol, 200, "ack_batch: unexpected answer: " + got->body,
                 got->server};
  }
  std::vector<BatchItemResult> results;
  for (size_t n = 0; n < list.size(); ++n) {
    const Json& entry = list[n];
    BatchItemResult item;
    item.id = jobs[n].id;
    if (entry.is_object() && entry.value("state", "") == "done") {
      item.status = 200;
    } else {
      item.status = entry.is_object() ? entry.value("status", 0) : 0;
      std::string message = entry.is_object() ? entry.value("error", "") : "";
      ErrorCode code = item.status == 409   ? ErrorCode::StaleToken
                       : item.status == 400 ? ErrorCode::InvalidArgument
                                            : ErrorCode::Server;
      item.error = Error{code, item.status, message, got->server};
    }
    results.push_back(std::move(item));
  }
  return results;
}

}  // namespace dq::client
