// dqd: the dq master. Reads the config, takes the pid file, opens the
// listening sockets and supervises the children (see supervisor.h).
//   dqd -c CONF [--daemon] [--test-config] | dqd --check -c CONF | dqd --version
//   | dqd --help-config
#include <cstdio>
#include <cstring>
#include <string>

#include "common/core/config.h"
#include "common/core/config_keys.h"
#include "common/core/log.h"
#include "master/config_check.h"
#include "master/daemon.h"
#include "master/open_files.h"
#include "master/pid_file.h"
#include "master/previous_master.h"
#include "master/process_title.h"
#include "master/signal_pipe.h"
#include "master/supervisor.h"

#ifndef DQ_VERSION
#define DQ_VERSION "unknown"
#endif

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: dqd -c CONF [--daemon] [--test-config]\n"
               "       dqd --check -c CONF\n"
               "       dqd --version | --help | --help-config\n"
               "  -c, --config CONF  the ini file (see conf/dq.ini)\n"
               "  -d, --daemon       detach from the terminal\n"
               "  -t, --test-config  check the config file's syntax and values, and exit\n"
               "      --check        also reach the SQLite file and every Redis shard,\n"
               "                     print a report, exit 1 on any problem\n"
               "  -v, --version      print the version\n"
               "  -h, --help         this help\n"
               "      --help-config  every config key with its type, default, range and help\n"
               "signals: TERM/INT stop, USR2 reload, HUP reopen logs\n");
}

}  // namespace

int main(int argc, char** argv) {
  dq::init_process_title(argc, argv);
  std::string config_path;
  bool daemon = false;
  bool test_config = false;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "-c" || arg == "--config") && i + 1 < argc) {
      config_path = argv[++i];
    } else if (arg.rfind("--config=", 0) == 0) {
      config_path = arg.substr(9);
    } else if (arg == "-d" || arg == "--daemon") {
      daemon = true;
    } else if (arg == "-t" || arg == "--test-config") {
      test_config = true;
    } else if (arg == "--check") {
      check = true;
    } else if (arg == "-v" || arg == "--version") {
      std::printf("dqd %s\n", DQ_VERSION);
      return 0;
    } else if (arg == "--help-config") {
      std::fputs(dq::config_help().c_str(), stdout);
      return 0;
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "dqd: unknown argument '%s'\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (config_path.empty()) {
    usage(stderr);
    return 2;
  }

  if (check) {
    return dq::run_config_check(config_path, stdout);
  }

  auto config = dq::load_config(config_path);
  if (!config.is_ok()) {
    std::fprintf(stderr, "dqd: bad config: %s\n", config.status().message().c_str());
    return 1;
  }
  if (test_config) {
    std::printf("dqd: config %s is valid\n", config->path.c_str());
    return 0;
  }

  auto pid_file = dq::PidFile::acquire(config->pid_file);
  if (!pid_file.is_ok()) {
    std::fprintf(stderr, "dqd: %s\n", pid_file.status().message().c_str());
    return 1;
  }
  dq::Status alone = dq::check_previous_master_stopped(config->pid_file);
  if (!alone.is_ok()) {
    (*pid_file)->give_up();
    std::fprintf(stderr, "dqd: %s\n", alone.message().c_str());
    return 1;
  }
  if (daemon) {
    dq::Status detached = dq::daemonize();
    if (!detached.is_ok()) {
      std::fprintf(stderr, "dqd: cannot daemonize: %s\n", detached.message().c_str());
      return 1;
    }
  }
  dq::Status written = (*pid_file)->write_pid();
  if (!written.is_ok()) {
    std::fprintf(stderr, "dqd: %s\n", written.message().c_str());
    return 1;
  }
  dq::set_log_format(config->log_format == "json" ? dq::LogFormat::kJson : dq::LogFormat::kText);
  dq::init_logging(config->log_dir, config->log_level, dq::kMasterTitle);
  dq::raise_open_files_limit();  // before any child is forked: they inherit it

  dq::SignalPipe signals;
  dq::Status installed = signals.install({SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR2});
  if (!installed.is_ok()) {
    dq::err_log().critical("{}", installed.message());
    return 1;
  }
  dq::Supervisor supervisor(*config, pid_file->get(), &signals);
  return supervisor.run();
}
