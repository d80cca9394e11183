#!/usr/bin/env bash
# Build the yuyao wheel and refresh everything install.sh needs to install offline:
#   wheels/yuyao-<VERSION>-cp39-abi3-manylinux*.whl   (Rust core + Python package, one wheel
#                                                      for every CPython >= 3.9 on x86_64 Linux)
#   wheels/<dependency>.whl                           (rich, prompt_toolkit and their deps)
#   requirements.lock                                 (exact pins + sha256 of every wheel)
#   wheels/SOURCE_STAMP                               (scripts/source-stamp.sh at build time)
#
# Usage: scripts/build-wheels.sh [--upgrade-deps]
#   --upgrade-deps   resolve the dependencies afresh from PyPI instead of keeping the versions
#                    already pinned in requirements.lock (the default keeps them, so rebuilding
#                    yuyao after a source change does not churn the dependency wheels).
# Environment:
#   PYTHON             interpreter that runs pip/maturin (default: the active venv, else python3)
#   CARGO_TARGET_DIR   default <repo>/target/wheel (kept apart from the dev build's target/)
#   CARGO_BUILD_JOBS   passed through to cargo; set it to 1 on a shared machine
#
# Needs the network for PyPI (maturin, ziglang, dependency wheels) and crates.io.
set -euo pipefail
# No silent death under set -e: name the command that failed.
trap 'printf "build-wheels: error: unexpected failure (line %s: %s)\\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

die() { printf 'build-wheels: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'build-wheels: %s\n' "$*"; }

upgrade_deps=0
for arg in "$@"; do
    case $arg in
        --upgrade-deps) upgrade_deps=1 ;;
        -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg (see --help)" ;;
    esac
done

# The oldest CPython the wheels must serve; matches pyo3's abi3-py39 and requires-python.
min_py=3.9

