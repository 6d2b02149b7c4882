#!/usr/bin/env bash
# Instructions per routed NGAP message on the worker that reads the association: the
# `route_cost` example of crates/nf under callgrind, routing a captured UPLINK NAS TRANSPORT
# and INITIAL UE MESSAGE with ngap::peek (today's route) and with the full decode that
# routing used before. Each figure is (Ir of 1001 routings - Ir of 1) / 1000, so process
# start-up and the one-off checks cancel out.
#
# Usage: scripts/route-cost.sh [EXAMPLE]
#   EXAMPLE  the built example (default target/release/examples/route_cost; build it with
#            `cargo build --release -p nf --example route_cost`)
set -euo pipefail

bin=${1:-target/release/examples/route_cost}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ir() { # ir HOW WHICH N
  valgrind --tool=callgrind --callgrind-out-file="$work/out" "$bin" "$1" "$2" "$3" \
    >/dev/null 2>"$work/err"
  awk '/^summary:/ {print $2}' "$work/out"
}

for which in ul initial; do
  for how in decode peek; do
    one=$(ir "$how" "$which" 1)
    many=$(ir "$how" "$which" 1001)
    echo "$which $how: $(((many - one) / 1000)) instructions per message"
  done
done
