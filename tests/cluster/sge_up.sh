#!/usr/bin/env bash
# Start a one-host Grid Engine for the cluster tests, from Debian's gridengine-master,
# gridengine-exec and gridengine-client packages (tests/test_cluster_sge.py installs them,
# with the debconf answers preseeded: see PRESEED below).
#
#   tests/cluster/sge_up.sh DIR
#
# Grid Engine keeps its cell in $SGE_ROOT=/var/lib/gridengine (made by the package) and its
# spool in /var/spool/gridengine; this script configures that cell for a test and writes
# DIR/env (the variables to use it).  What it sets:
# - host_aliases: the host's name and "localhost" are one host.  Grid Engine refuses
#   clients whose address resolves to another name than they give ("access denied (client IP
#   resolved to host name "localhost". This is not identical to clients host name ...)"),
#   which is what a container with "127.0.0.1 localhost" and "127.0.0.1 <host>" gives.
# - global configuration min_uid/min_gid 0 (the test submits as root), accounting flushed
#   every second (the profile's status.sh reads it), scheduler interval 1 s, a `gpu` complex
#   consumed per job (2 on this host, no devices behind it: jobs see no CUDA), a `smp`
#   parallel environment ($pe_slots) and a queue all.q with 8 slots: the shipped profile's
#   requests (-pe smp 4 -l mem_free=...,h_rt=...,gpu=1) run unchanged.
# Stop it with tests/cluster/sge_down.sh.
set -euo pipefail

DIR=$(realpath "${1:?usage: sge_up.sh DIR}")
mkdir -p "$DIR"
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
COMMON=$SGE_ROOT/$SGE_CELL/common
HOST=$(/usr/lib/gridengine/gethostname -name 2>/dev/null || hostname)
[ -d "$COMMON" ] || { echo "no Grid Engine cell at $COMMON (package not configured)" >&2; exit 2; }

if [ "$HOST" != localhost ]; then
  echo "$HOST localhost" >"$COMMON/host_aliases"
fi
echo "$HOST" >"$COMMON/act_qmaster"
mkdir -p /var/run/gridengine /var/spool/gridengine/execd
chown sgeadmin:sgeadmin /var/run/gridengine /var/spool/gridengine/execd

qmaster_pid=/var/spool/gridengine/qmaster/qmaster.pid
if ! { [ -f "$qmaster_pid" ] && kill -0 "$(cat "$qmaster_pid")" 2>/dev/null; }; then
  /usr/sbin/sge_qmaster
fi
for i in $(seq 60); do qconf -sh >/dev/null 2>&1 && break; sleep 0.5; done
qconf -sh >/dev/null

CFG="$DIR/sgecfg"
mkdir -p "$CFG"
# global configuration: root may run jobs; accounting records written within a second
# (the profile's status.sh reads them; the default flush_time is 15 s)
qconf -sconf global | sed -e 's/^min_uid .*/min_uid                      0/' \
  -e 's/^min_gid .*/min_gid                      0/' \
  -e 's/flush_time=[0-9:]*/flush_time=00:00:01/' >"$CFG/global"
qconf -Mconf "$CFG/global" >/dev/null
# scheduler: dispatch within a second
qconf -ssconf | sed -e 's/^schedule_interval .*/schedule_interval                 0:0:1/' \
  -e 's/^flush_submit_sec .*/flush_submit_sec                  1/' \
  -e 's/^flush_finish_sec .*/flush_finish_sec                  1/' \
  -e 's/^job_load_adjustments .*/job_load_adjustments              NONE/' >"$CFG/sconf"
qconf -Msconf "$CFG/sconf" >/dev/null
# a `gpu` complex consumed per job (JOB), not per slot: `-pe smp 4 -l gpu=1` takes 1 GPU
qconf -sc | grep -v '^gpu ' >"$CFG/complexes"
echo "gpu                 gpu        INT       <=    YES         JOB        0        0" >>"$CFG/complexes"
qconf -Mc "$CFG/complexes" >/dev/null
# the smp parallel environment
cat >"$CFG/smp" <<'EOF'
pe_name            smp
slots              999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    $pe_slots
control_slaves     FALSE
job_is_first_task  TRUE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
EOF
if qconf -spl 2>/dev/null | grep -qx smp; then qconf -Mp "$CFG/smp" >/dev/null; else qconf -Ap "$CFG/smp" >/dev/null; fi
qconf -ah "$HOST" >/dev/null 2>&1 || true
qconf -as "$HOST" >/dev/null 2>&1 || true

# the execution daemon registers the host in the exec host list
execd_pid=/var/spool/gridengine/execd/$HOST/execd.pid
running_execd() {
  local f
  for f in /var/spool/gridengine/execd/*/execd.pid; do
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && return 0
  done
  return 1
}
running_execd || /usr/sbin/sge_execd
for i in $(seq 60); do qconf -se "$HOST" >/dev/null 2>&1 && break; sleep 0.5; done
qconf -mattr exechost complex_values gpu=2 "$HOST" >/dev/null

cat >"$CFG/all.q" <<EOF
qname                 all.q
hostlist              $HOST
seq_no                0
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              0
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               smp
rerun                 FALSE
slots                 8
tmpdir                /tmp
shell                 /bin/bash
prolog                NONE
epilog                NONE
shell_start_mode      posix_compliant
starter_method        NONE
suspend_method        NONE
resume_method         NONE
terminate_method      NONE
notify                00:00:60
owner_list            NONE
user_lists            NONE
xuser_lists           NONE
subordinate_list      NONE
complex_values        NONE
projects              NONE
xprojects             NONE
calendar              NONE
initial_state         default
s_rt                  INFINITY
h_rt                  INFINITY
s_cpu                 INFINITY
h_cpu                 INFINITY
s_fsize               INFINITY
h_fsize               INFINITY
s_data                INFINITY
h_data                INFINITY
s_stack               INFINITY
h_stack               INFINITY
s_core                INFINITY
h_core                INFINITY
s_rss                 INFINITY
h_rss                 INFINITY
s_vmem                INFINITY
h_vmem                INFINITY
EOF
if qconf -sql 2>/dev/null | grep -qx all.q; then qconf -Mq "$CFG/all.q" >/dev/null; else qconf -Aq "$CFG/all.q" >/dev/null; fi
qmod -c "all.q@$HOST" >/dev/null 2>&1 || true   # clear an error state left by an earlier run

# wait until the queue instance takes jobs (a load report came in and it is not in alarm)
for i in $(seq 120); do
  line=$(qstat -f -q "all.q@$HOST" 2>/dev/null | awk -v q="all.q@$HOST" '$1 == q')
  if [ -n "$line" ] && [ "$(echo "$line" | awk '{print $6}')" = "" ] \
     && ! echo "$line" | grep -q -- "-NA-"; then
    break
  fi
  if [ "$i" = 120 ]; then
    echo "queue all.q@$HOST not ready after 60 s: '$line'" >&2
    exit 1
  fi
  sleep 0.5
done
printf 'export SGE_ROOT=%s SGE_CELL=%s\n' "$SGE_ROOT" "$SGE_CELL" | tee "$DIR/env"
