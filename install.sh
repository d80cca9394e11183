#!/usr/bin/env bash
# Install yuyao agent, offline, from the wheels shipped in wheels/.
#
# Usage: ./install.sh            (no network needed; safe to run again)
#
# Where it installs (with the `python3` on PATH, Python 3.9 or newer):
#   - an active virtualenv (or a named conda env)  -> into that environment (so `python3 -c "import
#                                                     yuyao"` works there; `yuyao` is in its bin dir);
#   - otherwise                                    -> into a venv of its own, $YUYAO_HOME/venv
#                                                     (default ~/.yuyao/venv), never into a system,
#                                                     pyenv or conda-base interpreter, even a writable
#                                                     one; `yuyao` is then linked into ~/.local/bin
#                                                     (/usr/local/bin for root), and if that directory
#                                                     is not on PATH the line to add is printed.
# Environment:
#   YUYAO_PYTHON         interpreter to install with (default: python3 on PATH)
#   YUYAO_HOME           base of the dedicated venv (default ~/.yuyao)
#
# How: every wheel's sha256 is checked against requirements.lock first (one pass); then the
# wheels are installed one at a time, in the lock's dependency order, with --no-deps, so the
# progress bar can honestly count "package k of n".
# Run by `sh install.sh`? Re-run under bash (this file uses bash arrays and [[ ]]).
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail
# No silent death under set -e: name the command that failed.
trap 'printf "yuyao install: error: unexpected failure (line %s: %s)\\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

