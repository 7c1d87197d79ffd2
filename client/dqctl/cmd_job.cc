// `dqctl add|get|del|run|update`: job commands over the HTTP API through libdqclient
// (client/include/dq/client.h), with failover across every -s server.
// Output is for people by default and the server's JSON with --json; exit
// codes are command.h's (0 ok, 1 failed, 2 usage, 3 unreachable).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/dqctl/api_client.h"
#include "client/dqctl/command.h"
#include "common/core/json.h"
#include "common/core/time_text.h"
#include "dq/client.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace job_command {

namespace dc = dq::client;

constexpr const char* kAddUsage =
    "add TOPIC ID BODY [--delay S | --at TIME [--tz ZONE]] [--ttl S | --expire-at TIME]\n"
    "        [--timeout-ms N]\n"
    "    BODY is JSON text, e.g. '{\"a\":1}' or '\"text\"'; TIME is unix seconds or\n"
    "    'YYYY-MM-DD HH:MM:SS' (server time, or ZONE's: an IANA name such as\n"
    "    Europe/Paris); neither: the topic's default delay. --ttl: never delivered\n"
    "    later than S seconds after it is due; --expire-at: never after TIME\n"
    "    [--after TOPIC/ID]...   (repeatable: it waits until each was delivered)\n"
    "add [TOPIC] --batch FILE [--timeout-ms N]\n"
    "    FILE ('-': stdin) has one JSON job per line: "
    "{\"id\",\"body\",\"delay\"|\"at\"[,\"topic\"]}";
constexpr const char* kGetUsage = "get TOPIC ID [--timeout-ms N]";
constexpr const char* kDelUsage = "del TOPIC ID [--timeout-ms N]";
constexpr const char* kRunUsage =
    "run TOPIC ID [--timeout-ms N]   (a delayed or retrying job is due now, attempts kept)";
constexpr const char* kUpdateUsage =
    "update TOPIC ID [--body BODY] [--delay S | --at TIME [--tz ZONE]]\n"
    "        [--ttl S | --expire-at TIME] [--timeout-ms N]\n"
    "    changes a pending job in place (what is not given is kept); no such job:\n"
    "    it is added (--body needed then, the topic's default delay without a time)";
constexpr size_t kBatchChunk =
    500;  // jobs per request (the server's max_batch_jobs is 1000 by default)

// Options after the command name; positional arguments in order.
struct JobArgs {
  std::vector<std::string> positional;
  std::optional<std::string> delay;
  std::optional<std::string> at;
  std::optional<std::string> batch;
  std::optional<std::string> body;  // update's --body
  std::optional<std::string> tz;
  std::optional<std::string> ttl;
  std::optional<std::string> expire_at;
  std::vector<std::string> after;  // add's --after TOPIC/ID, repeatable
  int timeout_ms = 5000;
  bool json = false;
};

// Parses args; on a usage error prints it and returns false with *exit_code set.
bool parse_job_args(const char* command, const std::vector<std::string>& args, JobArgs* out,
                    int* exit_code) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&](std::optional<std::string>* slot) {
      if (i + 1 >= args.size()) {
        return false;
      }
      *slot = args[++i];
      return true;
    };
    bool ok = true;
    bool timed = command == std::string("add") || command == std::string("update");
    if (arg == "--delay" && timed) {
      ok = value(&out->delay);
    } else if (arg == "--at" && timed) {
      ok = value(&out->at);
    } else if (arg == "--tz" && timed) {
      ok = value(&out->tz);
    } else if (arg == "--ttl" && timed) {
      ok = value(&out->ttl);
    } else if (arg == "--expire-at" && timed) {
      ok = value(&out->expire_at);
    } else if (arg == "--after" && command == std::string("add")) {
      std::optional<std::string> job;
      ok = value(&job) && job->find('/') != std::string::npos && job->front() != '/';
      if (ok) {
        out->after.push_back(*job);
      }
    } else if (arg == "--body" && command == std::string("update")) {
      ok = value(&out->body);
    } else if (arg == "--batch" && command == std::string("add")) {
      ok = value(&out->batch);
    } else if (arg == "--json") {
      out->json = true;
    } else if (arg == "--timeout-ms") {
      std::optional<std::string> text;
      int64_t parsed = 0;
      ok = value(&text) && parse_int_arg(*text, 1, int64_t{3600} * 1000, &parsed);
      out->timeout_ms = static_cast<int>(parsed);
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      *exit_code = usage_error(command, "unknown option " + arg);
      return false;
    } else {
      out->positional.push_back(arg);
      continue;
    }
    if (!ok) {
      *exit_code = usage_error(command, arg + " needs a valid value");
      return false;
    }
  }
  return true;
}

