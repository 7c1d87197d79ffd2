#include "common/core/log.h"

#include <pthread.h>
#include <spdlog/details/fmt_helper.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/daily_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <regex>
#include <vector>

#include "common/core/json_span.h"
#include "common/core/shared_metrics.h"

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
LogFormat g_format = LogFormat::kText;
// defer_request_log_flush(): what a request line calls instead of flushing.
std::function<void()> g_schedule_request_flush;
bool g_flushing_requests = false;  // inside flush_request_log()
std::atomic<bool> g_notify_flushed_by_caller{false};

// %Q in a pattern: the message as the inside of a JSON string, escaped by
// append_json_string (its quotes left out).
class JsonEscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    thread_local std::string quoted;
    quoted.clear();
    append_json_string(&quoted, std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(quoted.data() + 1, quoted.data() + quoted.size() - 1);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

// %P: the process id, read once per process instead of one getpid() system
// call per line (glibc no longer caches it; that was a syscall per request).
// A forked child reads its own again: pthread_atfork forgets the cached one.
std::atomic<pid_t> g_pid{0};
[[maybe_unused]] const int g_pid_reset = pthread_atfork(nullptr, nullptr, [] { g_pid.store(0); });

class ProcessId : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    pid_t pid = g_pid.load(std::memory_order_relaxed);
    if (pid == 0) {
      pid = getpid();
      g_pid.store(pid, std::memory_order_relaxed);
    }
    spdlog::details::fmt_helper::append_int(pid, dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<ProcessId>();
  }
};

// The request log's stdio buffer. Its lines are written out in whole lines:
// the buffer is written first when a line (its message plus kLineRoom for
// the pattern) would take the estimate past half of it, so stdio never
// fills it and writes part of a line (dq-server_0 and _1 append to one
// file, and a line split over two writes could interleave with the other's).
// Only lines whose pattern outgrows kLineRoom by half a megabyte could split.
constexpr size_t kRequestBufferBytes = 1 << 20;
constexpr size_t kLineRoom = 512;  // the pattern's own bytes around the message, with room

// Wraps a file sink so that a failed write (the disk is full: fflush gives
// ENOSPC and spdlog throws) drops that one line and nothing else: the other
// sinks of the logger (stderr for err) still get it, the process goes on,
// dq_log_lines_dropped_total{log} counts it, and stderr gets a note at most
// every 10 s per process.
class DropOnErrorSink : public spdlog::sinks::sink {
 public:
  DropOnErrorSink(std::string kind, spdlog::sink_ptr file)
      : kind_(std::move(kind)), file_(std::move(file)), deferrable_(kind_ == "request") {}

  void log(const spdlog::details::log_msg& msg) override {
    size_t line = msg.payload.size() + kLineRoom;
    if (deferrable_ && buffered_ + line > kRequestBufferBytes / 2) {
      write_out();
    }
    try {
      file_->log(msg);
      ++unflushed_;
      buffered_ += line;
    } catch (const std::exception& error) {
      dropped(1, error.what());
    }
  }
  // A failed flush loses the lines written since the last one (one with a
  // per-line flush; those since the last flush with defer_request_log_flush());
  // a line whose own write failed was counted already.
  void flush() override {
    if (deferrable_ && g_schedule_request_flush && !g_flushing_requests) {
      g_schedule_request_flush();
      return;
    }
    write_out();
  }
  void set_pattern(const std::string& pattern) override { file_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    file_->set_formatter(std::move(formatter));
  }

 private:
  void write_out() {
    buffered_ = 0;
    uint64_t lines = unflushed_.exchange(0);
    try {
      file_->flush();
    } catch (const std::exception& error) {
      if (lines > 0) {
        dropped(lines, error.what());
      }
    }
  }
  void dropped(uint64_t lines, const char* what) {
    SharedMetrics::instance().add(SharedMetrics::key({"log_dropped", kind_}), lines);
    uint64_t count = count_ += lines;
    int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
    int64_t last = last_note_s_.load();
    if (now - last < 10 || !last_note_s_.compare_exchange_strong(last, now)) {
      return;
    }
    std::fprintf(stderr, "dq: %s log line dropped (%s); %llu dropped so far by this process\n",
                 kind_.c_str(), what, static_cast<unsigned long long>(count));
  }

  std::string kind_;
  spdlog::sink_ptr file_;
  const bool deferrable_;               // the request log: see defer_request_log_flush()
  std::atomic<uint64_t> unflushed_{0};  // lines written since the last flush
  size_t buffered_ = 0;                 // the request log: bytes (with room) since then
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> last_note_s_{-10};
};

