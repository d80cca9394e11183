#!/usr/bin/env bash
# Fail when the committed wheels/ no longer match the sources or requirements.lock.
#
# Why: install.sh installs only what is in wheels/, so a source change without a rebuild would
# ship an old binary without anyone noticing. CI runs this; fix a failure with
# scripts/build-wheels.sh and commit wheels/, requirements.lock and wheels/SOURCE_STAMP.
#
# Checks, in order:
#   1. wheels/SOURCE_STAMP equals scripts/source-stamp.sh (the same code that wrote it);
#   2. there is exactly one yuyao wheel in wheels/, of version VERSION, pinned in requirements.lock
#      with its sha256;
#   3. every wheel pinned in requirements.lock is in wheels/ with that sha256, and wheels/ holds
#      no wheel the lock does not pin (install.sh would refuse or ignore it).
set -euo pipefail
# No silent death under set -e: name the command that failed.
trap 'printf "check-wheel-stamp: error: unexpected failure (line %s: %s)\\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

fail=0
err() { printf 'check-wheel-stamp: FAIL: %s\n' "$*" >&2; fail=1; }
rebuild_hint='run scripts/build-wheels.sh and commit wheels/ and requirements.lock'

# --- 1. source stamp -------------------------------------------------------------------------------
current="$(scripts/source-stamp.sh)"
if [[ ! -f wheels/SOURCE_STAMP ]]; then
    err "wheels/SOURCE_STAMP is missing; $rebuild_hint"
else
    recorded="$(awk 'NF { print $1; exit }' wheels/SOURCE_STAMP)"
    if [[ $recorded != "$current" ]]; then
        err "wheels/ is stale: the sources (rust/, python/, Cargo.toml, Cargo.lock, pyproject.toml, VERSION) changed since the wheel was built (stamp $recorded, sources now $current); $rebuild_hint"
    fi
fi

# --- 2./3. wheels against requirements.lock ------------------------------------------------------
if [[ ! -f requirements.lock ]]; then
    err "requirements.lock is missing; $rebuild_hint"
else
    # Parse pip's hash-checking format: "name==version \" then "    --hash=sha256:HEX" lines.
    declare -A lock_hash=()   # name -> sha256
    declare -A lock_version=() # name -> version
    name=""
    while IFS= read -r line || [[ -n $line ]]; do
        line="${line%%#*}"
        if [[ $line =~ ^([A-Za-z0-9][A-Za-z0-9._-]*)==([^[:space:]\\]+) ]]; then
            name="${BASH_REMATCH[1],,}"
            lock_version[$name]="${BASH_REMATCH[2]}"
        fi
        if [[ $line =~ --hash=sha256:([0-9a-fA-F]{64}) ]]; then
            [[ -n $name ]] && lock_hash[$name]="${BASH_REMATCH[1],,}"
        fi
    done < requirements.lock

    declare -A wheel_by_hash=()   # sha256 -> file
    shopt -s nullglob
    for w in wheels/*.whl; do
        h="$(sha256sum "$w" | cut -d' ' -f1)"
        wheel_by_hash[$h]="$w"
    done
    yuyao_wheels=(wheels/yuyao-*.whl)
    shopt -u nullglob

    version="$(tr -d '[:space:]' < VERSION)"
    if (( ${#yuyao_wheels[@]} == 0 )); then
        err "no yuyao wheel in wheels/; $rebuild_hint"
    elif (( ${#yuyao_wheels[@]} > 1 )); then
        err "more than one yuyao wheel in wheels/: ${yuyao_wheels[*]}; $rebuild_hint"
    else
        w="${yuyao_wheels[0]}"
        [[ $(basename "$w") == yuyao-"$version"-* ]] \
            || err "$w is not version $version (VERSION); $rebuild_hint"
        if [[ -z ${lock_hash[yuyao]:-} ]]; then
            err "requirements.lock pins no yuyao wheel; $rebuild_hint"
        elif [[ $(sha256sum "$w" | cut -d' ' -f1) != "${lock_hash[yuyao]}" ]]; then
            err "$w does not have the sha256 pinned in requirements.lock; $rebuild_hint"
        fi
        [[ ${lock_version[yuyao]:-} == "$version" ]] \
            || err "requirements.lock pins yuyao==${lock_version[yuyao]:-?}, VERSION is $version; $rebuild_hint"
    fi

    for n in "${!lock_hash[@]}"; do
        [[ -n ${wheel_by_hash[${lock_hash[$n]}]:-} ]] \
            || err "requirements.lock pins $n==${lock_version[$n]} but no wheel in wheels/ has its sha256; $rebuild_hint"
    done
    declare -A pinned=()
    for n in "${!lock_hash[@]}"; do pinned[${lock_hash[$n]}]=1; done
    for h in "${!wheel_by_hash[@]}"; do
        [[ -n ${pinned[$h]:-} ]] \
            || err "${wheel_by_hash[$h]} is not pinned in requirements.lock (stale?); $rebuild_hint"
    done
fi

if (( fail )); then
    exit 1
fi
echo "check-wheel-stamp: ok (wheels/ match the sources and requirements.lock; stamp $current)"