dc::Client make_client(const CtlOptions& options, const JobArgs& args) {
  return make_api_client(options, args.timeout_ms);
}

int report(const dc::Error& error, bool json) { return report_client_error(error, json); }

bool is_json(const std::string& text) { return !Json::parse(text, nullptr, false).is_discarded(); }

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// --delay/--at -> When; false (and a usage error) when malformed.
bool when_from_args(const JobArgs& args, dc::When* when, int* exit_code) {
  if (args.delay && args.at) {
    *exit_code = usage_error("add", "give --delay or --at, not both");
    return false;
  }
  if (args.delay) {
    char* end = nullptr;
    double seconds = strtod(args.delay->c_str(), &end);
    if (args.delay->empty() || *end != '\0' || !(seconds >= 0)) {
      *exit_code = usage_error("add", "--delay must be a number of seconds >= 0");
      return false;
    }
    *when = dc::When::delay(seconds);
  } else if (args.at) {
    int64_t seconds = 0;
    if (all_digits(*args.at)) {
      if (!parse_int_arg(*args.at, 0, INT64_MAX / 1000, &seconds)) {
        *exit_code = usage_error("add", "--at unix seconds out of range");
        return false;
      }
      *when = dc::When::at(seconds);
    } else {
      *when = dc::When::at(*args.at);
    }
  }
  if (args.tz) {
    *when = when->in_zone(*args.tz);  // the server refuses a zone without an at
  }
  if (args.ttl) {
    char* end = nullptr;
    double seconds = strtod(args.ttl->c_str(), &end);
    if (args.ttl->empty() || *end != '\0' || !(seconds > 0)) {
      *exit_code = usage_error("add", "--ttl must be a number of seconds > 0");
      return false;
    }
    *when = when->with_ttl(seconds);
  }
  if (args.expire_at) {
    *when = when->with_expire_at(*args.expire_at);
  }
  if (!args.after.empty()) {
    std::vector<dc::After> after;
    for (const std::string& job : args.after) {
      size_t slash = job.find('/');  // topics have no '/': the id is the rest
      after.push_back({job.substr(0, slash), job.substr(slash + 1)});
    }
    *when = when->with_after(std::move(after));
  }
  return true;
}

// One line of a batch file, parsed; `error` set when the line itself is bad.
struct BatchLine {
  size_t number = 0;
  std::string topic;
  dc::BatchJob job;
  std::optional<dc::Error> error;
  std::optional<int64_t> due_at_ms;
  int status = 0;
};

BatchLine parse_batch_line(size_t number, const std::string& text,
                           const std::string& default_topic) {
  BatchLine line;
  line.number = number;
  line.topic = default_topic;
  auto bad = [&line](const std::string& why) {
    line.error = dc::Error{dc::ErrorCode::InvalidArgument, 0, why, ""};
    line.status = 400;
    return line;
  };
  Json job = Json::parse(text, nullptr, false);
  if (!job.is_object()) {
    return bad("line is not a JSON object");
  }
  if (job.contains("id") && job["id"].is_string()) {
    line.job.id = job["id"].get<std::string>();
  }
  if (job.contains("topic")) {
    if (!job["topic"].is_string()) {
      return bad("topic must be a string");
    }
    line.topic = job["topic"].get<std::string>();
  }
  if (line.topic.empty()) {
    return bad("no topic: give TOPIC on the command line or \"topic\" in the line");
  }
  if (line.job.id.empty()) {
    return bad("id is required and must be a string");
  }
  if (!job.contains("body")) {
    return bad("body is required (any JSON value)");
  }
  line.job.body_json = job["body"].dump();
  if (job.contains("delay") && job.contains("at")) {
    return bad("give delay or at, not both");
  }
  if (job.contains("delay")) {
    if (!job["delay"].is_number()) {
      return bad("delay must be a number of seconds");
    }
    line.job.when = dc::When::delay(job["delay"].get<double>());
  } else if (job.contains("at")) {
    if (job["at"].is_number()) {
      line.job.when = dc::When::at(static_cast<int64_t>(job["at"].get<double>()));
    } else if (job["at"].is_string()) {
      line.job.when = dc::When::at(job["at"].get<std::string>());
    } else {
      return bad("at must be unix seconds or \"YYYY-MM-DD HH:MM:SS\"");
    }
  }
  return line;
}

