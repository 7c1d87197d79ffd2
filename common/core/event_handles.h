// Owning handles for libevent's C objects, each freed by libevent's own
// function for it, so no path can leak one or free it twice. The one place
// dq defines them.
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "common/core/unique_handle.h"

namespace dq {

using UniqueEventBase = UniqueHandle<event_base, event_base_free>;
using UniqueEvent = UniqueHandle<event, event_free>;
using UniqueEvbuffer = UniqueHandle<evbuffer, evbuffer_free>;
using UniqueBufferevent = UniqueHandle<bufferevent, bufferevent_free>;
using UniqueEvconnlistener = UniqueHandle<evconnlistener, evconnlistener_free>;
using UniqueEvhttp = UniqueHandle<evhttp, evhttp_free>;

}  // namespace dq
