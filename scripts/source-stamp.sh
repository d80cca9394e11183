#!/usr/bin/env bash
# Print the source stamp of the yuyao wheel: one sha256 over the files the wheel is built from.
#
# Why: wheels/ is committed so that install.sh works offline, and a committed binary can silently
# go stale when someone edits rust/ or python/ without rebuilding. build-wheels.sh writes this
# stamp to wheels/SOURCE_STAMP and check-wheel-stamp.sh recomputes it, so both MUST use this one
# script (one definition of "the sources").
#
# Usage: scripts/source-stamp.sh              print the stamp (64 hex digits)
#        scripts/source-stamp.sh --list       print the files that go into it, one per line
#        scripts/source-stamp.sh --manifest   print the "sha256  path" lines the stamp hashes
#                                             (diff two of them to see what changed)
#
# The file set: rust/**, python/**, Cargo.toml, Cargo.lock, pyproject.toml, VERSION, taken from
# `git ls-files` (tracked) plus untracked files that git does not ignore, so the stamp is the same
# before and after the lead commits. Excluded: tests/benches/docs folders (they do not change the
# wheel) and build droppings that may not be gitignored yet (__pycache__, *.pyc, the *.so that
# `maturin develop` writes into python/yuyao/, target/).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Paths (relative to the repo root) that make up the wheel.
roots=(rust python Cargo.toml Cargo.lock pyproject.toml VERSION)

list_files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # --cached: tracked; --others --exclude-standard: untracked but not ignored.
        # A tracked file deleted from the work tree is listed by --cached; the -f test drops it so
        # the stamp describes what is on disk (what maturin would build).
        git ls-files -z --cached --others --exclude-standard -- "${roots[@]}"
    else
        # An exported tree without .git (e.g. a release tarball): same set from the file system.
        local r
        for r in "${roots[@]}"; do
            [[ -e $r ]] && find "$r" \( -type f -o -type l \) -print0
        done
    fi | tr '\0' '\n' \
       | grep -Ev '(^|/)(tests|benches|docs|target|__pycache__)/|\.(pyc|pyo|so|pyd)$' \
       | LC_ALL=C sort -u \
       | while IFS= read -r f; do if [[ -f $f ]]; then printf '%s\n' "$f"; fi; done
}

# "content-hash  path" lines: hashing these (not just the contents) means that renaming a file
# or moving content between files changes the stamp; the order is fixed by the sort above
# (LC_ALL=C: locale-independent).
manifest() {
    local files
    files="$(list_files)"
    if [[ -z $files ]]; then
        echo "source-stamp: no source files found under $root" >&2
        return 1
    fi
    printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 sha256sum --
}

case ${1:-} in
    --list) list_files ;;
    --manifest) manifest ;;
    '') m="$(manifest)"; printf '%s\n' "$m" | sha256sum | cut -d' ' -f1 ;;
    *) echo "usage: $0 [--list|--manifest]" >&2; exit 2 ;;
esac
