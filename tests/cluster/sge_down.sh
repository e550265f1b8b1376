#!/usr/bin/env bash
# Stop the Grid Engine daemons that tests/cluster/sge_up.sh started: the execution daemon
# and the qmaster, each by the pid in its pid file (TERM, then KILL after 20 s).
#
#   tests/cluster/sge_down.sh
set -uo pipefail
stop() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}
for f in /var/spool/gridengine/execd/*/execd.pid; do stop "$f"; done
stop /var/spool/gridengine/qmaster/qmaster.pid
exit 0
