#!/usr/bin/env bash
# Headless contract entry of yuyao agent: runs one task unattended.
#
#   run_agent.sh --task-file F --repo-dir D --model-base-url U --model-name N \
#                --model-api-key K --budget-file B --out-dir O
#
# Argument checking and the run itself are entry.py's job; this script only finds a Python
# that has yuyao installed and moves the API key off the command line: entry.py
# gets it in the environment (YUYAO_RUN_AGENT_API_KEY), where yuyao blanks it once read, so
# no other process can read it from /proc/<pid>/cmdline of entry.py.
# Exit codes: 0 done, 1 runtime error, 2 usage error.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

has_yuyao() {
    [ -x "$1" ] && "$1" -c 'import yuyao._core' >/dev/null 2>&1
}

# Where an installation can be, in order: the active venv, install.sh's venv
# ($YUYAO_HOME/venv, default ~/.yuyao/venv), a development venv in this checkout, and last
# whatever python3 is on PATH.
candidates() {
    if [ -n "${VIRTUAL_ENV:-}" ]; then echo "$VIRTUAL_ENV/bin/python"; fi
    if [ -n "${YUYAO_HOME:-}" ]; then echo "$YUYAO_HOME/venv/bin/python"; fi
    if [ -n "${HOME:-}" ]; then echo "$HOME/.yuyao/venv/bin/python"; fi
    echo "$here/.venv/bin/python"
    command -v python3 2>/dev/null || true
}

pick_python() {
    local py
    while IFS= read -r py; do
        if has_yuyao "$py"; then
            echo "$py"
            return 0
        fi
    done < <(candidates)
    return 1
}

# The key, moved to the environment when it is given exactly once and well-formed; anything
# else is passed through unchanged for entry.py to report.
move_key_to_environment() {
    local flags=" --task-file --repo-dir --model-base-url --model-name --model-api-key --budget-file --out-dir "
    local count=0 key="" i next arg
    unset YUYAO_RUN_AGENT_API_KEY
    args=()
    for ((i = 1; i <= $#; i++)); do
        arg="${!i}"
        case "$arg" in
            --model-api-key) count=$((count + 1)) ;;
            --model-api-key=*) count=$((count + 1)) ;;
        esac
    done
    if [ "$count" -ne 1 ]; then
        args=("$@")
        return
    fi
    for ((i = 1; i <= $#; i++)); do
        arg="${!i}"
        case "$arg" in
            --model-api-key=*)
                key="${arg#--model-api-key=}"
                ;;
            --model-api-key)
                next=$((i + 1))
                if [ "$next" -gt $# ] || [[ "$flags" == *" ${!next} "* ]]; then
                    args=("$@")
                    return
                fi
                key="${!next}"
                i=$next
                ;;
            *)
                args+=("$arg")
                ;;
        esac
    done
    export YUYAO_RUN_AGENT_API_KEY="$key"
}
move_key_to_environment "$@"

if ! python="$(pick_python)"; then
    {
        echo "run_agent.sh: error: yuyao is not installed: no Python with yuyao in any of"
        candidates | sed 's/^/  /'
        echo "Run ./install.sh (it installs into the active venv, else \$YUYAO_HOME/venv)."
    } >&2
    exit 1
fi
exec "$python" "$here/entry.py" ${args[@]+"${args[@]}"}
