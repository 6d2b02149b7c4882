#!/usr/bin/env bash
# Everything CI checks, in order: formatting, lints, the test suite (unit, integration, the
# root-only namespace and raw-socket tests, interop with libusrsctp, tshark checks), and a
# bounded run of every fuzz target.
#
#   FUZZ_SECONDS  seconds per fuzz target (default 20; 0 skips fuzzing)
#   CARGO_TARGET_DIR  defaults to ~/.cache/steer5g/target so repeated runs are warm
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/steer5g/target}"
export CARGO_TERM_COLOR=never
# In CI a test that needs root, namespaces or BPF fails instead of skipping.
# And every core a test starts must load its sk_reuseport programs (STEER5G_REQUIRE_BPF makes
# a failed BPF load fatal), so that CI never passes on the fallback path by accident; tests of
# the fallback ask for it explicitly.
if [ -n "${CI:-}" ]; then
  export STEER5G_REQUIRE_PRIV=1
  export STEER5G_REQUIRE_BPF=1
  # A fresh clone each run: incremental state would only fill the disk.
  export CARGO_INCREMENTAL=0
fi

step() { echo; echo "=== $* ==="; }

# The target cache outlives runs and grows with every tree it has built (each checkout path
# has its own artifacts); a full disk kills the linker. Below 20 GiB free, drop what is
# cheapest to rebuild first, then the whole cache: a cold run fits in CI's time, a full disk
# does not.
free_gib() {
  mkdir -p "$CARGO_TARGET_DIR"
  df -P -k "$CARGO_TARGET_DIR" | awk 'NR==2 {print int($4 / 1048576)}'
}
min_free_gib="${STEER5G_MIN_FREE_GIB:-20}"
if [ "$(free_gib)" -lt "$min_free_gib" ]; then
  echo "disk: $(free_gib) GiB free under $CARGO_TARGET_DIR; dropping incremental and fuzz caches"
  rm -rf "$CARGO_TARGET_DIR"/{debug,release}/incremental "$CARGO_TARGET_DIR/fuzz" "$CARGO_TARGET_DIR/tmp"
fi
if [ "$(free_gib)" -lt "$min_free_gib" ]; then
  echo "disk: $(free_gib) GiB free; dropping the whole target cache (this run builds cold)"
  rm -rf "$CARGO_TARGET_DIR"
fi
echo "disk: $(free_gib) GiB free under $CARGO_TARGET_DIR"

step "rustfmt"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "layering"
# The sans-IO NF crate links no runtime, BPF loader or UPF; the identifier layouts (which the
# BPF build scripts use too) link nothing at all.
nf_deps=$(cargo tree -p nf -e normal --locked --prefix none | sed 's/ (\*)$//')
ids_deps=$(cargo tree -p ids -e normal --locked --prefix none | sed 's/ (\*)$//')
bad_nf=$(grep -E '^(tokio|libbpf|steer|upf)' <<<"$nf_deps" | sort -u || true)
bad_ids=$(grep -v '^ids ' <<<"$ids_deps" | sort -u || true)
[ -z "$bad_nf" ] || printf 'nf depends on:\n%s\n' "$bad_nf"
[ -z "$bad_ids" ] || printf 'ids depends on:\n%s\n' "$bad_ids"
[ -z "$bad_nf$bad_ids" ] || exit 1
echo "nf: no tokio, libbpf, steer or upf; ids: no dependencies"

step "tests"
log="$(mktemp)"
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log"
passed=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')
rm -f "$log"

fuzz_seconds="${FUZZ_SECONDS:-20}"
if [ "$fuzz_seconds" != 0 ] && [ "${STEER5G_SKIP_FUZZ:-0}" != 1 ]; then
  step "fuzz (${fuzz_seconds}s per target, nightly)"
  for target in $(cd fuzz && cargo +nightly fuzz list); do
    echo "--- fuzz $target"
    # Fuzz into a scratch copy of the saved corpus: the committed corpus stays small and the
    # stable test suite replays it.
    work="$(mktemp -d)"
    cp -r "fuzz/corpus/$target/." "$work/" 2>/dev/null || true
    (cd fuzz && cargo +nightly fuzz run --target-dir "$CARGO_TARGET_DIR/fuzz" "$target" "$work" -- \
        -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tail -n 12)
    rm -rf "$work"
  done
fi

step "done"
# The summary line CI reads: every test binary's counts added up.
echo "tests: $passed passed, $failed failed"
