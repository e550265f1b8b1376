#!/usr/bin/env bash
# Stop the test cluster that tests/cluster/slurm_up.sh DIR started: its slurmd, slurmctld
# and munged, each by the pid in its pid file, and the /etc/slurm/slurm.conf link to DIR
# (nothing else is touched).
#
#   tests/cluster/slurm_down.sh DIR
set -uo pipefail

DIR=$(realpath "${1:?usage: slurm_down.sh DIR}")
stop() {  # stop PIDFILE: TERM, wait up to 10 s, then KILL
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}
stop "$DIR/slurmd.pid"
stop "$DIR/slurmctld.pid"
stop "$DIR/munge/munged.pid"
# the /etc/slurm/slurm.conf link that slurm_up.sh made to this DIR's config
if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$DIR/slurm.conf" ]; then
  rm -f /etc/slurm/slurm.conf
fi
exit 0
