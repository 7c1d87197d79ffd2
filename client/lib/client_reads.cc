// dq::client::Client's reads: topics, a topic's stats and jobs, the servers.
#include <variant>

#include "client_impl.h"
#include "dq/client.h"

namespace dq::client {

Result<TopicList> Client::list_topics(const std::string& search, int64_t offset, int64_t limit) {
  std::string path = "/v1/topics?search=" + impl_->transport_.escape(search) +
                     "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(limit);
  auto called = impl_->call("GET", path, "");
  if (!called) {
    return called.error();
  }
  auto parsed = object_answer(called->answer, called->server, "list_topics", {"topics", "total"});
  if (parsed.index() == 1) {
    return std::get<1>(parsed);
  }
  const Json& reply = std::get<0>(parsed);
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
  list.raw_json = called->answer.body;
  return list;
}

Result<TopicStats> Client::topic_stats(const std::string& topic) {
  auto called = impl_->call("GET", "/v1/topics/" + impl_->transport_.escape(topic) + "/stats", "");
  if (!called) {
    return called.error();
  }
  auto parsed = object_answer(called->answer, called->server, "topic_stats", {"now", "total"});
  if (parsed.index() == 1) {
    return std::get<1>(parsed);
  }
  const Json& reply = std::get<0>(parsed);
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
  stats.raw_json = called->answer.body;
  return stats;
}

Result<JobList> Client::list_jobs(const std::string& topic, JobState state, int64_t offset,
                                  int64_t limit) {
  if (state != JobState::Delayed && state != JobState::Ready && state != JobState::Working &&
      state != JobState::Retrying) {
    return Error{ErrorCode::InvalidArgument, 0,
                 std::string("cannot list ") + job_state_name(state) +
                     " jobs; use Delayed, Ready, Working or Retrying",
                 ""};
  }
  std::string path = impl_->jobs_path(topic) + "?state=" + job_state_name(state) +
                     "&offset=" + std::to_string(offset) + "&limit=" + std::to_string(limit);
  auto called = impl_->call("GET", path, "");
  if (!called) {
    return called.error();
  }
  auto parsed = object_answer(called->answer, called->server, "list_jobs", {"jobs", "total"});
  if (parsed.index() == 1) {
    return std::get<1>(parsed);
  }
  const Json& reply = std::get<0>(parsed);
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
  list.raw_json = called->answer.body;
  return list;
}

std::vector<Client::ServerState> Client::servers() const {
  std::vector<ServerState> states;
  int64_t now = monotonic_ms();
  for (size_t i = 0; i < impl_->servers_.size(); ++i) {
    bool down = impl_->servers_.is_down(i, now);
    states.push_back(ServerState{impl_->servers_.address(i), down,
                                 down ? impl_->servers_.retry_at_ms(i) - now : 0});
  }
  return states;
}

const std::string& Client::last_server() const { return impl_->last_server_; }

}  // namespace dq::client
