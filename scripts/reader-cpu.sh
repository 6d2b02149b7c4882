#!/usr/bin/env bash
# CPU per NGAP message of the core worker that reads the gNB's association.
#
# Runs `steer5g core --workers 2` and `steer5g ran --gnbs 1` as two processes on loopback
# (SCTP over UDP encapsulation, no privilege needed), reads each core worker thread's CPU
# time (utime + stime of /proc/<pid>/task/*/stat, threads core-w0 and core-w1) before and
# after the load, and divides the reading worker's CPU by the NGAP messages it read
# (steer5g_ngap_read_total on /metrics). With one gNB, one worker reads every message and
# hands about half of the UE-associated ones to the other; its CPU also covers handling
# the half it keeps, so compare figures of this script with each other only.
#
# Usage: scripts/reader-cpu.sh [BIN] [RUNS] [UES] [COUNT]
#   BIN    steer5g binary (default target/release/steer5g)
#   RUNS   runs; the median is printed last (default 3)
#   UES    concurrent UEs of the load generator (default 64)
#   COUNT  registrations (default 20000)
set -euo pipefail

bin=${1:-target/release/steer5g}
runs=${2:-3}
ues=${3:-64}
count=${4:-20000}
tick=$(getconf CLK_TCK)
work=$(mktemp -d)
core_pid=
cleanup() {
  if [[ -n "$core_pid" ]]; then kill "$core_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" subscriber generate --data-dir "$work/data" --count "$count" "$work/subs.csv" >/dev/null 2>&1
"$bin" subscriber import --data-dir "$work/data" "$work/subs.csv" >/dev/null 2>&1

# Ticks of CPU of thread $2 of process $1.
thread_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    if [[ "$(cat "$t/comm" 2>/dev/null)" == "$2" ]]; then
      # Fields after the command name, which is in parentheses: utime is 14, stime 15.
      sed 's/^.*) //' "$t/stat" | awk '{print $12 + $13}'
      return
    fi
  done
  echo 0
}

metric() { # metric NAME WORKER
  curl -s "http://$metrics/metrics" | awk -v m="steer5g_$1_total{worker=\"$2\"}" '$1 == m {print $2}'
}

results=()
for run in $(seq 1 "$runs"); do
  metrics=127.0.0.5:9090
  "$bin" core --workers 2 --transport udp --data-dir "$work/data" \
    >"$work/core.out" 2>"$work/core.err" &
  core_pid=$!
  for _ in $(seq 1 100); do
    curl -sf "http://$metrics/metrics" >/dev/null 2>&1 && break
    sleep 0.1
  done
  declare -A before
  for w in 0 1; do before[$w]=$(thread_ticks "$core_pid" "core-w$w"); done
  "$bin" ran --gnbs 1 --transport udp --subscribers "$work/subs.csv" --data-dir "$work/data" \
    --ues "$ues" --count "$count" >"$work/ran.out" 2>"$work/ran.err"
  best=-1
  line=""
  for w in 0 1; do
    after=$(thread_ticks "$core_pid" "core-w$w")
    read_n=$(metric ngap_read "$w")
    cpu=$((after - ${before[$w]}))
    line+=" core-w$w: ${cpu} ticks, ngap_read ${read_n:-0};"
    if [[ "${read_n:-0}" -gt 0 ]]; then
      best=$(awk -v c="$cpu" -v n="$read_n" -v t="$tick" 'BEGIN {printf "%.2f", c / t * 1e6 / n}')
    fi
  done
  kill "$core_pid"
  wait "$core_pid" 2>/dev/null || true
  core_pid=
  echo "run $run:$line reader ${best} us/message"
  results+=("$best")
done
printf '%s\n' "${results[@]}" | sort -n | awk '{a[NR] = $1} END {print "median reader CPU per NGAP message (us):", a[int((NR + 1) / 2)]}'
