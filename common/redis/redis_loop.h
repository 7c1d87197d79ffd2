// Drives a hiredis async context from the server's libevent loop, as
// hiredis's own adapter (hiredis/adapters/libevent.h) does, with two
// differences that save system calls on every add.lua call:
// - the read event is persistent: hiredis 0.14's one-shot read event left
//   and re-entered epoll (two epoll_ctl) for every reply;
// - commands are written at the end of the loop turn they were queued in,
//   straight to the socket, and the write event is armed only while the
//   socket takes less than all of them (or the connect is in progress):
//   arming it for every call cost two epoll_ctl and a loop turn.
#pragma once

#include <event2/event.h>
#include <hiredis/async.h>

namespace dq {

// Like redisLibeventAttach: REDIS_OK, or REDIS_ERR when the context already has a loop.
int attach_to_loop(redisAsyncContext* context, event_base* base);

}  // namespace dq
