// An owning pointer to a C library's object, freed by that library's own
// function: UniqueHandle<event, event_free> calls event_free once, on every
// path. Each owning wrapper of dq is one (event_handles.h, curl_handle.h,
// redis_sync.h, sqlite_db.h).
#pragma once

#include <memory>

namespace dq {

// Calls `Free` on the pointer (any function taking it: event_free, redisFree, ...).
template <auto Free>
struct FreeWith {
  template <typename T>
  void operator()(T* handle) const {
    Free(handle);
  }
};

template <typename T, auto Free>
using UniqueHandle = std::unique_ptr<T, FreeWith<Free>>;

}  // namespace dq
