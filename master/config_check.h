// `dqd --check -c CONF`: what an operator runs before starting or after
// editing the config. Loads the config, opens the SQLite registry (and
// migrates it, as dqd would), reaches every configured shard and asks each
// whether it is safe (common/redis/shard_safety.h), checks the
// log folder is writable and that the admin page's first user can log in
// (its password file readable, or creatable by dq-admin), and prints one
// line per check. Exit status 0 only
// when every check passed.
#pragma once

#include <cstdio>
#include <string>

namespace dq {

int run_config_check(const std::string& config_path, FILE* out);

}  // namespace dq
