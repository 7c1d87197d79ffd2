// TestSmtp: a real SMTP server for alert tests (tests/support/smtp_sink.py
// on Debian's python3-aiosmtpd), on a free port of 127.0.0.1. Every message
// it accepts is kept as a file; stop() and start() take it down and bring it
// back on the same port, keeping what it received.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dq::test {

struct ReceivedMail {
  std::string envelope_from;
  std::vector<std::string> envelope_to;
  std::string subject;
  std::string raw;  // headers and body as received
};

class TestSmtp {
 public:
  TestSmtp();  // started; FAILs the test when it does not come up in 10 s
  ~TestSmtp();
  TestSmtp(const TestSmtp&) = delete;
  TestSmtp& operator=(const TestSmtp&) = delete;

  int port() const { return port_; }
  void stop();  // SIGTERM and wait; the port refuses connections afterwards
  void start();

  std::vector<ReceivedMail> mails() const;  // in arrival order
  // True once at least `count` mails arrived, false after timeout_ms.
  bool wait_for(size_t count, int timeout_ms) const;

 private:
  void launch();
  int port_ = 0;
  std::string dir_;
  pid_t pid_ = -1;
};

}  // namespace dq::test
