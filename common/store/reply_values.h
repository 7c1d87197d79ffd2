// Numbers and strings out of script replies: Lua numbers arrive as integers,
// values matched out of a record or zset scores as strings.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>

namespace dq {

// False when the reply is neither an integer nor a number's text.
bool reply_int(const redisReply* reply, int64_t* out);
// A string, status or integer reply as text; empty for anything else.
std::string reply_string(const redisReply* reply);

}  // namespace dq
