// `dqctl reserve|ack|nack|touch|work`: a pull topic's worker side over the
// HTTP API through libdqclient (docs/delivery.md, "Pull workers"), with -s
// or --url like the other job commands. `work` runs a command per job:
// reserve one, run it with the body on stdin, touch the lease while it
// runs, ack on exit 0, nack otherwise; SIGINT/SIGTERM finish the current job
// and stop.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "client/dqctl/api_client.h"
#include "client/dqctl/command.h"
#include "common/core/json.h"
#include "dq/client.h"

namespace dq::ctl {
// Its own namespace: dqctl's command files share unity batches.
namespace pull_command {

namespace dc = dq::client;

constexpr const char* kReserveUsage =
    "reserve TOPIC [--ttr S] [--wait S] [--count N] [--json]\n"
    "    leases up to N ready jobs of a pull topic for S seconds (default 30),\n"
    "    waiting up to --wait S (0..60) for one; prints each with its token";
constexpr const char* kAckUsage = "ack TOPIC ID TOKEN   (the job is done)";
constexpr const char* kNackUsage =
    "nack TOPIC ID TOKEN [--delay S] [--error TEXT]   (a failed attempt: tried again\n"
    "    after S seconds, default the topic's backoff; dead when attempts are used up)";
constexpr const char* kTouchUsage =
    "touch TOPIC ID TOKEN [--ttr S]   (the lease ends S seconds from now; default\n"
    "    the reserve's ttr)";
constexpr const char* kWorkUsage =
    "work TOPIC [--ttr S] [--wait S] [--max-jobs N] -- COMMAND [ARGS...]\n"
    "    reserves one job at a time and runs COMMAND with its body on stdin and\n"
    "    DQ_TOPIC, DQ_ID, DQ_ATTEMPT, DQ_TOKEN set; touches the lease every ttr/2\n"
    "    while it runs; exit 0 acks, any other nacks (stderr's tail as the error).\n"
    "    SIGINT/SIGTERM: the current job is finished, then it stops; --max-jobs:\n"
    "    stops after N jobs";

constexpr int kCallTimeoutMs = 5000;
constexpr size_t kErrorTail = 2000;  // bytes of a failed command's stderr kept

volatile sig_atomic_t g_stop = 0;

void on_stop(int /*signal*/) { g_stop = 1; }

// Options after the command name: "--name value" pairs and positionals.
struct PullArgs {
  std::vector<std::string> positional;
  std::vector<std::string> command;  // after "--" (work)
  std::optional<int> ttr;
  std::optional<int> wait;
  std::optional<int> count;
  std::optional<int> delay;
  std::optional<int> max_jobs;
  std::string error;
  bool json = false;
};

bool parse_int(const std::string& text, int* out) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::atoi(text.c_str());
  return true;
}

// allowed: the options the command takes ("ttr", "wait", ...).
bool parse_pull_args(const char* command, const std::vector<std::string>& args,
                     const std::vector<std::string>& allowed, PullArgs* out, int* exit_code) {
  auto takes = [&](const std::string& name) {
    return std::find(allowed.begin(), allowed.end(), name) != allowed.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--" && takes("command")) {
      out->command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg == "--json") {
      out->json = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      out->positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::replace(name.begin(), name.end(), '-', '_');
    if (!takes(name) || i + 1 >= args.size()) {
      *exit_code = usage_error(command, "unknown option or missing value: " + arg);
      return false;
    }
    const std::string& value = args[++i];
    if (name == "error") {
      out->error = value;
      continue;
    }
    int number = 0;
    if (!parse_int(value, &number)) {
      *exit_code = usage_error(command, arg + " needs a whole number, got '" + value + "'");
      return false;
    }
    std::optional<int>* slot = name == "ttr"     ? &out->ttr
                               : name == "wait"  ? &out->wait
                               : name == "count" ? &out->count
                               : name == "delay" ? &out->delay
                                                 : &out->max_jobs;
    *slot = number;
  }
  return true;
}

Json job_json(const dc::ReservedJob& job) {
  Json body = Json::parse(job.body_json, nullptr, false);
  return Json{{"topic", job.topic},   {"id", job.id},
              {"body", body},         {"attempt", job.attempt},
              {"due_ms", job.due_ms}, {"created_ms", job.created_ms},
              {"token", job.token},   {"lease_until_ms", job.lease_until_ms}};
}

int run_reserve(const CtlOptions& options, const std::vector<std::string>& raw) {
  PullArgs args;
  int exit_code = kExitOk;
  if (!parse_pull_args("reserve", raw, {"ttr", "wait", "count"}, &args, &exit_code)) {
    return exit_code;
  }
  bool json = args.json || options.json;
  if (args.positional.size() != 1) {
    return usage_error("reserve", "expected TOPIC");
  }
  dc::ReserveOptions reserve;
  reserve.ttr_s = args.ttr.value_or(30);
  reserve.wait_s = args.wait.value_or(0);
  reserve.count = args.count.value_or(1);
  dc::Client client = make_api_client(options, kCallTimeoutMs);
  auto jobs = client.reserve(args.positional[0], reserve);
  if (!jobs) {
    return report_client_error(jobs.error(), json);
  }
  if (json) {
    Json list = Json::array();
    for (const auto& job : *jobs) {
      list.push_back(job_json(job));
    }
    printf("%s\n", Json{{"jobs", list}}.dump().c_str());
    return kExitOk;
  }
  if (jobs->empty()) {
    printf("no job ready\n");
  }
  for (const auto& job : *jobs) {
    printf("%s %s attempt %d lease_until_ms=%lld\n  token: %s\n  body:  %s\n", job.topic.c_str(),
           job.id.c_str(), job.attempt, static_cast<long long>(job.lease_until_ms),
           job.token.c_str(), job.body_json.c_str());
  }
  return kExitOk;
}

// ack, nack and touch: TOPIC ID TOKEN.
int run_settle(const char* command, const CtlOptions& options,
               const std::vector<std::string>& raw) {
  PullArgs args;
  int exit_code = kExitOk;
  std::vector<std::string> allowed;
  if (std::strcmp(command, "nack") == 0) {
    allowed = {"delay", "error"};
  } else if (std::strcmp(command, "touch") == 0) {
    allowed = {"ttr"};
  }
  if (!parse_pull_args(command, raw, allowed, &args, &exit_code)) {
    return exit_code;
  }
  bool json = args.json || options.json;
  if (args.positional.size() != 3) {
    return usage_error(command, "expected TOPIC ID TOKEN");
  }
  dc::ReservedJob job;
  job.topic = args.positional[0];
  job.id = args.positional[1];
  job.token = args.positional[2];
  dc::Client client = make_api_client(options, kCallTimeoutMs);
  Json out{{"topic", job.topic}, {"id", job.id}};
  std::string said;
  if (std::strcmp(command, "ack") == 0) {
    auto acked = client.ack(job);
    if (!acked) {
      return report_client_error(acked.error(), json);
    }
    out["state"] = "done";
    said = "acked";
  } else if (std::strcmp(command, "nack") == 0) {
    auto nacked = client.nack(job, args.delay, args.error);
    if (!nacked) {
      return report_client_error(nacked.error(), json);
    }
    out["state"] = nacked->state;
    said = "nacked: " + nacked->state;
    if (nacked->due_ms > 0) {
      out["due_ms"] = nacked->due_ms;
      said += " (due_ms=" + std::to_string(nacked->due_ms) + ")";
    }
  } else {
    auto touched = client.touch(job, args.ttr);
    if (!touched) {
      return report_client_error(touched.error(), json);
    }
    out["lease_until_ms"] = *touched;
    said = "lease until lease_until_ms=" + std::to_string(*touched);
  }
  if (json) {
    printf("%s\n", out.dump().c_str());
  } else {
    printf("%s/%s %s\n", job.topic.c_str(), job.id.c_str(), said.c_str());
  }
  return kExitOk;
}

int run_ack(const CtlOptions& options, const std::vector<std::string>& raw) {
  return run_settle("ack", options, raw);
}
int run_nack(const CtlOptions& options, const std::vector<std::string>& raw) {
  return run_settle("nack", options, raw);
}
int run_touch(const CtlOptions& options, const std::vector<std::string>& raw) {
  return run_settle("touch", options, raw);
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The job's body in a file unlinked at once: the command's stdin, however
// big the body, without a writer to keep going.
int body_stdin(const std::string& body) {
  char path[] = "/tmp/dqctl-work-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    return -1;
  }
  unlink(path);
  size_t written = 0;
  while (written < body.size()) {
    ssize_t n = write(fd, body.data() + written, body.size() - written);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    written += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

struct Ran {
  bool ok = false;
  std::string error;  // stderr's tail, or why it could not run
};

// Runs the command for one job, touching its lease every ttr/2.
Ran run_command(dc::Client& client, dc::ReservedJob& job, int ttr_s,
                const std::vector<std::string>& command) {
  int input = body_stdin(job.body_json);
  int errors[2];
  if (input < 0 || pipe(errors) != 0) {
    if (input >= 0) {
      close(input);
    }
    return {false, std::string("cannot prepare the command's stdin: ") + std::strerror(errno)};
  }
  pid_t child = fork();
  if (child < 0) {
    close(input);
    close(errors[0]);
    close(errors[1]);
    return {false, std::string("cannot fork: ") + std::strerror(errno)};
  }
  if (child == 0) {
    setpgid(0, 0);  // a terminal's Ctrl-C stops the worker after the job, not the job
    dup2(input, 0);
    dup2(errors[1], 2);
    close(input);
    close(errors[0]);
    close(errors[1]);
    setenv("DQ_TOPIC", job.topic.c_str(), 1);
    setenv("DQ_ID", job.id.c_str(), 1);
    setenv("DQ_ATTEMPT", std::to_string(job.attempt).c_str(), 1);
    setenv("DQ_TOKEN", job.token.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& arg : command) {
      argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(input);
  close(errors[1]);
  std::string tail;
  int64_t touch_every = std::max(500, ttr_s * 500);
  int64_t next_touch = steady_ms() + touch_every;
  bool open = true;
  int status = 0;
  for (;;) {
    if (open) {
      pollfd readable{errors[0], POLLIN, 0};
      int64_t wait = std::max<int64_t>(0, next_touch - steady_ms());
      if (poll(&readable, 1, static_cast<int>(std::min<int64_t>(wait, 200))) > 0) {
        char buffer[4096];
        ssize_t n = read(errors[0], buffer, sizeof buffer);
        if (n > 0) {
          fwrite(buffer, 1, static_cast<size_t>(n), stderr);  // the command's stderr shows too
          tail.append(buffer, static_cast<size_t>(n));
          if (tail.size() > kErrorTail) {
            tail.erase(0, tail.size() - kErrorTail);
          }
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          open = false;
        }
      }
    } else {
      usleep(20000);
    }
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      break;
    }
    if (steady_ms() >= next_touch) {
      next_touch = steady_ms() + touch_every;
      auto touched = client.touch(job, ttr_s);
      if (!touched) {
        fprintf(stderr, "dqctl work: touch of %s/%s failed: %s\n", job.topic.c_str(),
                job.id.c_str(), touched.error().message.c_str());
      }
    }
  }
  if (open) {  // what it wrote just before it ended
    char buffer[4096];
    ssize_t n = 0;
    while ((n = read(errors[0], buffer, sizeof buffer)) > 0) {
      fwrite(buffer, 1, static_cast<size_t>(n), stderr);
      tail.append(buffer, static_cast<size_t>(n));
    }
    if (tail.size() > kErrorTail) {
      tail.erase(0, tail.size() - kErrorTail);
    }
  }
  close(errors[0]);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return {true, ""};
  }
  std::string why = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status));
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) {
    tail.pop_back();
  }
  return {false, tail.empty() ? why : why + ": " + tail};
}

