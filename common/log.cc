#include "common/log.h"

#include <spdlog/sinks/daily_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <filesystem>
#include <memory>
#include <mutex>

namespace dq {
namespace {

std::mutex g_mutex;
std::shared_ptr<spdlog::logger> g_request;
std::shared_ptr<spdlog::logger> g_notify;
std::shared_ptr<spdlog::logger> g_err;
// Loggers replaced by a reopen stay alive: another thread may still hold a
// reference from request_log()/notify_log()/err_log(). A SIGHUP leaks three
// small objects, which is cheaper than a lock on every log line.
std::vector<std::shared_ptr<spdlog::logger>> g_retired;

std::shared_ptr<spdlog::logger> make_logger(const std::string& kind, const std::string& dir,
                                            bool echo_to_stderr) {
  std::vector<spdlog::sink_ptr> sinks;
  if (!dir.empty()) {
    sinks.push_back(std::make_shared<spdlog::sinks::daily_file_format_sink_mt>(
        dir + "/" + kind + "_%Y%m%d.log", 0, 0));
  }
  if (echo_to_stderr || dir.empty())
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  return std::make_shared<spdlog::logger>(kind, sinks.begin(), sinks.end());
}

std::shared_ptr<spdlog::logger> fallback(std::shared_ptr<spdlog::logger>& logger,
                                         const char* kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!logger) logger = make_logger(kind, "", true);
  return logger;
}

}  // namespace

void init_logging(const std::string& dir, const std::string& level, const std::string& title) {
  std::string usable_dir = dir;
  if (!dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) usable_dir.clear();
  }
  auto request = make_logger("request", usable_dir, false);
  auto notify = make_logger("notify", usable_dir, false);
  auto err = make_logger("err", usable_dir, true);
  std::string pattern = "%Y-%m-%d %H:%M:%S.%e [" + title + " %P] %l %v";
  spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  for (auto* logger : {&request, &notify, &err}) {
    (*logger)->set_pattern(pattern);
    (*logger)->set_level(parsed);
    (*logger)->flush_on(spdlog::level::trace);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto* old : {&g_request, &g_notify, &g_err}) {
    if (*old) g_retired.push_back(*old);
  }
  g_request = request;
  g_notify = notify;
  g_err = err;
}

spdlog::logger& request_log() { return *fallback(g_request, "request"); }
spdlog::logger& notify_log() { return *fallback(g_notify, "notify"); }
spdlog::logger& err_log() { return *fallback(g_err, "err"); }

}  // namespace dq