void print_batch_line(const BatchLine& line, bool json) {
  if (json) {
    Json out{
        {"line", line.number}, {"topic", line.topic}, {"id", line.job.id}, {"status", line.status}};
    if (line.due_at_ms) {
      out["due_at_ms"] = *line.due_at_ms;
    }
    if (line.error) {
      out["error"] = line.error->message;
      out["code"] = dc::error_code_name(line.error->code);
    }
    printf("%s\n", out.dump().c_str());
  } else if (line.error) {
    printf("line %zu %s/%s: failed: %s (%d): %s\n", line.number, line.topic.c_str(),
           line.job.id.c_str(), dc::error_code_name(line.error->code), line.status,
           line.error->message.c_str());
  } else {
    printf("line %zu %s/%s: added, due %s (due_at_ms=%lld)\n", line.number, line.topic.c_str(),
           line.job.id.c_str(), format_local_datetime(*line.due_at_ms).c_str(),
           static_cast<long long>(*line.due_at_ms));
  }
}

// Sends the lines in requests of kBatchChunk jobs per topic, fills each line's
// outcome, prints them in file order. Exit 0, 1 if any line failed, 3 if a
// request reached no server.
int run_batch(const CtlOptions& options, const JobArgs& args) {
  std::string default_topic = args.positional.empty() ? "" : args.positional[0];
  if (args.positional.size() > 1) {
    return usage_error("add", "with --batch give at most TOPIC");
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  if (*args.batch != "-") {
    file.open(*args.batch);
    if (!file) {
      fprintf(stderr, "dqctl: cannot read %s\n", args.batch->c_str());
      return kExitUsage;
    }
    in = &file;
  }
  std::vector<BatchLine> lines;
  std::string text;
  for (size_t number = 1; std::getline(*in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    lines.push_back(parse_batch_line(number, text, default_topic));
  }

  dc::Client client = make_client(options, args);
  bool unreachable = false;
  std::map<std::string, std::vector<size_t>> by_topic;  // line indexes still to send
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].error) {
      by_topic[lines[i].topic].push_back(i);
    }
  }
  for (const auto& [topic, indexes] : by_topic) {
    for (size_t start = 0; start < indexes.size(); start += kBatchChunk) {
      std::vector<size_t> chunk(indexes.begin() + start,
                                indexes.begin() + std::min(indexes.size(), start + kBatchChunk));
      std::vector<dc::BatchJob> jobs;
      jobs.reserve(chunk.size());
      for (size_t index : chunk) {
        jobs.push_back(lines[index].job);
      }
      auto results = client.add_batch(topic, jobs);
      for (size_t k = 0; k < chunk.size(); ++k) {
        BatchLine& line = lines[chunk[k]];
        if (!results) {
          line.error = results.error();
          line.status = results.error().http_status;
          continue;
        }
        const dc::BatchItemResult& result = (*results)[k];
        line.status = result.status;
        line.due_at_ms = result.due_at_ms;
        line.error = result.error;
      }
      if (!results && client_exit_code(results.error()) == kExitUnavailable) {
        unreachable = true;
      }
    }
  }
  bool any_failed = false;
  for (const BatchLine& line : lines) {
    print_batch_line(line, args.json);
    any_failed = any_failed || line.error.has_value();
  }
  if (!args.json) {
    size_t failed = 0;
    for (const BatchLine& line : lines) {
      failed += line.error ? 1 : 0;
    }
    fprintf(stderr, "dqctl: %zu jobs added, %zu failed\n", lines.size() - failed, failed);
  }
  if (unreachable) {
    return kExitUnavailable;
  }
  return any_failed ? kExitFailed : kExitOk;
}

