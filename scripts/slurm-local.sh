#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, and `mapfilter batch` run on it
# as a job array: plans a small batch with --emit slurm (4 shards), submits
# the array, waits, and checks every output byte-identical to a
# single-process `batch run` of the same plan.
#
#   bash scripts/slurm-local.sh [MAPFILTER_BINARY] [WORK_DIR]
#
# Needs root and Debian 12's slurm-wlm and munge (scripts/setup.sh installs
# them). slurmctld and slurmd run on this host name with
# ProctrackType=proctrack/linuxproc and TaskPlugin=task/none (no cgroups
# needed, so it works in containers). Leaves the daemons running for the
# next call (a second call reuses them). Exit 0 only when every check passes.
set -euo pipefail
cd "$(dirname "$0")/.."
exe=$(realpath "${1:-target/debug/mapfilter}")
work=${2:-$(mktemp -d)}
mkdir -p "$work"
work=$(realpath "$work")
[ "$(id -u)" -eq 0 ] || { echo "slurm-local: needs root (it starts slurmctld, slurmd and munged)" >&2; exit 2; }
for tool in slurmctld slurmd munged sbatch sinfo; do
  command -v "$tool" >/dev/null || { echo "slurm-local: $tool missing (apt-get install slurm-wlm munge)" >&2; exit 2; }
done

host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)

# munge: a key, then the daemon.
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
if ! munge -n >/dev/null 2>&1; then
  if id munge >/dev/null 2>&1; then
    su -s /bin/sh munge -c "munged --force" || munged --force
  else
    munged --force
  fi
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge >/dev/null

# slurm: one node, one partition, everything as root.
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
conf=/etc/slurm/slurm.conf
want=$(cat <<CONF
# Written by mapfilter's scripts/slurm-local.sh: a one-node test cluster.
ClusterName=mapfilter-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
MaxArraySize=10001
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
)
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
  printf '%s\n' "$want" > "$conf"
  # Daemons of an older configuration stop (by their pid files) and restart.
  for pid in /run/slurmctld.pid /run/slurmd.pid; do
    [ -s "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
  done
  sleep 1
fi
pgrep -x slurmctld >/dev/null || slurmctld -c
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 100); do
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
  case "$state" in idle*|mix*|alloc*) break ;; esac
  [ "$state" = "down" ] || [ "$state" = "drain" ] && scontrol update nodename="$host" state=resume 2>/dev/null || true
  sleep 0.2
done
sinfo -h -n "$host" -o %t | grep -Eq 'idle|mix|alloc' || {
  echo "slurm-local: node $host did not come up: $(sinfo -h -o '%t %E' 2>&1)" >&2
  tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
  exit 1
}

# The batch: the bundled synthetic map cut into 4x4 tasks, 4 shards.
input=$(realpath data/synthetic_simplex_512.tif)
rm -rf "$work/slurm" "$work/single"
opts=(-k gaussian:2 --grid 4 --device host --tile 96)
"$exe" batch plan "$input" --out "$work/slurm" "${opts[@]}" \
  --emit slurm --shards 4 --slurm-parallel 4 --slurm-cpus 1 --slurm-mem 500M --slurm-time 00:05:00
"$exe" batch plan "$input" --out "$work/single" "${opts[@]}"
grep -q -- '--array=0-3%4' "$work/slurm/batch.sbatch"
"$exe" batch run "$work/single" -q

sbatch --wait --quiet "$work/slurm/batch.sbatch"
fail=0
shopt -s nullglob
logs=("$work"/slurm/logs/slurm-*.out)
[ ${#logs[@]} -eq 4 ] || { echo "slurm-local: ${#logs[@]} array logs, expected 4" >&2; fail=1; }
for f in "$work"/single/out/*.tif; do
  cmp -s "$f" "$work/slurm/out/$(basename "$f")" || { echo "slurm-local: $(basename "$f") differs or is missing" >&2; fail=1; }
done
[ "$(ls "$work/slurm/out" | wc -l)" -eq 16 ] || { echo "slurm-local: $(ls "$work/slurm/out" | wc -l) outputs, expected 16" >&2; fail=1; }
if [ "$fail" -ne 0 ]; then
  cat "$work"/slurm/logs/*.out >&2 || true
  exit 1
fi
echo "slurm-local: 4 array tasks, 16 outputs byte-identical to a single-process run"
