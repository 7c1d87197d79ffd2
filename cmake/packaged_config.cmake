# Writes the config the package installs as /etc/dq/dq.ini: conf/dq.ini with
# the paths of a system install (FHS folders systemd creates for the unit)
# and no redis-server started by dq (the package relies on Debian's).
#   cmake -DINPUT=conf/dq.ini -DOUTPUT=... -P packaged_config.cmake
file(READ "${INPUT}" text)
# Each text must be in conf/dq.ini once. (One call per pair, not a list of
# pairs: a CMake list would split the pid file's "; " at its semicolon.)
function(replace_in_text from to)
  string(FIND "${text}" "${from}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "packaged_config: '${from}' not found in ${INPUT}")
  endif()
  string(REPLACE "${from}" "${to}" replaced "${text}")
  set(text "${replaced}" PARENT_SCOPE)
endfunction()
replace_in_text("path = ../var/dq.db" "path = /var/lib/dq/dq.db")
replace_in_text("dir = ../var/log" "dir = /var/log/dq")
replace_in_text("password_file = ../var/admin-password"
                "password_file = /var/lib/dq/admin-password")
replace_in_text("start_local = yes" "start_local = no")
replace_in_text("; pid_file = ../var/dqd.pid" "pid_file = /run/dq/dqd.pid")
file(WRITE "${OUTPUT}" "; Installed by the dq package. Paths are those of a system install.\n${text}")
