#!/usr/bin/env bash
# Installs what building and testing steer5g needs on Debian 12: the system packages
# (compilers, BPF toolchain, tshark, libusrsctp, nftables...) and cargo-fuzz for the nightly
# toolchain. Safe to run again: it installs only what is missing.
set -euo pipefail

pkgs=(
  gcc g++ make clang llvm pkg-config    # C peers, BPF programs, AWS-LC
  openssl                               # `openssl speed`, the reference figure of the benches
  bpftool                               # vmlinux.h for the sockmap program (CO-RE)
  libelf-dev zlib1g-dev libbpf-dev      # libbpf-rs; libelf.a and libz.a for the static link
  iproute2 nftables ethtool             # namespaces, loss injection, offloads
  procps                                # sysctl in the lab namespaces, kill in the process tests
  tshark tcpdump                        # captures checked against Wireshark's dissectors
  libusrsctp-dev                        # a real SCTP peer that no one here wrote
  valgrind                              # instruction counts
  postgresql-15                         # the subscriber store's PostgreSQL backend, under test
  yamllint                              # the Kubernetes manifests of contrib/k8s
  bpftrace                              # the probe checked against an independent tracer
  systemd                               # systemd-analyze verify of contrib/systemd
  git ca-certificates
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "installing: ${missing[*]}" >&2
  # tshark's package asks whether non-root users may capture: noninteractive takes the default.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust with rustup (stable 1.95 or newer)" >&2
  exit 1
fi
if [ "${STEER5G_SKIP_FUZZ:-0}" != 1 ] && ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked >&2
fi