# --- 1. VERSION must equal the workspace version ------------------------------------------------
# The wheel's version comes from Cargo (maturin reads the crate version); VERSION is what the
# artifact root advertises. If they differ, the lock and the installed `yuyao --version` disagree.
[[ -f VERSION ]] || die "VERSION file missing at $root"
version="$(tr -d '[:space:]' < VERSION)"
[[ -n $version ]] || die "VERSION is empty"
# Read `version = "x"` inside [workspace.package] only (a crate's own version must not match).
cargo_version="$(awk '
    /^[[:space:]]*\[/ { in_ws = ($0 ~ /^[[:space:]]*\[workspace\.package\][[:space:]]*$/) ; next }
    in_ws && /^[[:space:]]*version[[:space:]]*=/ {
        sub(/^[^=]*=[[:space:]]*"/, ""); sub(/".*$/, ""); print; exit
    }' Cargo.toml)"
[[ -n $cargo_version ]] || die "no version in [workspace.package] of Cargo.toml"
[[ $version == "$cargo_version" ]] \
    || die "VERSION says $version but Cargo.toml [workspace.package] says $cargo_version; make them equal"
say "version $version"

# --- 2. Tools: maturin + ziglang ------------------------------------------------------------------
# --zig links against glibc 2.17 symbols so the wheel is manylinux2014 whatever this machine's
# glibc is. ziglang comes from PyPI, like maturin. Use the caller's interpreter when it has both,
# else a private build venv (never pip-install into someone's system python).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/wheel}"
if [[ -z ${PYTHON:-} ]]; then
    if [[ -n ${VIRTUAL_ENV:-} && -x $VIRTUAL_ENV/bin/python ]]; then PYTHON="$VIRTUAL_ENV/bin/python"
    else PYTHON="$(command -v python3 || true)"; fi
fi
[[ -n $PYTHON ]] || die "python3 not found"
if ! "$PYTHON" -c 'import maturin, ziglang' >/dev/null 2>&1; then
    build_venv="$CARGO_TARGET_DIR/build-venv"
    if [[ ! -x $build_venv/bin/python ]]; then
        say "creating build venv $build_venv (maturin, ziglang)"
        "$PYTHON" -m venv "$build_venv"
    fi
    "$build_venv/bin/python" -m pip install -q --disable-pip-version-check 'maturin>=1.7,<2' ziglang \
        || die "could not install maturin and ziglang from PyPI into $build_venv"
    PYTHON="$build_venv/bin/python"
fi
py_bin="$(dirname "$PYTHON")"
# maturin finds zig as `python3 -m ziglang`: put this interpreter's bin dir first so it is ours.
export PATH="$py_bin:$PATH"
maturin=("$PYTHON" -m maturin)
say "maturin $("${maturin[@]}" --version | awk '{print $2}'), ziglang $("$PYTHON" -m ziglang version)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# --- 3. Build the yuyao wheel ---------------------------------------------------------------------
# Resolve Cargo.lock first (cargo writes it when it is missing or stale), so that the stamp taken
# before the build already sees the final Cargo.lock; a stamp that then changes during the build
# means someone edited sources meanwhile, and the wheel would not match them.
command -v cargo >/dev/null || die "cargo not found (install the Rust toolchain)"
cargo metadata --format-version 1 >/dev/null || die "cargo metadata failed (see above)"
scripts/source-stamp.sh --manifest > "$tmp/manifest.before" || die "scripts/source-stamp.sh failed"
stamp_before="$(scripts/source-stamp.sh)" || die "scripts/source-stamp.sh failed"

# The wheel's sandbox helper is linked against musl (see rust/policy/build.rs: glibc's start-up
# costs ~0.65 ms per command in a VM); that needs the musl target's std.
scripts/musl-target.sh || die "the x86_64-unknown-linux-musl target could not be added"
say "building the yuyao wheel (release, abi3 cp39, manylinux2014 via zig); CARGO_TARGET_DIR=$CARGO_TARGET_DIR"
# nice: this machine is shared with interactive work; a release build would otherwise hog it.
nice -n 19 "${maturin[@]}" build --release --zig --compatibility manylinux2014 \
    --target x86_64-unknown-linux-gnu --out "$tmp/yuyao" \
    || die "maturin build failed (see the compiler output above)"

shopt -s nullglob
built=("$tmp"/yuyao/yuyao-*.whl)
shopt -u nullglob
(( ${#built[@]} == 1 )) || die "expected one yuyao wheel from maturin, got ${#built[@]}"
yuyao_whl="${built[0]}"
yuyao_name="$(basename "$yuyao_whl")"
# One wheel for all CPython >= 3.9 (abi3) on any glibc >= 2.17 x86_64 distribution.
plat='(manylinux2014_x86_64|manylinux_2_17_x86_64)'
tag_re="^yuyao-${version//./\\.}-cp39-abi3-${plat}(\.${plat})?\.whl$"
[[ $yuyao_name =~ $tag_re ]] \
    || die "wheel $yuyao_name is not yuyao-$version-cp39-abi3-manylinux2014_x86_64 (check pyo3 abi3-py39 and VERSION)"
say "built $yuyao_name"

stamp_after="$(scripts/source-stamp.sh)" \
    || die "scripts/source-stamp.sh failed after the build (a source file vanished meanwhile?)"
if [[ $stamp_before != "$stamp_after" ]]; then
    scripts/source-stamp.sh --manifest > "$tmp/manifest.after"
    changed="$(diff "$tmp/manifest.before" "$tmp/manifest.after" | awk '/^[<>]/ { print $3 }' | sort -u | tr '\n' ' ')"
    die "sources changed while the wheel was building (${changed:-?}); run scripts/build-wheels.sh again"
fi

# --- 4. Dependency wheels -------------------------------------------------------------------------
# The dependencies are the wheel's own Requires-Dist (from pyproject's [project] dependencies),
# extras excluded. Resolved for the OLDEST supported CPython so every pick also installs on newer
# ones, and only as pure-python (none) or stable-ABI (abi3) wheels: a cp39-cp39 wheel would not
# load on 3.11. One resolution => exactly one version of each package.
mapfile -t reqs < <("$PYTHON" - "$yuyao_whl" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(meta).decode().splitlines():
        if line.startswith("Requires-Dist:"):
            req = line.split(":", 1)[1].strip()
            marker = req.split(";", 1)[1] if ";" in req else ""
            if "extra" not in marker:  # optional extras are not runtime dependencies
                print(req)
EOF
)
say "runtime requirements: ${reqs[*]:-(none)}"

pip_dl=("$PYTHON" -m pip download --disable-pip-version-check --no-input -q
        --only-binary=:all: --implementation cp --python-version "$min_py"
        --abi abi3 --abi none --platform manylinux2014_x86_64 -d "$tmp/deps")
constraints=()
if (( ! upgrade_deps )) && [[ -f requirements.lock ]]; then
    # Keep the versions already pinned (as constraints: they restrict versions, add nothing).
    grep -Eo '^[A-Za-z0-9][A-Za-z0-9._-]*==[^[:space:]\\]+' requirements.lock \
        | grep -v '^yuyao==' > "$tmp/constraints.txt" || true
    if [[ -s $tmp/constraints.txt ]]; then
        constraints=(-c "$tmp/constraints.txt")
        say "keeping the dependency versions pinned in requirements.lock (--upgrade-deps to refresh)"
    fi
fi
if (( ${#reqs[@]} )); then
    # Try wheels/ first (offline, already verified), then PyPI for anything missing. With
    # --upgrade-deps go straight to PyPI: wheels/ holds the old versions.
    if (( upgrade_deps )) || ! "${pip_dl[@]}" --no-index --find-links wheels "${constraints[@]}" "${reqs[@]}" >/dev/null 2>&1; then
        rm -rf "$tmp/deps"
        "${pip_dl[@]}" "${constraints[@]}" "${reqs[@]}" \
            || die "pip download failed; if a pinned version no longer satisfies pyproject.toml, rerun with --upgrade-deps"
    fi
fi
mkdir -p "$tmp/deps"

# --- 5. Lock file: exact pins + sha256, dependencies before dependents ---------------------------
# install.sh installs one wheel at a time with --no-deps in the order of this file, so the order
# is a topological one (yuyao last). The same file is a valid `pip install --require-hashes -r`.
cp "$yuyao_whl" "$tmp/deps/"
# memory-search's re-ranking encoder: a data-only wheel built apart, once, by
# scripts/build-memory-encoder-wheel.py; kept (and pinned) as it is.
shopt -s nullglob
for w in wheels/yuyao_memory_encoder-*.whl; do cp "$w" "$tmp/deps/"; done
shopt -u nullglob
"$PYTHON" - "$tmp/deps" "$tmp/requirements.lock" <<'EOF'
import hashlib, os, re, sys, zipfile

src, out = sys.argv[1], sys.argv[2]

def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()

dists = {}
for fn in sorted(os.listdir(src)):
    if not fn.endswith(".whl"):
        continue
    path = os.path.join(src, fn)
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist()
                    if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        name = version = None
        deps = []
        for line in z.read(meta).decode("utf-8").splitlines():
            if not line.strip():
                break  # headers end at the first blank line; the description follows
            key, _, val = line.partition(":")
            val = val.strip()
            if key == "Name":
                name = val
            elif key == "Version":
                version = val
            elif key == "Requires-Dist" and "extra" not in (val.split(";", 1) + [""])[1]:
                deps.append(canon(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", val).group(0)))
    key = canon(name)
    if key in dists:
        sys.exit(f"two versions of {name}: {dists[key]['file']} and {fn}")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    dists[key] = {"version": version, "deps": deps, "file": fn, "sha256": digest}

order, state = [], {}
def visit(k):  # depth-first topological sort; a dependency cycle is tolerated (pip allows it)
    if state.get(k):
        return
    state[k] = 1
    for d in dists[k]["deps"]:
        if d in dists:
            visit(d)
    order.append(k)

for k in sorted(dists, key=lambda k: (k == "yuyao", k)):  # yuyao last among equals
    visit(k)

with open(out, "w") as f:
    f.write("# Generated by scripts/build-wheels.sh -- do not edit by hand.\n"
            "# Every package is a wheel in wheels/; install offline with ./install.sh, or:\n"
            "#   pip install --no-index --find-links wheels --require-hashes -r requirements.lock\n"
            "# Order: dependencies before the packages that need them (install.sh follows it).\n")
    for k in order:
        d = dists[k]
        f.write(f"\n# {d['file']}\n{k}=={d['version']} \\\n    --hash=sha256:{d['sha256']}\n")
EOF

# --- 6. Smoke test before anything replaces the committed wheels ---------------------------------
# Install the new set exactly as the lock says (hash-checked, no index) into a throwaway venv and
# check that the extension loads and the command reports the version. A wheel that builds but
# does not import (e.g. no PyInit__core) must never reach wheels/.
say "smoke test: offline hash-checked install into a throwaway venv"
"$PYTHON" -m venv "$tmp/smoke"
"$tmp/smoke/bin/python" -m pip install -q --disable-pip-version-check --no-index \
    --find-links "$tmp/deps" --require-hashes -r "$tmp/requirements.lock" \
    || die "the new wheels do not install from requirements.lock (see pip's message above)"
(cd "$tmp" && "$tmp/smoke/bin/python" -c 'import yuyao._core, yuyao.agent_api') \
    || die "the built wheel installs but yuyao._core / yuyao.agent_api do not import (see above)"
smoke_version="$(cd "$tmp" && "$tmp/smoke/bin/yuyao" --version </dev/null)" \
    || die "the installed 'yuyao --version' failed"
[[ $(head -n 1 <<<"$smoke_version") == "yuyao $version" ]] \
    || die "'yuyao --version' printed '$smoke_version', expected 'yuyao $version'"
say "smoke test ok: $smoke_version"

# --- 7. Swap the new set into wheels/ -------------------------------------------------------------
# Anything not in the new set goes: stale yuyao wheels, old dependency versions, dropped deps.
mkdir -p wheels
shopt -s nullglob
for old in wheels/*.whl; do
    [[ -e $tmp/deps/$(basename "$old") ]] || { rm -f "$old"; say "removed stale $(basename "$old")"; }
done
for new in "$tmp"/deps/*.whl; do
    cmp -s "$new" "wheels/$(basename "$new")" || cp "$new" wheels/
done
shopt -u nullglob
mv "$tmp/requirements.lock" requirements.lock
printf '%s\n' "$stamp_after" > wheels/SOURCE_STAMP

say "wheels/:"
for w in wheels/*.whl; do printf '  %s\n' "${w#wheels/}"; done
say "wrote requirements.lock ($(grep -c -- '--hash=sha256:' requirements.lock) pinned wheels) and wheels/SOURCE_STAMP"
