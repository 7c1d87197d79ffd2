// Numbers and strings out of script replies: Lua numbers arrive as integers,
// values matched out of a record or zset scores as strings.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>

#include "common/core/status.h"
#include "common/redis/redis_sync.h"

namespace dq {

// False when the reply is neither an integer nor a number's text.
bool reply_int(const redisReply* reply, int64_t* out);
// A string, status or integer reply as text; empty for anything else.
std::string reply_string(const redisReply* reply);
// kInternal "unexpected reply to <what>": a reply of the wrong shape.
Status bad_reply(const char* what);
// A call whose reply must be a number (ZCARD, a script's count): the number,
// the call's own error, or kInternal "unexpected reply to <what>".
Result<int64_t> int_reply(const Result<ReplyPtr>& reply, const char* what);

}  // namespace dq
