// Finding dq's child processes by title, to kill or stop one role in a test.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dq::test {

// Live (not zombie) children of `parent` whose title (argv[0]) starts with
// `title_prefix`, e.g. "dq-consume_".
std::vector<pid_t> children_titled(pid_t parent, const std::string& title_prefix);

}  // namespace dq::test
