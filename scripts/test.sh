#!/usr/bin/env bash
# Run yuyao's test suite from a checkout, on a machine with only python3 (>= 3.9, with its venv
# module) and the Rust toolchain: everything else is installed here, into a venv of its own.
#
# Usage: ./scripts/test.sh [pytest arguments...]     e.g. ./scripts/test.sh -k print -x
#
# Stages, in order (each one is skipped when not named in YUYAO_TEST_STAGES):
#   venv        a private venv (default target/test-venv): the test tools from PyPI
#               (scripts/test-requirements.txt) and the runtime deps from wheels/, checked
#               against the sha256 pins of requirements.lock (what ./install.sh ships)
#   extension   yuyao built from source (maturin, dev profile) and installed into that venv as a
#               real wheel, so the tests exercise the installed package and its `yuyao` command
#   pytest      python -m pytest -q tests [your arguments]   (the compiled core is required)
# .ci/run calls this same script for its venv, extension and pytest stages, so CI proves it.
#
# Knobs (all optional):
#   YUYAO_TEST_STAGES     comma list of stages to run (default venv,extension,pytest)
#   YUYAO_TEST_VENV       the venv's path (default <checkout>/target/test-venv)
#   YUYAO_TEST_JOBS       build jobs (default: cargo's, one per CPU)
#   YUYAO_TEST_PIP_EXTRA  more requirement specifiers for the venv (CI adds its pinned ruff)
#   YUYAO_PYTHON          interpreter to build the venv with (default python3 on PATH)
#   CARGO_TARGET_DIR      cargo's build directory (default <checkout>/target)
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail
trap 'printf "yuyao test: error: unexpected failure (line %s: %s)\\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

stages=",${YUYAO_TEST_STAGES:-venv,extension,pytest},"
venv="${YUYAO_TEST_VENV:-$root/target/test-venv}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
min_major=3
min_minor=9

die()  { printf 'yuyao test: error: %s\n' "$*" >&2; exit 1; }
info() { printf 'yuyao test: %s\n' "$*"; }
wants() { [[ $stages == *",$1,"* ]]; }

for s in ${stages//,/ }; do
    case $s in venv|extension|pytest) ;; *) die "YUYAO_TEST_STAGES: unknown stage '$s' (venv, extension, pytest)" ;; esac
done

# --- venv ------------------------------------------------------------------------------------------
# The runtime deps exactly as install.sh ships them (hash-checked, offline), minus yuyao itself,
# which the extension stage builds from source.
runtime_lock() {
    awk '/^yuyao==/ { skip = 1; next } skip && /^[[:space:]]*--hash/ { next } { skip = 0; print }' \
        requirements.lock
}

# What the venv was made from; an unchanged fingerprint means the venv is up to date.
fingerprint() {
    { cat scripts/test-requirements.txt requirements.lock; printf '%s\n' "${YUYAO_TEST_PIP_EXTRA:-}"
      "$1" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1
}

make_venv() {
    local py="${YUYAO_PYTHON:-}"
    if [[ -z $py ]]; then
        py="$(command -v python3 || true)"
        [[ -n $py ]] || die "python3 was not found on PATH; install Python ${min_major}.${min_minor} or newer (e.g. apt-get install python3 python3-venv)"
    fi
    "$py" -c "import sys; sys.exit(sys.version_info < ($min_major, $min_minor))" 2>/dev/null \
        || die "$py is not Python ${min_major}.${min_minor} or newer"
    [[ -f requirements.lock ]] && compgen -G 'wheels/*.whl' >/dev/null \
        || die "no requirements.lock or wheels/ in $root: the checkout is incomplete"

    local stamp="$venv/.yuyao-test-deps" want
    want="$(fingerprint "$py")"
    if [[ -x $venv/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]] \
        && "$venv/bin/python" -c 'import pytest' 2>/dev/null; then
        info "test venv $venv is up to date"
        return 0
    fi
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    info "creating the test venv $venv with $py"
    local err
    if ! err="$("$py" -m venv "$venv" 2>&1)"; then
        rm -rf "$venv"
        die "could not create a venv with $py: $(tail -n 2 <<<"$err"). On Debian/Ubuntu: apt-get install python3-venv"
    fi
    local extra=()
    read -r -a extra <<<"${YUYAO_TEST_PIP_EXTRA:-}"
    info "installing the test tools from PyPI (scripts/test-requirements.txt)"
    "$venv/bin/python" -m pip install -q -r scripts/test-requirements.txt "${extra[@]}"
    info "installing the runtime dependencies from wheels/ (sha256-checked)"
    runtime_lock > "$venv/runtime-deps.lock"
    "$venv/bin/python" -m pip install -q --no-index --find-links wheels --require-hashes \
        -r "$venv/runtime-deps.lock"
    fingerprint "$py" > "$stamp"
    "$venv/bin/python" --version
}

# --- extension -------------------------------------------------------------------------------------
# The dev profile reuses what `cargo test` compiled (same profile and target dir); --release would
# rebuild everything with LTO. Installed as a wheel, not `maturin develop`: nothing is written
# into python/ and the tests run the package as users get it.
extension() {
    command -v cargo >/dev/null \
        || die "cargo was not found: the Rust toolchain is needed to build yuyao (https://rustup.rs)"
    local out="$CARGO_TARGET_DIR/test-wheel" jobs=()
    [[ -n ${YUYAO_TEST_JOBS:-} ]] && jobs=(-j "$YUYAO_TEST_JOBS")
    rm -rf "$out"
    maturin build --locked "${jobs[@]}" --out "$out"
    python -m pip install -q --no-deps --force-reinstall "$out"/yuyao-*.whl
    python -m pip check   # every dependency the wheel declares is installed
    (cd / && python -c 'import yuyao, yuyao._core; print("yuyao", yuyao._core.VERSION, "from", yuyao.__file__)')
}

# --- pytest ----------------------------------------------------------------------------------------
run_pytest() {
    local rc=0
    YUYAO_REQUIRE_CORE=1 python -m pytest -q tests "$@" || rc=$?
    if (( rc == 5 )); then
        echo "pytest collected no tests (exit 5): the test suite is missing or not discovered" >&2
        return 1
    fi
    return "$rc"
}

if wants venv; then make_venv; fi
if wants extension || wants pytest; then
    [[ -x $venv/bin/python ]] || die "no test venv at $venv (run the venv stage first)"
    # The venv's python, pip, maturin and pytest come first; the tests find `yuyao` there too.
    export VIRTUAL_ENV="$venv"
    export PATH="$venv/bin:$PATH"
    hash -r
fi
if wants extension; then extension; fi
if wants pytest; then
    # A failing test is the test's report (above), not an "unexpected failure" of this script.
    rc=0
    run_pytest "$@" || rc=$?
    if (( rc != 0 )); then
        echo "yuyao test: pytest failed (exit $rc); the failures are listed above" >&2
        exit "$rc"
    fi
fi
