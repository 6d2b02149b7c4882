#!/usr/bin/env bash
# Builds the demo image of contrib/container/Containerfile without any registry: a Debian 12
# root filesystem from the Debian mirror (debootstrap), this tree's release binary, buildah.
# Needs root, debootstrap and buildah (apt-get install debootstrap buildah).
#   contrib/container/build.sh [TAG]      then: podman run --rm TAG   (or buildah run)
set -euo pipefail
cd "$(dirname "$0")/../.."
tag="${1:-steer5g-demo}"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cargo build --release --locked -p steer5g
cp "${CARGO_TARGET_DIR:-target}/release/steer5g" "$ctx/steer5g"
debootstrap --variant=minbase bookworm "$ctx/rootfs" http://deb.debian.org/debian
tar -C "$ctx/rootfs" -cf "$ctx/rootfs.tar" .
rm -rf "$ctx/rootfs"
cp contrib/container/Containerfile "$ctx/"
buildah bud -f "$ctx/Containerfile" -t "$tag" "$ctx"
echo "built $tag: run it with 'podman run --rm $tag' (control plane only without privileges)" >&2
