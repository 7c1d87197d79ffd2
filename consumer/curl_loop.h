// CurlLoop: libcurl's multi interface driven by the consumer's libevent
// loop through its socket and timer callbacks, as curl's own example
// hiperfifo.c does: curl says which sockets it waits on and when it next
// needs to run (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION); the loop
// watches them beside its Redis connections and hands curl each socket that
// is ready (curl_multi_socket_action). No thread, no poll of every transfer
// per turn: a turn touches only the transfers whose sockets are ready.
//
// The consumer's own clock judges timeouts (consumer/transfer_clock.h), so a
// transfer here has none of libcurl's: read_every_socket() lets curl read
// what waits on every socket it holds before any transfer is judged late.
#pragma once

#include <curl/curl.h>
#include <event2/event.h>

#include <functional>
#include <memory>
#include <unordered_map>

#include "common/core/event_handles.h"
#include "common/http/curl_handle.h"

namespace dq {

class CurlLoop {
 public:
  // Called for each transfer that ended, with curl's result; the transfer
  // is still in the multi handle (the callee removes it).
  using Finished = std::function<void(CURL* easy, CURLcode code)>;

  CurlLoop(event_base* base, Finished finished);
  ~CurlLoop();
  CurlLoop(const CurlLoop&) = delete;
  CurlLoop& operator=(const CurlLoop&) = delete;

  CURLM* multi() const { return multi_.get(); }
  // Starts a transfer (its progress is driven by the loop from now on).
  CURLMcode add(CURL* easy) { return curl_multi_add_handle(multi_.get(), easy); }
  // Takes a transfer out, ended or not (an open one is aborted).
  void remove(CURL* easy) { curl_multi_remove_handle(multi_.get(), easy); }
  // Lets curl read and write whatever is ready on every socket it holds
  // (it checks each itself), then reports the transfers that ended.
  void read_every_socket();
  size_t sockets() const { return sockets_.size(); }

 private:
  struct Socket {
    CurlLoop* owner = nullptr;
    curl_socket_t fd = CURL_SOCKET_BAD;
    short events = 0;  // what `event` waits for
    UniqueEvent event;
  };
  static int on_socket(CURL* easy, curl_socket_t fd, int what, void* self, void* socket);
  static int on_timer(CURLM* multi, long timeout_ms, void* self);
  static void on_ready(evutil_socket_t fd, short events, void* socket);
  static void on_timeout(evutil_socket_t fd, short events, void* self);
  void act(curl_socket_t fd, int bits);
  void report_finished();

  event_base* base_;
  CurlMulti multi_;
  UniqueEvent timer_;
  std::unordered_map<curl_socket_t, std::unique_ptr<Socket>> sockets_;
  Finished finished_;
};

}  // namespace dq
