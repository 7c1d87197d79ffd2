// ConnectionBudget: how many client connections one API server process may
// hold, so that it never accepts a connection it cannot serve. Descriptors are
// per process, so there is one budget per process, shared by the HTTP and the
// legacy server: RLIMIT_NOFILE minus the descriptors open when serving starts
// (Redis, logs, SQLite, listening sockets) minus a spare for what opens later
// (Redis reconnects, a log reopen, a topic refresh).
//
// At the budget, a new connection takes the place of the connection idle the
// longest (no request in progress, nothing to write), in either server. When
// every connection is busy, the acceptors pause (their listening event is
// removed, so the loop does not spin on a socket it cannot accept from) and
// resume as soon as a connection closes. docs/RELIABILITY.md, "Descriptor
// exhaustion".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dq {

class Acceptor;

// A server's connections as the budget sees them.
class ConnectionPool {
 public:
  virtual ~ConnectionPool() = default;
  // The touch stamp (ConnectionBudget::stamp) of the connection idle the
  // longest; 0 when none is idle.
  virtual uint64_t oldest_idle() = 0;
  // Closes that connection (the one oldest_idle() named).
  virtual void close_oldest_idle() = 0;
};

class ConnectionBudget {
 public:
  // The process's budget; its size is computed at the first call (call it
  // once every other descriptor of the process is open).
  static ConnectionBudget& of_process();

  size_t limit() const { return limit_; }
  size_t open() const { return open_; }
  // A stamp for a connection that just started a request: later is larger.
  uint64_t stamp() { return ++clock_; }

  void add_pool(ConnectionPool* pool);
  void remove_pool(ConnectionPool* pool);
  void add_acceptor(Acceptor* acceptor);
  void remove_acceptor(Acceptor* acceptor);

  // Room for one more connection: while open() is at the limit, closes the
  // connection idle the longest. False when every connection is busy.
  bool make_room();
  // accept() failed for want of descriptors although the budget had room
  // (something else holds them): closes the connection idle the longest.
  bool free_one();
  void opened() { ++open_; }
  // `count` connections closed: paused acceptors resume.
  void closed(size_t count = 1);

  // Counts for the log lines of the acceptors.
  uint64_t evicted() const { return evicted_; }

 private:
  ConnectionBudget();
  ConnectionPool* pool_with_oldest_idle();
  void note_eviction();

  size_t limit_ = 0;
  size_t open_ = 0;
  uint64_t clock_ = 0;
  uint64_t evicted_ = 0;
  uint64_t evicted_logged_ = 0;  // evicted_ when the last line about it was written
  int64_t evicted_logged_ms_ = 0;
  std::vector<ConnectionPool*> pools_;
  std::vector<Acceptor*> acceptors_;
};

}  // namespace dq