int run_add(const CtlOptions& options, const std::vector<std::string>& raw) {
  JobArgs args;
  int exit_code = kExitOk;
  if (!parse_job_args("add", raw, &args, &exit_code)) {
    return exit_code;
  }
  args.json = args.json || options.json;
  if (args.batch) {
    if (args.delay || args.at) {
      return usage_error("add", "--delay/--at go inside the batch lines");
    }
    return run_batch(options, args);
  }
  if (args.positional.size() != 3) {
    return usage_error("add", "expected TOPIC ID BODY");
  }
  const std::string& topic = args.positional[0];
  const std::string& id = args.positional[1];
  const std::string& body = args.positional[2];
  if (!is_json(body)) {
    return usage_error("add", "BODY must be JSON, e.g. '\"text\"' or '{\"a\":1}'");
  }
  dc::When when;
  if (!when_from_args(args, &when, &exit_code)) {
    return exit_code;
  }
  dc::Client client = make_client(options, args);
  auto added = client.add(topic, id, body, when);
  if (!added) {
    return report(added.error(), args.json);
  }
  if (args.json) {
    printf("%s\n", added->raw_json.c_str());
  } else if (!added->ended.empty()) {
    // A retry of an add whose job already ran: nothing was added again.
    printf("already %s %s/%s (same body, ended %s), not added again\n", added->ended.c_str(),
           added->topic.c_str(), added->id.c_str(),
           format_local_datetime(added->ended_at_ms).c_str());
  } else {
    printf("%s %s/%s, due %s (due_at_ms=%lld)\n",
           added->existing ? "already pending (same body)" : "added", added->topic.c_str(),
           added->id.c_str(), format_local_datetime(added->due_at_ms).c_str(),
           static_cast<long long>(added->due_at_ms));
  }
  return kExitOk;
}

int run_get(const CtlOptions& options, const std::vector<std::string>& raw) {
  JobArgs args;
  int exit_code = kExitOk;
  if (!parse_job_args("get", raw, &args, &exit_code)) {
    return exit_code;
  }
  args.json = args.json || options.json;
  if (args.positional.size() != 2) {
    return usage_error("get", "expected TOPIC ID");
  }
  dc::Client client = make_client(options, args);
  auto job = client.get(args.positional[0], args.positional[1]);
  if (!job) {
    return report(job.error(), args.json);
  }
  if (args.json) {
    printf("%s\n", job->raw_json.c_str());
    return kExitOk;
  }
  printf(
      "topic:    %s\nid:       %s\nstate:    %s\nattempts: %d\ndue:      %s (due_at_ms=%lld)\n"
      "created:  %s (created_at_ms=%lld)\nbody:     %s\n",
      job->topic.c_str(), job->id.c_str(), dc::job_state_name(job->state), job->attempts,
      format_local_datetime(job->due_at_ms).c_str(), static_cast<long long>(job->due_at_ms),
      format_local_datetime(job->created_at_ms).c_str(), static_cast<long long>(job->created_at_ms),
      job->body_json.c_str());
  if (job->last_error) {
    printf("last error: %s\n", job->last_error->c_str());
  }
  // Why a ready job waits (common/registry/job_waiting.h), when the server says.
  Json doc = Json::parse(job->raw_json, nullptr, false);
  if (doc.is_object() && doc.contains("waiting") && doc["waiting"].is_object()) {
    const Json& waiting = doc["waiting"];
    std::string since = waiting.value("since_ms", Json()).is_number_integer()
                            ? " since " + format_local_datetime(waiting["since_ms"].get<int64_t>())
                            : std::string();
    printf("waiting:  %s%s: %s\n", waiting.value("reason", std::string("?")).c_str(), since.c_str(),
           waiting.value("detail", std::string()).c_str());
  }
  return kExitOk;
}

