#!/usr/bin/env bash
# Where the kernel's receive cost of our NFs' messages goes, stage by stage, at several
# loads (issue 11 item 6; docs/PERFORMANCE.md "Where does the kernel's receive path spend
# its time?"). Three workloads, each in a network namespace of its own so that nothing
# else on the machine counts, with `steer5g probe` filtered to that namespace's loopback
# (NGAP, SBI) or to the UPF's namespace (GTP-U):
#
#   ngap  `steer5g core --sbi inproc --transport udp` and `steer5g ran --rate R`:
#         NGAP over SCTP over UDP (RFC 6951), registration and deregistration.
#   sbi   `steer5g core --sbi inproc --serve-sbi` and `steer5g bench sbi --rate R`:
#         5G-AKA requests over h2c (TCP).
#   gtpu  `steer5g bench upf --rates ... --paths tun`: GTP-U to the UPF's TUN path over veth.
#
# On loopback both directions of an exchange are received in the same namespace, so the
# per-message figures hold the request and its answer; the summary says so.
#
#   BIN=target/release/steer5g OUT=profile NGAP_RATES=100,300,1000 SBI_RATES=1000,4000,10000 \
#   GTPU_RATES=10k,50k,100k,max STEP=4 ./scripts/nf-receive-profile.sh
#
# Needs root (namespaces, BPF). Every step is bounded by STEP seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/steer5g/target}/release/steer5g}"
out="${OUT:-nf-receive-profile-$(date +%Y%m%d-%H%M%S)}"
ngap_rates="${NGAP_RATES:-100,300,1000}"
sbi_rates="${SBI_RATES:-1000,4000,10000}"
gtpu_rates="${GTPU_RATES:-10k,50k,100k,max}"
step="${STEP:-4}"
workloads="${WORKLOADS:-ngap sbi gtpu}"
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --release, or BIN=...)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root: network namespaces and BPF" >&2; exit 3; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"

ns="s5prof$$"
data="$(mktemp -d)"
core_pid=""
cleanup() {
  [ -n "$core_pid" ] && kill -INT "$core_pid" 2>/dev/null && wait "$core_pid" 2>/dev/null
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
inns() { ip netns exec "$ns" "$@"; }

"$bin" subscriber generate --count 2000 --data-dir "$data/db" "$data/subs.csv" >/dev/null 2>&1
"$bin" subscriber import --data-dir "$data/db" "$data/subs.csv" >/dev/null 2>&1

start_core() { # args...
  # `ip netns exec` execs the command: $! is the core's own PID (the probe's --pid).
  ip netns exec "$ns" "$bin" core --workers 1 --data-dir "$data/db" --no-metrics \
    --no-provisioning "$@" >"$out/core.log" 2>&1 &
  core_pid=$!
  for _ in $(seq 1 50); do
    grep -q "listening" "$out/core.log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "core did not start: $(cat "$out/core.log")" >&2
  exit 1
}
stop_core() {
  kill -INT "$core_pid"; wait "$core_pid" || true; core_pid=""
}
probe_step() { # name rate: the probe over STEP seconds on the namespace's loopback
  "$bin" --json probe --netns "$ns" --iface lo --pid "$core_pid" --duration "$step" \
    >"$out/$1-$2.probe.json" 2>>"$out/probe.log" &
  probe_pid=$!
  sleep 0.5
}

for w in $workloads; do
  case "$w" in
  ngap)
    start_core --sbi inproc --transport udp
    for r in ${ngap_rates//,/ }; do
      echo "ngap: $r UEs/s" >&2
      probe_step ngap "$r"
      inns "$bin" --json ran --subscribers "$data/subs.csv" --data-dir "$data/db" \
        --transport udp --rate "$r" --duration "$((step - 2))" \
        >"$out/ngap-$r.load.json" 2>>"$out/load.log" || true
      wait "$probe_pid"
    done
    stop_core
    ;;
  sbi)
    start_core --sbi inproc --serve-sbi
    for r in ${sbi_rates//,/ }; do
      echo "sbi: $r 5G-AKA/s" >&2
      probe_step sbi "$r"
      inns "$bin" --json bench sbi --subscribers "$data/subs.csv" --target-pid "$core_pid" \
        --rate "$r" --connections 4 --streams 64 --warmup 0 --duration "$((step - 2))" \
        --out "$out/sbi-$r" >"$out/sbi-$r.load.json" 2>>"$out/load.log" || true
      wait "$probe_pid"
    done
    stop_core
    ;;
  gtpu)
    echo "gtpu: $gtpu_rates packets/s" >&2
    "$bin" --json bench upf --rates "$gtpu_rates" --paths tun --duration "$((step - 2))" \
      --out "$out/gtpu" >"$out/gtpu.json" 2>>"$out/load.log"
    ;;
  *) echo "unknown workload $w" >&2; exit 2 ;;
  esac
