// TestSmtp: runs tests/support/smtp_sink.py with fork+exec (no shell) and
// reads the .eml files it writes.
#include "tests/support/smtp_server.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/redis_server.h"

namespace dq::test {
namespace {

bool accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return false;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

std::string header(const std::string& raw, const std::string& name) {
  std::istringstream lines(raw);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty()) {
      break;  // end of headers
    }
    if (line.size() > name.size() && line.compare(0, name.size() + 1, name + ":") == 0) {
      std::string value = line.substr(name.size() + 1);
      value.erase(0, value.find_first_not_of(' '));
      return value;
    }
  }
  return "";
}

}  // namespace

TestSmtp::TestSmtp() {
  dir_ = make_temp_dir("dq-smtp");
  port_ = free_port();
  launch();
}

TestSmtp::~TestSmtp() {
  kill_child(&pid_);
  remove_dir(dir_);
}

void TestSmtp::launch() {
  std::string script = std::string(DQ_SOURCE_DIR) + "/tests/support/smtp_sink.py";
  std::string port = std::to_string(port_);
  std::string log = dir_ + "/sink.log";
  // Debian's python3 has aiosmtpd; a python3 earlier in PATH may not.
  pid_ = spawn_logged({"/usr/bin/python3", "python3"}, {"python3", script, port, dir_}, log);
  for (int waited = 0; waited < 10000; waited += 50) {
    if (accepts(port_)) {
      return;
    }
    if (child_exited(&pid_)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FAIL("the SMTP sink did not start (apt-get install python3-aiosmtpd); log:\n" << text);
}

void TestSmtp::stop() {
  if (pid_ <= 0) {
    return;
  }
  kill(pid_, SIGTERM);
  for (int waited = 0; waited < 5000 && !child_exited(&pid_); waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_child(&pid_);
  REQUIRE_FALSE(accepts(port_));
}

void TestSmtp::start() {
  REQUIRE(pid_ < 0);
  launch();
}

std::vector<ReceivedMail> TestSmtp::mails() const {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".eml") == 0) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<ReceivedMail> mails;
  for (const auto& name : names) {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    ReceivedMail mail;
    mail.raw.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    mail.envelope_from = header(mail.raw, "X-Envelope-From");
    std::string to = header(mail.raw, "X-Envelope-To");
    std::istringstream list(to);
    std::string address;
    while (std::getline(list, address, ',')) {
      mail.envelope_to.push_back(address);
    }
    mail.subject = header(mail.raw, "Subject");
    mails.push_back(std::move(mail));
  }
  return mails;
}

bool TestSmtp::wait_for(size_t count, int timeout_ms) const {
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    if (mails().size() >= count) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return mails().size() >= count;
}

}  // namespace dq::test
