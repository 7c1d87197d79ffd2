// Owning handles for libcurl's C objects: an easy handle, a multi handle, a
// header list and a parsed URL, each freed by libcurl's own function for it
// so no path can leak one. The one place dq defines them.
#pragma once

#include <curl/curl.h>

#include "common/core/unique_handle.h"

namespace dq {

// A header list, and the one way dq appends to it: keeps the list unchanged
// when curl runs out of memory.
using CurlSlist = UniqueHandle<curl_slist, curl_slist_free_all>;
inline void append_header(CurlSlist& list, const char* line) {
  curl_slist* grown = curl_slist_append(list.get(), line);
  if (grown) {
    // grown is list.get() or, for the first line, a new head: drop ownership
    // first, since reset() of the same pointer would free it.
    (void)list.release();
    list.reset(grown);
  }
}

using CurlEasy = UniqueHandle<CURL, curl_easy_cleanup>;
using CurlMulti = UniqueHandle<CURLM, curl_multi_cleanup>;
using CurlUrl = UniqueHandle<CURLU, curl_url_cleanup>;

}  // namespace dq
