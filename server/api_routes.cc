// HttpApi::route: which handler answers a request, by method and path
// (the routes are listed in server/http_api.h).
#include <cstring>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/http/http_request.h"
#include "server/http_api.h"
#include "server/listing_routes.h"
#include "server/signing_keys_route.h"

namespace dq {
namespace {

ListingQuery query_of(const HttpExchange& request) {
  std::string query(request.query());
  return {query_value(query, "search"), query_value(query, "state"), query_value(query, "offset"),
          query_value(query, "limit")};
}

}  // namespace

void HttpApi::route(const Exchange& request, const std::vector<std::string>& path) {
  const std::string& method = request->method();
  // HEAD is answered like GET, without the body (HttpExchange drops it).
  auto is = [&](const char* wanted) {
    return method == wanted || (method == "HEAD" && std::strcmp(wanted, "GET") == 0);
  };
  auto wrong_method = [&](const char* allowed) {
    request->add_header("Allow", allowed);
    finish(request, "other", 405,
           Json{{"error", std::string("method not allowed; use ") + allowed}});
  };
  if (path.size() == 1 && path[0] == "healthz") {
    if (!is("GET")) {
      return wrong_method("GET");
    }
    return healthz(request);
  }
  if (path.size() == 1 && path[0] == "metrics") {
    if (!is("GET")) {
      return wrong_method("GET");
    }
    return metrics(request);
  }
  if (path.size() == 2 && path[0] == "v1" && path[1] == "signing-keys") {  // no token: public keys
    if (!is("GET")) {
      return wrong_method("GET");
    }
    topics_.refresh_if_older(1000);  // a key made a moment ago is listed
    std::string topic = query_value(std::string(request->query()), "topic");
    return finish(request, "signing_keys", 200, signing_keys_answer(topics_, topic, now_ms()));
  }
  TokenScope scope{/*all_topics=*/true, {}};
  if (refused_by_auth(request, path, &scope)) {
    return;
  }
  if (path.size() == 2 && path[0] == "v1" && path[1] == "topics") {
    if (!is("GET")) {
      return wrong_method("GET");
    }
    return topics_answer(
        shards_, topics_, query_of(*request),
        [scope](const std::string& name) { return scope.allows(name); },
        listing(request, "topics"));
  }
  if (path.size() == 3 && path[0] == "v1" && path[1] == "topics") {
    if (!is("GET")) {
      return wrong_method("GET");
    }
    ListingAnswer answer = topic_answer(topics_, path[2]);
    return finish(request, "topic", answer.status, answer.body);
  }
  if (path.size() >= 4 && path[0] == "v1" && path[1] == "topics") {
    const std::string& topic = path[2];
    if (path[3] == "jobs" && path.size() == 4) {
      if (is("POST")) {
        return add_job(request, topic);
      }
      if (!is("GET")) {
        return wrong_method("GET, POST");
      }
      return topic_jobs_answer(shards_, topics_, topic, query_of(*request),
                               listing(request, "list"));
    }
    if (path[3] == "stats" && path.size() == 4) {
      if (!is("GET")) {
        return wrong_method("GET");
      }
      return topic_stats_answer(shards_, topics_, topic, listing(request, "stats"));
    }
    if (path[3] == "jobs" && path.size() == 5 && path[4] == "batch") {
      if (!is("POST")) {
        return wrong_method("POST");
      }
      return add_batch(request, topic);
    }
    if (path[3] == "jobs" && path.size() == 5) {
      if (is("GET")) {
        return get_job(request, topic, path[4]);
      }
      if (is("DELETE")) {
        return delete_job(request, topic, path[4]);
      }
      return wrong_method("GET, DELETE");
    }
    if (path[3] == "dead") {
      return dead_letters(request, topic, path);
    }
  }
  finish(request, "other", 404,
         Json{{"error", std::string("no such route: ") + method + " " + request->target()}});
}

}  // namespace dq
