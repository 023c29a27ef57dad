#!/usr/bin/env bash
# A throw-away single-node SLURM cluster on this machine, for trying
# `engine.kind: slurm` grids (tests/test_slurm_engine.py uses it).
#
#   experiments/slurm_single_node.sh start  [DIR]   # start it (does nothing if it already runs)
#   experiments/slurm_single_node.sh stop   [DIR]   # end its daemons
#   experiments/slurm_single_node.sh status [DIR]   # exit status 0 when it runs and the node is idle
#   experiments/slurm_single_node.sh env    [DIR]   # prints `export SLURM_CONF=DIR/slurm.conf`
#
# DIR (default $KGPARSER_SLURM_DIR, else /tmp/kgparser-slurm) receives
# everything: slurm.conf, a munge key of its own, the daemons' state, spool,
# pid and log files.  Nothing outside DIR is written and the system's own
# munge / SLURM set-up (if any) is left alone: this cluster has its own munge
# socket and its own ports (SlurmctldPort $KGPARSER_SLURM_PORT, default 16817,
# SlurmdPort one above).  SLURM commands find the cluster through SLURM_CONF:
#
#   eval "$(experiments/slurm_single_node.sh env)"; sinfo; sbatch --wrap hostname
#
# It runs munged, slurmctld and slurmd as root (SlurmUser=root) with no
# cgroups (ProctrackType=proctrack/linuxproc, TaskPlugin=task/none), so it
# works inside containers; one node (this host, `hostname -s`, at 127.0.0.1)
# with all its CPUs, partition `debug`, no accounting database (no slurmdbd:
# `sacct` does not work).  Needs the Debian/Ubuntu packages slurm-wlm (or
# slurmctld + slurmd + slurm-client) and munge.  For tests and trials only.
set -euo pipefail

command=${1:-}
dir=${2:-${KGPARSER_SLURM_DIR:-/tmp/kgparser-slurm}}
port=${KGPARSER_SLURM_PORT:-16817}
timeout=${KGPARSER_SLURM_TIMEOUT:-60}
MARK=.kgparser-slurm-single-node   # marks DIR as made by this script

die() { echo "slurm_single_node: $*" >&2; exit 1; }

# pid from DIR/NAME.pid when that process still runs the daemon NAME
daemon_pid() {
    local name=$1 file=$dir/$1.pid pid
    [[ -r $file ]] || return 1
    pid=$(tr -dc 0-9 < "$file")
    [[ -n $pid && -r /proc/$pid/comm ]] || return 1
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || return 1
    echo "$pid"
}

node_state() { SLURM_CONF=$dir/slurm.conf timeout 10 sinfo -h -N -o %t 2>/dev/null | head -n 1; }

running() {
    daemon_pid munged >/dev/null && daemon_pid slurmctld >/dev/null && daemon_pid slurmd >/dev/null \
        && [[ $(node_state) == idle* ]]
}

show_logs() {
    local log
    for log in "$dir"/log/*.log; do
        [[ -r $log ]] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
    done
    return 0
}

stop() {
    [[ -d $dir && -n $(ls -A "$dir") ]] || return 0  # nothing started there
    [[ -e $dir/$MARK ]] || die "$dir was not made by this script; not touching it"
    local name pid pids=() jobs waited=0
    if daemon_pid slurmctld >/dev/null; then  # cancel this cluster's jobs, so that no job outlives it
        jobs=$(SLURM_CONF=$dir/slurm.conf timeout 10 squeue -h -o %A 2>/dev/null || true)
        if [[ -n $jobs ]]; then
            # shellcheck disable=SC2086
            SLURM_CONF=$dir/slurm.conf timeout 10 scancel $jobs 2>/dev/null || true
            while [[ -n $(SLURM_CONF=$dir/slurm.conf timeout 10 squeue -h -o %A 2>/dev/null) ]] && ((waited < 100)); do
                sleep 0.1; waited=$((waited + 1))
            done
        fi
    fi
    waited=0
    for name in slurmd slurmctld munged; do
        if pid=$(daemon_pid "$name"); then
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null && ((waited < 100)); do sleep 0.1; waited=$((waited + 1)); done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    done
    for name in slurmd slurmctld munged; do rm -f "$dir/$name.pid"; done
    return 0
}

start() {
    for binary in munged slurmctld slurmd sinfo sbatch; do
        command -v "$binary" >/dev/null || die "$binary not found: apt-get install slurm-wlm munge"
    done
    [[ $(id -u) == 0 ]] || die "run it as root (the daemons run as root, SlurmUser=root)"
    if [[ -d $dir && ! -e $dir/$MARK ]] && [[ -n $(ls -A "$dir") ]]; then
        die "$dir exists and was not made by this script; choose another folder"
    fi
    if running; then
        echo "slurm_single_node: already running in $dir"
        return 0
    fi
    stop  # whatever half is left of an earlier start
    mkdir -p "$dir"
    touch "$dir/$MARK"
    chmod 755 "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
    chmod 755 "$dir/munge"  # munged: the socket's folder must be searchable by all

    local host cpus memory
    host=$(hostname -s)
    cpus=$(nproc --all)
    memory=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
    if [[ ! -s $dir/munge/munge.key ]]; then
        (umask 077; head -c 1024 /dev/urandom > "$dir/munge/munge.key")
    fi
    chmod 400 "$dir/munge/munge.key"
    cat > "$dir/slurm.conf" <<EOF
# written by experiments/slurm_single_node.sh
ClusterName=kgparser-single-node
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

    # --force: munged otherwise refuses a socket below a folder not searchable by all
    # (mktemp -d, /tmp/pytest-of-root are 0700); all clients here run as root anyway
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
        || { show_logs; die "munged did not start"; }
    slurmctld -f "$dir/slurm.conf" || { show_logs; die "slurmctld did not start"; }
    slurmd -f "$dir/slurm.conf" -N "$host" || { show_logs; die "slurmd did not start"; }

    local deadline=$((SECONDS + timeout)) state=
    while ((SECONDS < deadline)); do
        state=$(node_state || true)
        [[ $state == idle* ]] && { echo "slurm_single_node: node $host idle ($cpus CPUs); SLURM_CONF=$dir/slurm.conf"; return 0; }
        sleep 0.5
    done
    show_logs
    die "node not idle after ${timeout}s (state: ${state:-no answer}); stop it with: $0 stop $dir"
}

case $command in
    start) start ;;
    stop) stop ;;
    status) running ;;
    env) echo "export SLURM_CONF=$dir/slurm.conf" ;;
    *) echo "usage: $0 start|stop|status|env [DIR]" >&2; exit 2 ;;
esac
