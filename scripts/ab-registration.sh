#!/usr/bin/env bash
# Core CPU per registration of two trees, measured alternately on one machine.
#
# Builds the release binary of BASE (a commit, default b7d73ba: the tree before the per-worker
# host) and of the working tree, then runs `bench registration` on them in turns A/B/A/B...
# (ROUNDS turns each), every turn sweeping both SBI modes (inproc, h2c) and both state modes
# (sharded, locked). Alternating spreads the drift of a shared machine over both trees. It
# prints, per case, the median core CPU per registration of each tree and their ratio, and the
# sharded/locked ratio of each tree; OUT gets every turn's JSON and the summary as JSON.
#
#   BASE=b7d73ba ROUNDS=5 UES=4000 WARMUP=1000 WORKERS=1 OUT=ab-out ./scripts/ab-registration.sh
#
# BASE_BIN=path uses an already built release binary of BASE instead of building it.
# SUCI=null takes the SUCI deconcealment out of both trees (default a): with it, a change of
# the X25519 library would hide or make a difference in the rest of the path.
set -euo pipefail
cd "$(dirname "$0")/.."

base="${BASE:-b7d73ba}"
rounds="${ROUNDS:-5}"
ues="${UES:-4000}"
# A larger warm-up than the bench's default: the first case of each process otherwise pays
# for first-touch allocations and lazy set-up, and that case is always the same one.
warmup="${WARMUP:-1000}"
workers="${WORKERS:-1}"
suci="${SUCI:-a}"
out="${OUT:-ab-registration-$(date +%Y%m%d-%H%M%S)}"
target="${CARGO_TARGET_DIR:-$HOME/.cache/steer5g/target}"
mkdir -p "$out"

echo "building the working tree (B)" >&2
cargo build --release --locked -q -p steer5g
new_bin="$out/steer5g-new"
cp "$target/release/steer5g" "$new_bin"

base_bin="$out/steer5g-base"
if [ -n "${BASE_BIN:-}" ]; then
  cp "$BASE_BIN" "$base_bin"
else
  echo "building $base (A)" >&2
  wt="$(mktemp -d)"
  cleanup() { git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"; }
  trap cleanup EXIT
  git worktree add --detach -q "$wt" "$base"
  # A separate target directory: the two trees' workspace crates share names and paths
  # relative to their roots, and one directory would mix their artifacts.
  (cd "$wt" && CARGO_TARGET_DIR="$target-ab-base" cargo build --release --locked -q -p steer5g)
  cp "$target-ab-base/release/steer5g" "$base_bin"
fi

run() { # tree binary turn
  "$2" --json bench registration --suci "$suci" --sbi inproc,h2c --state sharded,locked \
    --workers "$workers" --ues "$ues" --warmup-ues "$warmup" --rounds 1 2>/dev/null >"$out/$1-$3.json"
}
for i in $(seq 1 "$rounds"); do
  echo "turn $i/$rounds: A" >&2
  run base "$base_bin" "$i"
  echo "turn $i/$rounds: B" >&2
  run new "$new_bin" "$i"
done

python3 - "$out" "$rounds" "$base" "$(git rev-parse --short HEAD)" <<'EOF'
import json, statistics, sys
out, rounds, base, head = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
cpu = {}
for tree in ("base", "new"):
    for i in range(1, rounds + 1):
        with open(f"{out}/{tree}-{i}.json") as f:
            for c in json.load(f)["cases"]:
                cpu.setdefault((tree, c["sbi"], c["state"]), []).append(c["core_cpu_us_per_registration"])
med = {k: statistics.median(v) for k, v in cpu.items()}
rows = []
print(f"core CPU per registration, median of {rounds} alternated turns (A = {base}, B = {head})")
print(f"{'sbi':7} {'state':8} {'A µs':>9} {'B µs':>9} {'B/A':>6}")
for sbi in ("inproc", "h2c"):
    for state in ("sharded", "locked"):
        a, b = med[("base", sbi, state)], med[("new", sbi, state)]
        rows.append({"sbi": sbi, "state": state, "base_us": a, "new_us": b, "ratio": b / a,
                     "base_rounds": cpu[("base", sbi, state)], "new_rounds": cpu[("new", sbi, state)]})
        print(f"{sbi:7} {state:8} {a:9.1f} {b:9.1f} {b / a:6.3f}")
ratios = {}
for tree in ("base", "new"):
    for sbi in ("inproc", "h2c"):
        r = med[(tree, sbi, "sharded")] / med[(tree, sbi, "locked")]
        ratios[f"{tree}_{sbi}"] = r
        print(f"sharded/locked {tree:4} {sbi:6} {r:.3f}")
with open(f"{out}/summary.json", "w") as f:
    json.dump({"base": base, "new": head, "rounds": rounds, "cases": rows,
               "sharded_over_locked": ratios}, f, indent=1)
EOF