int run_work(const CtlOptions& options, const std::vector<std::string>& raw) {
  PullArgs args;
  int exit_code = kExitOk;
  if (!parse_pull_args("work", raw, {"ttr", "wait", "max_jobs", "command"}, &args, &exit_code)) {
    return exit_code;
  }
  if (args.positional.size() != 1 || args.command.empty()) {
    return usage_error("work", "expected TOPIC -- COMMAND [ARGS...]");
  }
  const std::string& topic = args.positional[0];
  dc::ReserveOptions reserve;
  reserve.ttr_s = args.ttr.value_or(30);
  reserve.wait_s = args.wait.value_or(10);
  reserve.count = 1;
  struct sigaction stop {};
  stop.sa_handler = on_stop;
  sigemptyset(&stop.sa_mask);
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  dc::Client client = make_api_client(options, kCallTimeoutMs);
  int done = 0;
  int failures = 0;
  while (!g_stop && (!args.max_jobs || done < *args.max_jobs)) {
    auto jobs = client.reserve(topic, reserve);
    if (!jobs) {
      const dc::Error& error = jobs.error();
      fprintf(stderr, "dqctl work: reserve failed: %s\n", error.message.c_str());
      if (error.code == dc::ErrorCode::NotFound || error.code == dc::ErrorCode::Conflict ||
          error.code == dc::ErrorCode::InvalidArgument ||
          error.code == dc::ErrorCode::Unauthorized || error.code == dc::ErrorCode::Forbidden) {
        return client_exit_code(error);  // asking again would not help
      }
      sleep(1);
      continue;
    }
    for (auto& job : *jobs) {
      Ran ran = run_command(client, job, reserve.ttr_s, args.command);
      if (ran.ok) {
        auto acked = client.ack(job);
        if (acked) {
          printf("acked %s/%s (attempt %d)\n", job.topic.c_str(), job.id.c_str(), job.attempt);
        } else {
          ++failures;
          fprintf(stderr, "dqctl work: ack of %s/%s failed: %s\n", job.topic.c_str(),
                  job.id.c_str(), acked.error().message.c_str());
        }
      } else {
        auto nacked = client.nack(job, std::nullopt, ran.error);
        if (nacked) {
          printf("nacked %s/%s (attempt %d): %s, %s\n", job.topic.c_str(), job.id.c_str(),
                 job.attempt, nacked->state.c_str(), ran.error.c_str());
        } else {
          ++failures;
          fprintf(stderr, "dqctl work: nack of %s/%s failed: %s\n", job.topic.c_str(),
                  job.id.c_str(), nacked.error().message.c_str());
        }
      }
      fflush(stdout);
      ++done;
    }
  }
  return failures == 0 ? kExitOk : kExitFailed;
}

const CommandRegistration kReserve("reserve", kReserveUsage, &run_reserve);
const CommandRegistration kAck("ack", kAckUsage, &run_ack);
const CommandRegistration kNack("nack", kNackUsage, &run_nack);
const CommandRegistration kTouch("touch", kTouchUsage, &run_touch);
const CommandRegistration kWork("work", kWorkUsage, &run_work);

}  // namespace pull_command
}  // namespace dq::ctl
