// Owning handles for libevent's C objects, each freed by its own deleter so
// no path can leak one or free it twice. The one place dq defines them.
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include <memory>

namespace dq {

struct EventBaseDeleter {
  void operator()(event_base* base) const { event_base_free(base); }
};
using UniqueEventBase = std::unique_ptr<event_base, EventBaseDeleter>;

struct EventDeleter {
  void operator()(event* ev) const { event_free(ev); }
};
using UniqueEvent = std::unique_ptr<event, EventDeleter>;

struct EvbufferDeleter {
  void operator()(evbuffer* buffer) const { evbuffer_free(buffer); }
};
using UniqueEvbuffer = std::unique_ptr<evbuffer, EvbufferDeleter>;

struct BuffereventDeleter {
  void operator()(bufferevent* bev) const { bufferevent_free(bev); }
};
using UniqueBufferevent = std::unique_ptr<bufferevent, BuffereventDeleter>;

struct EvconnlistenerDeleter {
  void operator()(evconnlistener* listener) const { evconnlistener_free(listener); }
};
using UniqueEvconnlistener = std::unique_ptr<evconnlistener, EvconnlistenerDeleter>;

struct EvhttpDeleter {
  void operator()(evhttp* http) const { evhttp_free(http); }
};
using UniqueEvhttp = std::unique_ptr<evhttp, EvhttpDeleter>;

}  // namespace dq