# Pure bash (no dirname): the "python3 missing" check must work on a PATH with almost nothing.
src="${BASH_SOURCE[0]}"
if [[ $src == */* ]]; then here="$(cd "${src%/*}" && pwd)"; else here="$PWD"; fi
wheels="$here/wheels"
lock="$here/requirements.lock"
min_major=3
min_minor=9

# Never touch the network, whatever pip.conf says; no prompts, no self-update nag.
export PIP_NO_INDEX=1 PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
unset PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_REQUIRE_VIRTUALENV PIP_USER PIP_TARGET PIP_PREFIX

if [[ -t 1 ]]; then
    bold=$'\e[1m' red=$'\e[31m' green=$'\e[32m' yellow=$'\e[33m' reset=$'\e[0m'
else
    bold='' red='' green='' yellow='' reset=''
fi
die()  { printf '%syuyao install: error:%s %s\n' "$red$bold" "$reset" "$*" >&2; exit 1; }
info() { printf 'yuyao install: %s\n' "$*"; }
warn() { printf '%syuyao install: warning:%s %s\n' "$yellow" "$reset" "$*" >&2; }

case ${1:-} in
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    '') ;;
    *) die "unknown argument: $1 (see ./install.sh --help)" ;;
esac

# --- 1. python3 ----------------------------------------------------------------------------------
py="${YUYAO_PYTHON:-}"
if [[ -z $py ]]; then
    py="$(command -v python3 || true)"
    [[ -n $py ]] || die "python3 was not found on PATH. yuyao needs Python ${min_major}.${min_minor} or newer: install it (e.g. 'apt-get install python3 python3-venv') and run ./install.sh again."
fi
pyver="$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || true)"
[[ $pyver =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]] \
    || die "$py does not run as a Python interpreter (it printed '${pyver}'). yuyao needs Python ${min_major}.${min_minor} or newer."
if (( BASH_REMATCH[1] < min_major || (BASH_REMATCH[1] == min_major && BASH_REMATCH[2] < min_minor) )); then
    die "$py is Python $pyver; yuyao needs Python ${min_major}.${min_minor} or newer. Install a newer python3 (or activate a virtualenv made with one) and run ./install.sh again."
fi

[[ -d $wheels ]] || die "no wheels/ directory next to install.sh ($here); the artifact is incomplete"
[[ -f $lock ]] || die "no requirements.lock next to install.sh ($here); the artifact is incomplete"

# Facts about this interpreter: in_env, has_pip.
mapfile -t facts < <("$py" - <<'EOF'
import os, sys
# A virtualenv, or a conda env the user activated by name (conda's base env is the machine's
# interpreter, like a system python: not a place to install into uninvited).
in_env = sys.prefix != getattr(sys, "base_prefix", sys.prefix) or (
    os.environ.get("CONDA_PREFIX") and os.environ.get("CONDA_DEFAULT_ENV", "base") != "base"
    and os.path.realpath(sys.prefix) == os.path.realpath(os.environ["CONDA_PREFIX"]))
try:
    import pip  # noqa: F401
    has_pip = True
except Exception:
    has_pip = False
print(int(bool(in_env)), int(has_pip))
EOF
)
read -r in_env has_pip <<<"${facts[0]:-0 0}"

# --- 2. Check every wheel against requirements.lock (one pass, before touching anything) -----------
sha256_of() {
    if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1
    else "$py" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; fi
}
names=() versions=() hashes=()
name=''
while IFS= read -r line || [[ -n $line ]]; do
    line="${line%%#*}"
    if [[ $line =~ ^([A-Za-z0-9][A-Za-z0-9._-]*)==([^[:space:]\\]+) ]]; then
        name="${BASH_REMATCH[1]}" version="${BASH_REMATCH[2]}"
    fi
    if [[ $line =~ --hash=sha256:([0-9a-fA-F]{64}) && -n $name ]]; then
        names+=("$name") versions+=("$version") hashes+=("${BASH_REMATCH[1],,}")
        name=''
    fi
done < "$lock"
n=${#names[@]}
(( n > 0 )) || die "requirements.lock pins no package; the artifact is broken"

declare -A file_of_hash=()
shopt -s nullglob
for w in "$wheels"/*.whl; do file_of_hash[$(sha256_of "$w")]="$w"; done
shopt -u nullglob
yuyao_version=''
pinned_files=()
for ((i = 0; i < n; i++)); do
    [[ -n ${file_of_hash[${hashes[i]}]:-} ]] \
        || die "no wheel in wheels/ matches the sha256 that requirements.lock pins for ${names[i]}==${versions[i]} (missing or corrupted download?)"
    pinned_files+=("${file_of_hash[${hashes[i]}]}")
    if [[ ${names[i],,} == yuyao ]]; then yuyao_version="${versions[i]}"; fi
done
[[ -n $yuyao_version ]] || die "requirements.lock does not pin yuyao itself; the artifact is broken"
info "checked $n wheels against requirements.lock (sha256): ok"

# --- 3. Do the wheels fit this platform? -----------------------------------------------------------
# Compare each wheel's tags with the interpreter's supported tags (pip's own vendored `packaging`,
# so the verdict is pip's). Catches e.g. aarch64, musl, or glibc older than 2.17 before installing.
check_tags() { # $1 = python, then the pinned wheel files; prints those that do not fit;
               # exits 2 when it cannot tell (no `packaging` at all: pip will then decide)
    "$1" - "${pinned_files[@]}" <<'EOF'
import os, sys
try:
    from pip._vendor.packaging.tags import sys_tags
except Exception:
    try:
        from packaging.tags import sys_tags
    except Exception:
        sys.exit(2)
supported = {str(t) for t in sys_tags()}
for path in sys.argv[1:]:
    fn = os.path.basename(path)
    parts = fn[:-4].split("-")  # name-version[-build]-python-abi-platform
    pys, abis, plats = parts[-3].split("."), parts[-2].split("."), parts[-1].split(".")
    if not any(f"{p}-{a}-{pl}" in supported for p in pys for a in abis for pl in plats):
        print(fn)
EOF
}
if (( has_pip )); then
    rc=0; misfits="$(check_tags "$py")" || rc=$?
    if (( rc == 0 )) && [[ -n $misfits ]]; then
        die "these wheels do not fit this platform ($(uname -sm), Python $pyver at $py): $(tr '\n' ' ' <<<"$misfits")- yuyao ships wheels for x86_64 Linux with glibc 2.17 or newer and CPython ${min_major}.${min_minor}+."
    fi
fi

# --- 4. Choose where to install ---------------------------------------------------------------------
# Only an environment the user activated is installed into; anything else (a system, pyenv or conda
# base interpreter, writable or not) gets yuyao's own venv, so no other program's packages change.
target_py="$py"
if (( in_env )); then
    mode=env
    info "installing into the active environment of $py"
else
    mode=venv
    venv="${YUYAO_HOME:-$HOME/.yuyao}/venv"
    info "installing into yuyao's own virtual environment $venv (no virtualenv is active)"
    # Reuse an existing venv only when it still runs and has the same Python minor version
    # (a venv is tied to its base interpreter; after an upgrade it must be rebuilt).
    if [[ -x $venv/bin/python ]] \
        && [[ "$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" == "${pyver%.*}" ]] \
        && "$venv/bin/python" -c 'import pip' >/dev/null 2>&1; then
        :
    else
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        "$py" -m venv "$venv" >/dev/null 2>"$venv.err" \
            || die "could not create $venv: $(tail -n 3 "$venv.err" 2>/dev/null). On Debian/Ubuntu install the venv module: apt-get install python3-venv"
        rm -f "$venv.err"
    fi
    target_py="$venv/bin/python"
fi
# Re-check the tags when the target interpreter differs (a venv has the same tags, but be sure).
if [[ $target_py != "$py" ]]; then
    rc=0; misfits="$(check_tags "$target_py")" || rc=$?
    if (( rc == 0 )) && [[ -n $misfits ]]; then
        die "these wheels do not fit $target_py: $(tr '\n' ' ' <<<"$misfits")"
    fi
fi
"$target_py" -m pip --version >/dev/null 2>&1 || die "$target_py has no working pip"

# --- 5. Install, one wheel at a time, with a determinate progress bar -----------------------------
# Which packages are already present at the pinned version (skipped), one python call for all.
mapfile -t installed < <("$target_py" - "${names[@]}" <<'EOF'
import sys
try:
    from importlib import metadata
except ImportError:
    metadata = None
for name in sys.argv[1:]:
    try:
        print(metadata.version(name) if metadata else "")
    except Exception:
        print("")
EOF
)

log="$(mktemp)"
req="$(mktemp)"
trap 'rm -f "$log" "$req"' EXIT
width=30
bar() { # $1 = done, $2 = total, $3 = label
    local filled=$(( $1 * width / $2 )) full empty
    printf -v full '%*s' "$filled" ''
    printf -v empty '%*s' "$(( width - filled ))" ''
    full="${full// /#}" empty="${empty// /.}"
    if [[ -t 1 ]]; then
        printf '\r\e[K  [%s%s%s%s] %d/%d %s' "$green" "$full" "$reset" "$empty" "$1" "$2" "$3"
    else
        printf '  [%s%s] %d/%d %s\n' "$full" "$empty" "$1" "$2" "$3"
    fi
}

was_installed=''
for ((i = 0; i < n; i++)); do
    k=$(( i + 1 ))
    label="${names[i]} ${versions[i]}"
    force=()
    if [[ ${names[i],,} == yuyao ]]; then
        # Our own wheel is always reinstalled: a rebuilt wheel may keep the same version number.
        [[ -n ${installed[i]:-} ]] && was_installed="${installed[i]}"
        force=(--force-reinstall)
    elif [[ ${installed[i]:-} == "${versions[i]}" ]]; then
        bar "$k" "$n" "$label (already installed)"
        continue
    fi
    [[ -t 1 ]] && bar "$i" "$n" "installing $label"
    printf '%s==%s --hash=sha256:%s\n' "${names[i]}" "${versions[i]}" "${hashes[i]}" > "$req"
    if ! "$target_py" -m pip install --no-index --find-links "$wheels" --no-deps --require-hashes \
            --no-warn-script-location --disable-pip-version-check "${force[@]}" \
            -r "$req" >"$log" 2>&1; then
        [[ -t 1 ]] && printf '\n'
        sed 's/^/    pip: /' "$log" | tail -n 15 >&2
        die "installing $label failed (pip output above)"
    fi
    bar "$k" "$n" "$label"
done
[[ -t 1 ]] && printf '\n'

# --- 6. The `yuyao` command, on PATH ------------------------------------------------------------------
scripts_dir="$("$target_py" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
exe="$scripts_dir/yuyao"
[[ -x $exe ]] || die "pip installed yuyao but $exe is missing"
# The extension must load here (glibc, CPU): catch that now, not at first use.
if ! err_text="$(cd / && "$target_py" -c 'import yuyao, yuyao._core' 2>&1)"; then
    die "yuyao was installed but does not import with $target_py: $(tail -n 3 <<<"$err_text")"
fi

on_path() { [[ ":$PATH:" == *":$1:"* ]]; }
cmd="$exe"
path_dir=''   # a directory holding the command that PATH lacks
if [[ $mode == venv ]]; then
    # A symlink keeps the venv's own interpreter (the script's shebang is absolute).
    if (( EUID == 0 )); then link_dir=/usr/local/bin; else link_dir="$HOME/.local/bin"; fi
    mkdir -p "$link_dir" || die "cannot create $link_dir"
    if [[ -e $link_dir/yuyao && ! -L $link_dir/yuyao ]]; then
        # Never clobber a file this installer did not make.
        warn "not replacing $link_dir/yuyao (not a symlink made by this installer); run $exe"
    else
        ln -sfn "$exe" "$link_dir/yuyao"
        cmd="$link_dir/yuyao"
        info "linked $cmd -> $exe"
    fi
    on_path "$(dirname "$cmd")" || path_dir="$(dirname "$cmd")"
elif ! on_path "$scripts_dir"; then
    path_dir="$scripts_dir"
fi
found="$(command -v yuyao || true)"
if [[ -z $path_dir && -n $found && $found != "$cmd" && $(readlink -f "$found") != "$(readlink -f "$cmd")" ]]; then
    warn "another yuyao comes first on PATH: $found (this one is $cmd)"
fi

if [[ $mode == venv ]]; then
    info "python API: $target_py -c 'import yuyao.agent_api' (the venv's interpreter)"
fi
if [[ -n $path_dir ]]; then
    warn "$path_dir is not on your PATH; add this line to your ~/.bashrc (or ~/.profile), then open a new shell:"
    printf '    export PATH="%s:$PATH"\n' "$path_dir" >&2
fi
if [[ -n $was_installed ]]; then
    info "yuyao $was_installed was already installed; reinstalled it from wheels/"
fi
printf '%syuyao %s installed: %s%s\n' "$green$bold" "$yuyao_version" "$cmd" "$reset"