int run_del(const CtlOptions& options, const std::vector<std::string>& raw) {
  JobArgs args;
  int exit_code = kExitOk;
  if (!parse_job_args("del", raw, &args, &exit_code)) {
    return exit_code;
  }
  args.json = args.json || options.json;
  if (args.positional.size() != 2) {
    return usage_error("del", "expected TOPIC ID");
  }
  dc::Client client = make_client(options, args);
  auto deleted = client.del(args.positional[0], args.positional[1]);
  if (!deleted) {
    return report(deleted.error(), args.json);
  }
  if (args.json) {
    Json out{{"deleted", true}, {"topic", args.positional[0]}, {"id", args.positional[1]}};
    if (deleted->delivery_in_flight) {
      out["delivery_in_flight"] = true;
    }
    printf("%s\n", out.dump().c_str());
  } else {
    printf("deleted %s/%s%s\n", args.positional[0].c_str(), args.positional[1].c_str(),
           deleted->delivery_in_flight ? "; a delivery already under way still completes" : "");
  }
  return kExitOk;
}

// dqctl run: POST .../jobs/{id}/run.
int run_run(const CtlOptions& options, const std::vector<std::string>& raw) {
  JobArgs args;
  int exit_code = kExitOk;
  if (!parse_job_args("run", raw, &args, &exit_code)) {
    return exit_code;
  }
  args.json = args.json || options.json;
  if (args.positional.size() != 2) {
    return usage_error("run", "expected TOPIC ID");
  }
  dc::Client client = make_client(options, args);
  auto ran = client.run(args.positional[0], args.positional[1]);
  if (!ran) {
    return report(ran.error(), args.json);
  }
  if (args.json) {
    Json out{{"topic", args.positional[0]},
             {"id", args.positional[1]},
             {"state", dc::job_state_name(ran->state)},
             {"due_at_ms", ran->due_at_ms},
             {"moved", ran->moved}};
    printf("%s\n", out.dump().c_str());
  } else {
    printf("%s %s/%s (%s), due %s\n", ran->moved ? "running now" : "already due",
           args.positional[0].c_str(), args.positional[1].c_str(), dc::job_state_name(ran->state),
           format_local_datetime(ran->due_at_ms).c_str());
  }
  return kExitOk;
}

// dqctl update: PUT .../jobs/{id}.
int run_update(const CtlOptions& options, const std::vector<std::string>& raw) {
  JobArgs args;
  int exit_code = kExitOk;
  if (!parse_job_args("update", raw, &args, &exit_code)) {
    return exit_code;
  }
  args.json = args.json || options.json;
  if (args.positional.size() != 2) {
    return usage_error("update", "expected TOPIC ID");
  }
  if (!args.body && !args.delay && !args.at && !args.ttl && !args.expire_at) {
    return usage_error("update",
                       "nothing to change: give --body, --delay, --at, --ttl or --expire-at");
  }
  if (args.body && !is_json(*args.body)) {
    return usage_error("update", "--body must be JSON text, e.g. '{\"a\":1}' or '\"text\"'");
  }
  dc::When when;
  if (!when_from_args(args, &when, &exit_code)) {
    return exit_code;
  }
  dc::Client client = make_client(options, args);
  auto updated = client.update(args.positional[0], args.positional[1], args.body, when);
  if (!updated) {
    return report(updated.error(), args.json);
  }
  if (args.json) {
    printf("%s\n", updated->raw_json.c_str());
  } else {
    printf("%s %s/%s (%s), due %s\n", updated->created ? "added" : "updated",
           args.positional[0].c_str(), args.positional[1].c_str(),
           dc::job_state_name(updated->state), format_local_datetime(updated->due_at_ms).c_str());
  }
  return kExitOk;
}

const CommandRegistration kAdd("add", kAddUsage, &run_add);
const CommandRegistration kGet("get", kGetUsage, &run_get);
const CommandRegistration kDel("del", kDelUsage, &run_del);
const CommandRegistration kRun("run", kRunUsage, &run_run);
const CommandRegistration kUpdate("update", kUpdateUsage, &run_update);

}  // namespace job_command
}  // namespace dq::ctl