// Titles are ours ("dq-server_0"): nothing in them needs escaping.
std::unique_ptr<spdlog::formatter> line_formatter(const std::string& title,
                                                  const std::string& kind) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<ProcessId>('P');
  if (g_format == LogFormat::kJson) {
    formatter->add_flag<JsonEscapedMessage>('Q').set_pattern(
        "{\"time\":\"%Y-%m-%dT%H:%M:%S.%e%z\",\"log\":\"" + kind + "\",\"process\":\"" + title +
        "\",\"pid\":%P,\"level\":\"%l\",\"msg\":\"%Q\"}");
  } else {
    formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e [" + title + " %P] %l %v");
  }
  return formatter;
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& kind, const std::string& dir,
                                            bool echo_to_stderr) {
  std::vector<spdlog::sink_ptr> sinks;
  if (!dir.empty()) {
    try {
      spdlog::file_event_handlers handlers;
      if (kind == "request") {
        // Every file this sink opens (one per day) writes through this buffer.
        auto buffer = std::make_shared<std::vector<char>>(kRequestBufferBytes);
        handlers.after_open = [buffer](const spdlog::filename_t&, std::FILE* file) {
          std::setvbuf(file, buffer->data(), _IOFBF, buffer->size());
        };
      }
      auto file = std::make_shared<spdlog::sinks::daily_file_format_sink_mt>(
          dir + "/" + kind + "_%Y%m%d.log", 0, 0, false, 0, handlers);
      sinks.push_back(std::make_shared<DropOnErrorSink>(kind, file));
    } catch (const std::exception& error) {  // cannot even create the file: stderr only
      std::fprintf(stderr, "dq: %s log file not opened: %s\n", kind.c_str(), error.what());
    }
  }
  if (echo_to_stderr || sinks.empty()) {
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  }
  return std::make_shared<spdlog::logger>(kind, sinks.begin(), sinks.end());
}

std::shared_ptr<spdlog::logger> fallback(std::shared_ptr<spdlog::logger>& logger,
                                         const char* kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!logger) {
    logger = make_logger(kind, "", true);
  }
  return logger;
}

}  // namespace

void init_logging(const std::string& dir, const std::string& level, const std::string& title) {
  std::string usable_dir = dir;
  if (!dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      usable_dir.clear();
    }
  }
  auto request = make_logger("request", usable_dir, false);
  auto notify = make_logger("notify", usable_dir, false);
  auto err = make_logger("err", usable_dir, true);
  spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  for (auto* logger : {&request, &notify, &err}) {
    (*logger)->set_formatter(line_formatter(title, (*logger)->name()));
    (*logger)->set_level(parsed);
    (*logger)->flush_on(spdlog::level::trace);
  }
  if (g_notify_flushed_by_caller.load()) {
    notify->flush_on(spdlog::level::off);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_request) {  // its buffered lines go to the file it had open (SIGHUP: before a rotation)
    g_flushing_requests = true;
    g_request->flush();
    g_flushing_requests = false;
  }
  for (auto* old : {&g_request, &g_notify, &g_err}) {
    if (*old) {
      g_retired.push_back(*old);
    }
  }
  g_request = request;
  g_notify = notify;
  g_err = err;
}

void set_log_format(LogFormat format) { g_format = format; }

int remove_old_logs(const std::string& dir, int keep_days, const std::string& today) {
  if (keep_days <= 0 || dir.empty()) {
    return 0;
  }
  std::tm day{};
  if (strptime(today.c_str(), "%Y%m%d", &day) == nullptr) {
    return 0;
  }
  day.tm_mday -= keep_days - 1;  // today is one of the days kept
  day.tm_hour = 12;              // away from DST edges
  mktime(&day);
  char oldest_kept[16];
  strftime(oldest_kept, sizeof(oldest_kept), "%Y%m%d", &day);
  static const std::regex kDaily("^(request|notify|err)_([0-9]{8})\\.log(\\..*)?$");
  int removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::smatch match;
    std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, kDaily)) {
      continue;
    }
    if (match[2].str() >= oldest_kept) {
      continue;
    }
    if (std::filesystem::remove(entry.path(), error)) {
      ++removed;
    }
  }
  return removed;
}

void defer_request_log_flush(std::function<void()> schedule) {
  if (!schedule) {
    flush_request_log();
  }
  g_schedule_request_flush = std::move(schedule);
}

void flush_request_log() {
  g_flushing_requests = true;
  request_log().flush();
  g_flushing_requests = false;
}

void flush_notify_log_by_caller() {
  g_notify_flushed_by_caller.store(true);
  notify_log().flush_on(spdlog::level::off);
}

spdlog::logger& request_log() { return *fallback(g_request, "request"); }
spdlog::logger& notify_log() { return *fallback(g_notify, "notify"); }
spdlog::logger& err_log() { return *fallback(g_err, "err"); }

}  // namespace dq
