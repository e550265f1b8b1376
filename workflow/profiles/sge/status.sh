#!/usr/bin/env bash
# Job status for snakemake-executor-plugin-cluster-generic (`cluster-generic-status-cmd`):
#
#   status.sh JOBID      prints one line: running | success | failed
#
# - Still known to qstat: "failed" if it is in an error state (E, e.g. Eqw: it will never
#   run; it is deleted here so it does not linger), else "running" (queued, held, running).
# - Gone from qstat: its accounting record (qacct -j, needs `reporting_params
#   accounting=true`, the Grid Engine default) says "success" when both `failed` and
#   `exit_status` are 0, else "failed" (a non-zero exit, h_rt or memory limit, qdel).
#   Until the record is written (up to the accounting flush_time, 15 s by default) the job
#   counts as "running".
set -uo pipefail
jobid=${1:?usage: status.sh JOBID}

state=$(qstat 2>/dev/null | awk -v id="$jobid" '$1 == id { print $5; exit }')
if [ -n "$state" ]; then
  case "$state" in
    *E*) qdel "$jobid" >/dev/null 2>&1; echo failed ;;
    *) echo running ;;
  esac
  exit 0
fi

# qacct exits 1 (and may print "no jobs running since startup" on stdout, before the
# accounting file exists) while there is no record: not an answer yet
if ! acct=$(qacct -j "$jobid" 2>/dev/null); then
  echo running
  exit 0
fi
failed=$(awk '$1 == "failed" { v = $2 } END { print v }' <<<"$acct")
exit_status=$(awk '$1 == "exit_status" { v = $2 } END { print v }' <<<"$acct")
if [ -z "$failed" ] || [ -z "$exit_status" ]; then
  echo running
elif [ "$failed" = 0 ] && [ "$exit_status" = 0 ]; then
  echo success
else
  echo failed
fi