done

python3 - "$out" "$ngap_rates" "$sbi_rates" <<'PY'
import json, os, sys
out, ngap_rates, sbi_rates = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
def stage(p, name):
    return next((s for s in p["stages"] if s["name"] == name), {"count": 0, "time_ns": 0})
rows = []
def row(kind, rate, msgs, unit, p):
    rx = stage(p, "netif_receive_skb")["count"]
    sirq, borrowed = stage(p, "softirq_net_rx"), stage(p, "softirq_net_rx_borrowed")
    per = lambda v: v / msgs if msgs else 0.0
    rows.append({
        "workload": kind, "rate": rate, "unit": unit, "messages": msgs, "packets": rx,
        "packets_per_message": per(rx),
        "softirq_ns_per_message": per(sirq["time_ns"]),
        "netif_receive_skb_ns_per_message": per(stage(p, "netif_receive_skb")["time_ns"]),
        "softirq_ns_per_packet": sirq["time_ns"] / rx if rx else 0.0,
        "borrowed_share": borrowed["time_ns"] / sirq["time_ns"] if sirq["time_ns"] else 0.0,
        "packets_per_poll": p["napi"]["packets_per_poll"],
        "wakeups_per_message": per(stage(p, "sched_wakeup")["count"]),
        "drops": sum(d["count"] for d in p["drops"]),
    })
for r in ngap_rates:
    f = f"{out}/ngap-{r}.probe.json"
    if not os.path.exists(f): continue
    p, l = json.load(open(f)), json.load(open(f"{out}/ngap-{r}.load.json"))
    msgs = l.get("procedures_completed", 0)
    row("ngap", r, msgs, "procedure (registration or deregistration)", p)
for r in sbi_rates:
    f = f"{out}/sbi-{r}.probe.json"
    if not os.path.exists(f): continue
    p, l = json.load(open(f)), json.load(open(f"{out}/sbi-{r}.load.json"))
    msgs = l["cases"][0]["ok"] if l.get("cases") else 0
    row("sbi", r, msgs, "5G-AKA (POST and confirmation PUT)", p)
if os.path.exists(f"{out}/gtpu.json"):
    g = json.load(open(f"{out}/gtpu.json"))
    for s in g["steps"]:
        st = {x["stage"]: x for x in s.get("receive_path") or []}
        rows.append({
            "workload": "gtpu", "rate": s.get("target_pps") or "max", "unit": "GTP-U packet delivered",
            "messages": s["received"],
            "packets_per_message": st.get("netif_receive_skb", {}).get("per_packet", 0.0),
            "softirq_ns_per_message": st.get("softirq_net_rx", {}).get("ns_per_packet", 0.0),
            "netif_receive_skb_ns_per_message": st.get("netif_receive_skb", {}).get("ns_per_packet", 0.0),
            "packets_per_poll": s.get("packets_per_poll") or 0.0,
            "drops": sum((s.get("kernel_drops") or {}).values()),
        })
json.dump({"note": "loopback workloads (ngap, sbi) receive both directions in the namespace; gtpu is over veth", "rows": rows},
          open(f"{out}/summary.json", "w"), indent=1)
print("| workload | rate | messages | packets/msg | softirq ns/msg | netif_receive_skb ns/msg | pkt/poll | borrowed | wake-ups/msg | drops |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['workload']} | {r['rate']} | {r['messages']} | {r['packets_per_message']:.2f} | "
          f"{r['softirq_ns_per_message']:.0f} | {r['netif_receive_skb_ns_per_message']:.0f} | "
          f"{r['packets_per_poll']:.2f} | {r.get('borrowed_share', 0)*100:.0f} % | "
          f"{r.get('wakeups_per_message', 0):.2f} | {r['drops']} |")
PY
