#!/usr/bin/env bash
# An NG Setup burst against the AMF's N2 socket, and where its datagrams were dropped
# (docs/PERFORMANCE.md, "Which receive-path tunings pay on our NFs?": the N2 socket
# buffers). `steer5g core --workers 1` listens on the loopback of a namespace of its own;
# `steer5g ran --gnbs N` sets up N associations over SCTP over UDP at once, with
# `steer5g probe` on that loopback. Prints the core socket's drop counter
# (/proc/net/udp), the drops the probe saw by reason, and the gNBs' retransmissions.
#
#   ./scripts/n2-setup-burst.sh RMEM_MAX GNBS      e.g. 212992 1000 (the stock rmem_max)
#
# RMEM_MAX is set machine-wide (net.core.rmem_max is global) for the run and put back on
# every exit path. Needs root. Bounded: the probe runs 6 s, the emulator 20 s at most.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -eq 2 ] || { echo "usage: $0 RMEM_MAX GNBS" >&2; exit 2; }
rmem="$1"
gnbs="$2"
bin="${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/steer5g/target}/release/steer5g}"
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --release, or BIN=...)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root: namespaces, BPF and net.core.rmem_max" >&2; exit 3; }

old_rmem="$(cat /proc/sys/net/core/rmem_max)"
ns="s5burst$$"
data="$(mktemp -d)"
core_pid=""
cleanup() {
  [ -n "$core_pid" ] && kill -INT "$core_pid" 2>/dev/null && wait "$core_pid" 2>/dev/null
  sysctl -qw net.core.rmem_max="$old_rmem"
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT
sysctl -qw net.core.rmem_max="$rmem"
ip netns add "$ns"
ip -n "$ns" link set lo up

"$bin" subscriber generate --count 10 --data-dir "$data/db" "$data/subs.csv" >/dev/null 2>&1
"$bin" subscriber import --data-dir "$data/db" "$data/subs.csv" >/dev/null 2>&1
ip netns exec "$ns" taskset -c 1 "$bin" core --workers 1 --sbi inproc --transport udp \
  --n2-addr 127.0.0.1 --no-metrics --no-provisioning --data-dir "$data/db" \
  >/dev/null 2>"$data/core.log" &
core_pid=$!
for _ in $(seq 1 100); do
  grep -q "N2 listening" "$data/core.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "N2 listening" "$data/core.log" || { echo "core did not start: $(cat "$data/core.log")" >&2; exit 1; }
granted="$(ip netns exec "$ns" ss -uamn | grep -o 'rb[0-9]*' | head -1)"

"$bin" --json probe --netns "$ns" --iface lo --duration 6 >"$data/probe.json" 2>/dev/null &
probe_pid=$!
sleep 0.7
ip netns exec "$ns" taskset -c 0 timeout 20 "$bin" --json ran --transport udp \
  --amf 127.0.0.1 --gnbs "$gnbs" --timeout 15 >"$data/ran.json" 2>/dev/null || true
wait "$probe_pid"
# The encapsulation port 9899 is 26AB in /proc/net/udp; its last column counts drops.
socket_drops="$(ip netns exec "$ns" awk '$2 ~ /:26AB$/ {print $NF}' /proc/net/udp)"

python3 - "$data" "$rmem" "$gnbs" "$granted" "$socket_drops" <<'PY'
import json, sys
d, rmem, gnbs, granted, sock = sys.argv[1:6]
probe = json.load(open(d + "/probe.json"))
ran = json.load(open(d + "/ran.json"))
drops = {x["reason"]: x["count"] for x in probe["drops"]}
print(f"rmem_max {rmem}, {gnbs} gNBs: N2 socket {granted} (skmem rb, bytes); "
      f"NG Setups ok {ran.get('ng_setup_ok')} failed {ran.get('ng_setup_failed')}; "
      f"N2 socket drops {sock or 0}; gNB retransmissions "
      f"{ran.get('sctp', {}).get('retransmissions')}; drops in the namespace by reason {drops}")
PY
