// attach_to_loop (see redis_loop.h). hiredis calls addRead/delRead/
// addWrite/delWrite whenever it wants (they must be idempotent) and cleanup
// when it frees the context, possibly from inside redisAsyncHandleRead or
// redisAsyncHandleWrite: nothing here touches the events after those calls.
#include "common/redis/redis_loop.h"

#include <hiredis/hiredis.h>

#include "common/core/event_handles.h"

namespace dq {
namespace {

struct LoopEvents {
  redisAsyncContext* context = nullptr;
  UniqueEvent read;   // persistent, armed while hiredis wants to read
  UniqueEvent write;  // persistent, armed while the socket is full or connecting
  UniqueEvent flush;  // active: write what hiredis holds at the end of this turn
  bool reading = false;
  bool write_armed = false;
  bool flush_queued = false;
  bool in_flush = false;  // inside on_flush's redisAsyncHandleWrite
};

void arm_write(LoopEvents* events) {
  if (events->write_armed) {
    return;
  }
  event_add(events->write.get(), nullptr);
  events->write_armed = true;
}

void on_read(evutil_socket_t, short, void* arg) {
  redisAsyncHandleRead(static_cast<LoopEvents*>(arg)->context);
}

void on_write(evutil_socket_t, short, void* arg) {
  redisAsyncHandleWrite(static_cast<LoopEvents*>(arg)->context);
}

void on_flush(evutil_socket_t, short, void* arg) {
  auto* events = static_cast<LoopEvents*>(arg);
  events->flush_queued = false;
  if (events->write_armed) {
    return;  // the write event writes when the socket takes more
  }
  events->in_flush = true;
  // Writes, then calls delWrite (all written) or addWrite (the rest waits).
  redisAsyncHandleWrite(events->context);
}

void add_read(void* data) {
  auto* events = static_cast<LoopEvents*>(data);
  if (events->reading) {
    return;
  }
  event_add(events->read.get(), nullptr);
  events->reading = true;
}

void del_read(void* data) {
  auto* events = static_cast<LoopEvents*>(data);
  if (!events->reading) {
    return;
  }
  event_del(events->read.get());
  events->reading = false;
}

void add_write(void* data) {
  auto* events = static_cast<LoopEvents*>(data);
  bool connected = (events->context->c.flags & REDIS_CONNECTED) != 0;
  if (events->in_flush || !connected) {
    // The socket did not take everything, or hiredis waits for the connect:
    // wait for it to be writable.
    events->in_flush = false;
    arm_write(events);
    return;
  }
  if (events->write_armed || events->flush_queued) {
    return;
  }
  events->flush_queued = true;
  event_active(events->flush.get(), EV_TIMEOUT, 0);
}

void del_write(void* data) {
  auto* events = static_cast<LoopEvents*>(data);
  events->in_flush = false;
  if (!events->write_armed) {
    return;
  }
  event_del(events->write.get());
  events->write_armed = false;
}

void cleanup(void* data) {
  auto* events = static_cast<LoopEvents*>(data);
  delete events;  // frees its events
}

}  // namespace

int attach_to_loop(redisAsyncContext* context, event_base* base) {
  if (context->ev.data != nullptr) {
    return REDIS_ERR;
  }
  auto* events = new LoopEvents;
  events->context = context;
  int fd = context->c.fd;
  events->read.reset(event_new(base, fd, EV_READ | EV_PERSIST, &on_read, events));
  events->write.reset(event_new(base, fd, EV_WRITE | EV_PERSIST, &on_write, events));
  events->flush.reset(event_new(base, -1, 0, &on_flush, events));
  context->ev.addRead = &add_read;
  context->ev.delRead = &del_read;
  context->ev.addWrite = &add_write;
  context->ev.delWrite = &del_write;
  context->ev.cleanup = &cleanup;
  context->ev.data = events;
  // As hiredis's adapter: the write event reports the connect's end.
  add_read(events);
  arm_write(events);
  return REDIS_OK;
}

}  // namespace dq
