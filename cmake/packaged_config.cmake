# Writes the config the package installs as /etc/dq/dq.ini: conf/dq.ini with
# the paths of a system install (FHS folders systemd creates for the unit)
# and no redis-server started by dq (the package relies on Debian's).
#   cmake -DINPUT=conf/dq.ini -DOUTPUT=... -P packaged_config.cmake
file(READ "${INPUT}" text)
set(replacements
    "path = ../var/dq.db|path = /var/lib/dq/dq.db"
    "dir = ../var/log|dir = /var/log/dq"
    "password_file = ../var/admin-password|password_file = /var/lib/dq/admin-password"
    "start_local = yes|start_local = no"
    "; pid_file = ../var/dqd.pid|pid_file = /run/dq/dqd.pid")
foreach(pair ${replacements})
  string(REPLACE "|" ";" parts "${pair}")
  list(GET parts 0 from)
  list(GET parts 1 to)
  string(FIND "${text}" "${from}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "packaged_config: '${from}' not found in ${INPUT}")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
endforeach()
file(WRITE "${OUTPUT}" "; Installed by the dq package. Paths are those of a system install.\n${text}")
