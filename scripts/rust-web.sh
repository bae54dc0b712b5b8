#!/usr/bin/env bash
# Debian's own Rust compiler of one version (the rustc-web and cargo-web
# packages), unpacked into a directory of its own beside the pinned
# toolchain, never over it; prints that directory's bin/, which holds
# `cargo` and `rustc` wrappers to call by path.
#
#   scripts/rust-web.sh 1.85.0              # the MSRV compiler
#   scripts/rust-web.sh 1.96.0 --src        # and rust-web-src, for -Zbuild-std,
#                                           # and LLVM's linker, for wasm
#
# The directory is $FLAKEGEN_TOOLCHAINS_DIR/rust-web-<version> (default
# /var/cache/flakegen), outside the repository, kept from run to run. The
# shared libraries the compiler and cargo need (those their packages
# name: libllvm, libgit2 and others) come from the distribution's
# packages, installed where missing (root).
set -euo pipefail

version=${1:?usage: scripts/rust-web.sh VERSION [--src]}
src=${2:-}
cache=${FLAKEGEN_TOOLCHAINS_DIR:-/var/cache/flakegen}
home="$cache/rust-web-$version"

say() { printf 'rust-web: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# The package version of a Rust version, as the archive lists it.
package_version() {
  apt-cache madison "$1" | awk -v v="$version" '$3 ~ "^"v"\\+" { print $3; exit }'
}

needs() {
  local missing=()
  for lib in "$@"; do
    dpkg -s "$lib" >/dev/null 2>&1 || missing+=("$lib")
  done
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: apt-get install ${missing[*]} (needs root)"
  say "installing ${missing[*]} from the distribution's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}

# The archive's package version of rustc-web $version, the index updated
# once if it lists none.
archive_version() {
  local pv
  pv=$(package_version rustc-web)
  if [ -z "$pv" ]; then
    [ "$(id -u)" -eq 0 ] && DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    pv=$(package_version rustc-web)
  fi
  [ -n "$pv" ] || die "no rustc-web $version in the distribution's archive (apt-cache madison rustc-web)"
  echo "$pv"
}

unpack() {
  local packages=("$@") pv
  pv=$(archive_version)
  local work
  work=$(mktemp -d)
  say "unpacking Debian's Rust $version ($pv) into $home"
  (
    cd "$work"
    # apt's sandbox user cannot write here: a download as root says so.
    apt-get download "${packages[@]/%/=$pv}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true
    mkdir -p root
    for deb in ./*.deb; do dpkg -x "$deb" root; done
  )
  rm -rf "$home.new"
  mv "$work/root" "$home.new"
  rm -rf "$work"
}

short=${version%.*}
packages=(rustc-web cargo-web libstd-rust-web-dev "libstd-rust-web-$short")
[ "$src" = --src ] && packages+=(rust-web-src)
marker="$home/.complete${src:+-src}"
if [ ! -f "$marker" ]; then
  # The shared libraries its compiler and its cargo link, as their
  # packages name them: the LLVM (1.85: 19; 1.96: 22), libgit2 and the rest.
  pv=$(archive_version)
  mapfile -t libraries < <(apt-cache show "cargo-web=$pv" "libstd-rust-web-$short=$pv" |
    sed -n 's/^Depends: //p' | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g' |
    grep '^lib' | grep -v '^libstd-rust' | sort -u)
  [ ${#libraries[@]} -gt 0 ] || die "cargo-web and libstd-rust-web-$short name no libraries"
  needs "${libraries[@]}"
  # For --src, the linker of targets that link with LLVM's (wasm, bare
  # metal): Debian's lld of the compiler's own LLVM, which rustc calls by
  # the name it gives its own.
  if [ "$src" = --src ]; then
    llvm=$(printf '%s\n' "${libraries[@]}" | sed -n 's/^libllvm\([0-9][0-9]*\)$/\1/p')
    [ -n "$llvm" ] || die "no libllvm among the compiler's libraries: ${libraries[*]}"
    needs "lld-$llvm"
  fi
  unpack "${packages[@]}"
  rm -rf "$home"
  mv "$home.new" "$home"
  mkdir -p "$home/bin"
  # rustc finds its driver library by the system's path, not its own.
  cat > "$home/bin/rustc" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$home/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$home/usr/bin/rustc" "\$@"
EOF
  cat > "$home/bin/rustdoc" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$home/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$home/usr/bin/rustdoc" "\$@"
EOF
  cat > "$home/bin/cargo" <<EOF
#!/bin/sh
RUSTC="$home/bin/rustc" RUSTDOC="$home/bin/rustdoc" exec "$home/usr/bin/cargo" "\$@"
EOF
  chmod +x "$home/bin/rustc" "$home/bin/rustdoc" "$home/bin/cargo"
  # -Zbuild-std looks for the library's sources in the sysroot, where
  # Debian's package does not link them.
  if [ "$src" = --src ]; then
    ln -sfn "../../../src/rustc-$version" "$home/usr/lib/rustlib/src/rust"
    mkdir -p "$home/usr/lib/rustlib/x86_64-unknown-linux-gnu/bin"
    ln -sfn "/usr/lib/llvm-$llvm/bin/lld" "$home/usr/lib/rustlib/x86_64-unknown-linux-gnu/bin/rust-lld"
  fi
  got=$("$home/bin/rustc" --version)
  case "$got" in
    "rustc $version "*) ;;
    *) die "unpacked a compiler that says '$got', not $version" ;;
  esac
  touch "$marker"
fi
echo "$home/bin"
