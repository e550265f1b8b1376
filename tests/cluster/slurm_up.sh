#!/usr/bin/env bash
# Start a single-node SLURM cluster on this machine for the cluster tests.
#
#   tests/cluster/slurm_up.sh DIR
#
# Everything lives under DIR (an empty folder): slurm.conf, gres.conf, a munge key and
# socket, state, spool, pid and log files.  The daemons run as root, on free TCP ports
# chosen here, so a system SLURM or munge (if any) is left alone.  Needs Debian's
# `slurmctld slurmd munge slurm-client` (tests/test_cluster_slurm.py installs them).
#
# The node is declared larger than the machine (SlurmdParameters=config_overrides): 8 CPUs,
# 64 GB and 2 count-only "gpu" GRES, so the shipped profile's requests (workflow/profiles/
# slurm: --gpus=1 --cpus-per-gpu=4 --mem=...) are schedulable unchanged.  No device file
# backs the fake GPUs; jobs see no CUDA and run on the CPU.
#
# Prints `export SLURM_CONF=DIR/slurm.conf` on success; writes DIR/env with the same line.
# Stop everything with tests/cluster/slurm_down.sh DIR.
set -euo pipefail

DIR=$(realpath "${1:?usage: slurm_up.sh DIR}")
HOST=$(hostname -s)
mkdir -p "$DIR"/{state,spool,log,munge}
chmod 700 "$DIR/munge"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
while [ "$SLURMD_PORT" = "$CTLD_PORT" ]; do SLURMD_PORT=$(free_port); done

# munge: a key of our own (the daemon refuses keys readable by others) and our own socket
dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge/munge.key"
/usr/sbin/munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.sock" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" \
  --seed-file="$DIR/munge/munged.seed"
for _ in $(seq 50); do [ -S "$DIR/munge/munge.sock" ] && break; sleep 0.1; done
munge -n --socket="$DIR/munge/munge.sock" | unmunge --socket="$DIR/munge/munge.sock" >/dev/null

cat >"$DIR/slurm.conf" <<EOF
# Single-node test cluster written by tests/cluster/slurm_up.sh
ClusterName=sigproptest
SlurmctldHost=${HOST}(127.0.0.1)
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${DIR}/munge/munge.sock
StateSaveLocation=${DIR}/state
SlurmdSpoolDir=${DIR}/spool
SlurmctldPidFile=${DIR}/slurmctld.pid
SlurmdPidFile=${DIR}/slurmd.pid
SlurmctldLogFile=${DIR}/log/slurmctld.log
SlurmdLogFile=${DIR}/log/slurmd.log
SlurmctldDebug=verbose
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
# no accounting database: keep finished jobs visible to squeue (the profile's status command)
MinJobAge=3600
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName=${HOST} NodeAddr=127.0.0.1 CPUs=8 RealMemory=64000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP
EOF
# slurmd drops GPUs without a device file: two null devices (char 1,3) stand in for
# /dev/nvidia0 and /dev/nvidia1 (plain files work too, with an error line in slurmd.log)
for g in 0 1; do mknod "$DIR/fakegpu$g" c 1 3 2>/dev/null || touch "$DIR/fakegpu$g"; done
cat >"$DIR/gres.conf" <<EOF
NodeName=${HOST} Name=gpu File=${DIR}/fakegpu[0-1]
EOF

# Jobs find the config at the default path: the plugin's job step drops SLURM_CONF from the
# environment of its nested `srun`.  A config that is not ours is never replaced.
ETC=/etc/slurm/slurm.conf
if [ -e "$ETC" ] || [ -L "$ETC" ]; then
  if ! grep -q "written by tests/cluster/slurm_up.sh" "$ETC" 2>/dev/null; then
    echo "refusing to replace $ETC (not written by tests/cluster/slurm_up.sh)" >&2
    exit 3
  fi
  rm -f "$ETC"
fi
mkdir -p /etc/slurm
ln -s "$DIR/slurm.conf" "$ETC"

export SLURM_CONF="$DIR/slurm.conf"
/usr/sbin/slurmctld -f "$SLURM_CONF"
/usr/sbin/slurmd -f "$SLURM_CONF" -N "$HOST"

# wait until the node takes jobs
for i in $(seq 120); do
  state=$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null || true)
  case "$state" in
    idle*|mixed*|allocated*) break ;;
  esac
  if [ "$i" = 120 ]; then
    echo "node $HOST not idle after 60 s (state: '${state}')" >&2
    tail -n 30 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
    exit 1
  fi
  sleep 0.5
done
echo "export SLURM_CONF=$SLURM_CONF" | tee "$DIR/env"
