#!/usr/bin/env bash
# Packs the scaling kit: a release steer5g that runs on another x86-64 Linux without this
# machine's libbpf, libelf and zlib (linked statically; the BPF objects are inside the binary)
# and README-KIT.md, into one archive, OUT_DIR/steer5g-kit-<commit>-x86_64-linux.tar.gz.
# Then checks the archive as a stranger would get it:
#   - extracted into an empty directory, `env -i LD_LIBRARY_PATH= ./steer5g bench scale --help`;
#   - as root, the same in a mount namespace where libelf.so.1, libz.so.1 and libbpf.so.1 are
#     hidden (bind-mounted over by /dev/null), as on a Debian 12 without the -dev packages;
#   - a short `bench scale --max-workers 1` from the extracted directory (skip: --no-run).
#
#   ./scripts/pack-kit.sh [--no-run] [OUT_DIR]        (OUT_DIR default: dist)
#
# CARGO_TARGET_DIR is honoured (default ~/.cache/steer5g/target).
set -euo pipefail
cd "$(dirname "$0")/.."

run=1
if [ "${1:-}" = "--no-run" ]; then
  run=0
  shift
fi
out_dir="${1:-dist}"
target="${CARGO_TARGET_DIR:-$HOME/.cache/steer5g/target}"
export CARGO_TARGET_DIR="$target"

if [ "$(uname -m)" != x86_64 ]; then
  echo "pack-kit: the kit is built for x86-64 Linux; this is $(uname -m)" >&2
  exit 2
fi
for f in /usr/lib/x86_64-linux-gnu/libelf.a /usr/lib/x86_64-linux-gnu/libz.a; do
  [ -f "$f" ] || { echo "pack-kit: $f missing: run scripts/install-deps.sh (libelf-dev, zlib1g-dev)" >&2; exit 2; }
done

echo "pack-kit: building the release binary in $target" >&2
cargo build --release -p steer5g >&2
bin="$target/release/steer5g"

# The binary must not need the libraries it links statically.
if ldd "$bin" | grep -E 'lib(bpf|elf|z)[.-]'; then
  echo "pack-kit: $bin still needs the shared objects above" >&2
  exit 1
fi

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit-dirty"
fi
name="steer5g-kit-$commit-x86_64-linux"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
install -s -m 0755 "$bin" "$stage/$name/steer5g"
install -m 0644 scripts/kit/README-KIT.md "$stage/$name/README-KIT.md"
{
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -r)"
  echo "version: $("$bin" --version)"
  echo "shared objects needed (ldd):"
  ldd "$bin" | sed 's/^/  /'
} > "$stage/$name/BUILD-INFO.txt"
mkdir -p "$out_dir"
archive="$(cd "$out_dir" && pwd)/$name.tar.gz"
tar -C "$stage" -czf "$archive" "$name"

# Check the archive from an empty directory, with an empty environment.
check="$stage/check"
mkdir "$check"
tar -C "$check" -xzf "$archive"
cd "$check/$name"
env -i LD_LIBRARY_PATH= ./steer5g bench scale --help > /dev/null
echo "pack-kit: bench scale --help runs from the extracted archive with an empty environment" >&2

if [ "$(id -u)" -eq 0 ] && command -v unshare > /dev/null; then
  hide=""
  for lib in libelf.so.1 libz.so.1 libbpf.so.1; do
    for dir in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
      p="$(readlink -f "$dir/$lib" 2>/dev/null || true)"
      [ -n "$p" ] && [ -f "$p" ] && hide="$hide mount --bind /dev/null $p;"
    done
  done
  unshare -m sh -c "$hide env -i LD_LIBRARY_PATH= ./steer5g bench scale --help > /dev/null"
  echo "pack-kit: and with libelf, zlib and libbpf hidden from the loader" >&2
fi

if [ "$run" = 1 ]; then
  env -i LD_LIBRARY_PATH= PATH=/usr/bin:/bin ./steer5g bench scale --max-workers 1 --budget-s 45 \
    --out "$check/results" > "$check/scale.txt"
  grep -q '"within_budget": true' "$check/results/scale.json" || {
    echo "pack-kit: the short run from the archive did not finish within its budget" >&2
    exit 1
  }
  echo "pack-kit: a 45 s bench scale ran from the extracted archive" >&2
fi

echo "$archive"
