// LegacyServer: the framed protocol of the PHP delay queue dq replaces, on
// [server] legacy_listen. A frame is 4 ASCII decimal digits giving the JSON
// length, then the JSON. Requests:
//   {"cmd":"add","topic","id","body":{...},"fix_time":"Y-m-d H:i:s"}
//   {"cmd":"get","topic","id"}   {"cmd":"del","topic","id"}
// Replies {"code":1,"msg":"succ","data":...} (data: the body for get, [] else)
// or {"code":0,"msg":"<reason>","data":[]}.
// Frames are parsed by server/legacy_frame.h, fields read as the PHP server
// read them by server/legacy_fields.h; each connection answers its requests
// one at a time, in order, each within [server] legacy_reply_timeout_ms
// (code 0 "timeout, outcome unknown" past it; see docs/legacy-protocol.md).
// Limits (docs/security.md): [server] max_connections (at it, the connection
// idle the longest is closed to make room), a frame whole within
// request_timeout_ms, legacy_idle_timeout_ms; with require_token = yes each
// request carries a "token" field (server/api_auth.h). Accepts only within
// the process's descriptor budget (server/connection_budget.h).
#pragma once

#include <event2/event.h>

#include <list>
#include <map>
#include <memory>

#include "common/core/config.h"
#include "common/core/event_handles.h"
#include "common/registry/topic_cache.h"
#include "common/store/async_job_store.h"
#include "server/acceptor.h"
#include "server/activity_order.h"
#include "server/connection_budget.h"

namespace dq {

class ApiAuth;
class LegacyConnection;

class LegacyServer : public ConnectionPool {
 public:
  // listen_fd is inherited from the master and is not closed by this class;
  // after stop_accepting() it is no longer used and the caller may close it.
  LegacyServer(event_base* base, int listen_fd, AsyncJobStore& jobs, TopicCache& topics,
               ApiAuth& auth, const Config& config);
  ~LegacyServer() override;
  LegacyServer(const LegacyServer&) = delete;
  LegacyServer& operator=(const LegacyServer&) = delete;

  // Graceful stop: accept no new connection, answer what was already read,
  // close connections as soon as they have nothing in progress.
  void stop_accepting();
  size_t connections() const;  // still open

  // ConnectionPool: the connections in the order they last started a request.
  uint64_t oldest_idle() override;
  void close_oldest_idle() override;

 private:
  friend class LegacyConnection;
  void on_accept(evutil_socket_t fd);
  void closed(LegacyConnection* connection);
  void touch(LegacyConnection* connection);  // it started a request

  event_base* base_;
  AsyncJobStore& jobs_;
  TopicCache& topics_;
  ApiAuth& auth_;
  const Config& config_;
  std::unique_ptr<Acceptor> acceptor_;
  bool stopping_ = false;
  // Owned here; a request in flight holds a weak_ptr, so a connection that
  // closes (or a server that goes away) before Redis answers is never touched.
  std::map<LegacyConnection*, std::shared_ptr<LegacyConnection>> connections_;
  ActivityOrder<LegacyConnection> order_;
};

}  // namespace dq
