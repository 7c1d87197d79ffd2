// HttpApi's topic routes: GET, PUT, PATCH and DELETE /v1/topics/{topic}.
// The writes are common/registry/topic_writes.h, the one workflow dqctl and
// the admin page use too: the same fields and checks, the callback URL rules,
// versioned writes (If-Match, or "version" in the body: 409 when the topic
// changed meanwhile), the shared registry when [registry] shared = yes.
#include "common/core/json_big_numbers.h"
#include "common/core/log.h"
#include "common/http/http_request.h"
#include "common/registry/topic_fields.h"
#include "common/registry/topic_json.h"
#include "server/http_api.h"
#include "server/http_reply.h"
#include "server/listing_routes.h"

namespace dq {
namespace {

constexpr const char* kLabel = "topic_write";

// {"error": why} and, for a refused field, {"field": its name}.
Json error_json(const Status& status) {
  Json body{{"error", status.message()}};
  if (status.code() == Code::kInvalid) {
    std::string field = field_of(status);
    if (!field.empty()) {
      body["field"] = field;
    }
  }
  return body;
}

std::string etag_of(int64_t version) { return "\"" + std::to_string(version) + "\""; }

}  // namespace

bool HttpApi::ready_to_write(const Exchange& request, const Json& body,
                             std::optional<int64_t>* version, TopicWriteContext* context) {
  auto named = edit_version(body, request->head().if_match);
  if (!named.is_ok()) {
    finish(request, kLabel, 400, error_json(named.status()));
    return false;
  }
  *version = *named;
  if (!registry_) {
    auto opened = Registry::open(config_.sqlite_path);
    if (!opened.is_ok()) {
      finish(request, kLabel, 503,
             Json{{"error", "the registry " + config_.sqlite_path + " cannot be opened: " +
                                opened.status().message() + "; nothing was written"}});
      return false;
    }
    registry_ = std::move(*opened);
  }
  *context = TopicWriteContext{registry_.get(), &config_, &shards_};
  return true;
}

void HttpApi::get_topic(const Exchange& request, const std::string& topic) {
  topics_.refresh_if_older(200);  // the version an edit names is the latest written
  ListingAnswer answer = topic_answer(topics_, topic);
  if (answer.status == 200) {
    request->add_header("ETag", etag_of(answer.body.value("version", int64_t{0})));
  }
  finish(request, "topic", answer.status, answer.body);
}

void HttpApi::write_topic(const Exchange& request, const std::string& topic, TopicEdit edit) {
  Json fields = parse_json_any_number(request->body());
  if (fields.is_discarded() || !fields.is_object()) {
    return finish(request, kLabel, 400,
                  Json{{"error", request->body().empty()
                                     ? "request body is empty; expected a JSON object of topic "
                                       "fields"
                                     : "request body must be a JSON object of topic fields"}});
  }
  const std::string& if_none_match = request->head().if_none_match;
  if (!if_none_match.empty()) {
    if (if_none_match != "*" || edit != TopicEdit::kReplace) {
      return finish(
          request, kLabel, 400,
          Json{{"error", "If-None-Match: only \"*\" on a PUT (create only) is understood"}});
    }
    edit = TopicEdit::kCreate;
  }
  std::optional<int64_t> version;
  TopicWriteContext context;
  if (!ready_to_write(request, fields, &version, &context)) {
    return;
  }
  TopicWriteRequest write{topic, std::move(fields), edit, version, nullptr};
  dq::write_topic(context, write, [this, request, topic](Result<TopicWritten> written) {
    if (!written.is_ok()) {
      request_log().info("topic-write {} -> {} {}", topic, http_status_of(written.status().code()),
                         written.status().message());
      return finish(request, kLabel, http_status_of(written.status().code()),
                    error_json(written.status()));
    }
    (void)topics_.refresh();  // this server sees it at once; others on their
                              // next registry read
    int status = written->created ? 201 : 200;
    request_log().info("topic-write {} -> {} version {}", topic, status, written->topic.version);
    request->add_header("ETag", etag_of(written->topic.version));
    if (written->created) {
      request->add_header("Location", "/v1/topics/" + topic);
    }
    finish(request, kLabel, status, written->to_json());
  });
}

void HttpApi::delete_topic(const Exchange& request, const std::string& topic) {
  std::string purge_text = query_value(std::string(request->query()), "purge");
  if (!purge_text.empty() && purge_text != "true" && purge_text != "false") {
    return finish(request, kLabel, 400, Json{{"error", "purge must be true or false"}});
  }
  bool purge = purge_text == "true";
  std::optional<int64_t> version;
  TopicWriteContext context;
  if (!ready_to_write(request, Json::object(), &version, &context)) {
    return;
  }
  dq::delete_topic(
      context, topic, purge, version,
      [this, request, topic](const Status& status, const TopicDeleted& deleted) {
        if (deleted.held_jobs > 0) {
          return finish(
              request, kLabel, 409,
              Json{{"error", status.message() + "; DELETE with ?purge=true deletes them with it"},
                   {"jobs", deleted.held_jobs}});
        }
        if (!status.is_ok()) {
          return finish(request, kLabel, http_status_of(status.code()), error_json(status));
        }
        (void)topics_.refresh();
        request_log().info("topic-delete {} -> 200 with {} job(s)", topic, deleted.purged_jobs);
        finish(request, kLabel, 200,
               Json{{"deleted", deleted.name},
                    {"purged_jobs", deleted.purged_jobs},
                    {"in_flight_jobs", deleted.in_flight_jobs}});
      });
}

}  // namespace dq
