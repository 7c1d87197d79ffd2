// Owning handles for libcurl's C objects: an easy handle, a multi handle and
// a header list, each freed by its own deleter so no path can leak one.
#pragma once

#include <curl/curl.h>

#include <memory>

namespace dq {

struct CurlEasyDeleter {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;

struct CurlMultiDeleter {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
using CurlMulti = std::unique_ptr<CURLM, CurlMultiDeleter>;

struct CurlSlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistDeleter>;

// Appends a header line; keeps the list unchanged when curl runs out of memory.
inline void append_header(CurlSlist& list, const char* line) {
  curl_slist* grown = curl_slist_append(list.get(), line);
  if (grown) {
    // grown is list.get() or, for the first line, a new head: drop ownership
    // first, since reset() of the same pointer would free it.
    (void)list.release();
    list.reset(grown);
  }
}

}  // namespace dq
