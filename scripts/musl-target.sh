#!/usr/bin/env bash
# Adds the x86_64-unknown-linux-musl target (rustup) when it is missing: rust/policy/build.rs
# links the sandbox helper against musl when that target's std is installed (glibc's start-up
# probes the CPU with cpuid, ~0.65 ms per command in a VM). Exit status: 0 when the target is
# there; callers decide whether its absence is fatal (build-wheels) or not (CI).
set -u
command -v rustup >/dev/null || { echo "musl-target: rustup not found" >&2; exit 1; }
rustup target list --installed | grep -qx x86_64-unknown-linux-musl && exit 0
rustup target add x86_64-unknown-linux-musl
