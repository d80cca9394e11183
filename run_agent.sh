#!/usr/bin/env bash
# Headless contract entry of yuyao agent: runs one task unattended.
#
#   run_agent.sh --task-file F --repo-dir D --model-base-url U --model-name N \
#                --model-api-key K --budget-file B --out-dir O
#
# Argument checking, the input files and the run itself are entry.py's job; this script only
# finds a Python that has yuyao installed. Exit codes: 0 done, 1 runtime error, 2 usage error.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

has_yuyao() {
    "$1" -c 'import yuyao._core' >/dev/null 2>&1
}

pick_python() {
    if command -v python3 >/dev/null 2>&1 && has_yuyao python3; then
        echo python3
    elif [ -x "$HOME/.yuyao/venv/bin/python" ] && has_yuyao "$HOME/.yuyao/venv/bin/python"; then
        echo "$HOME/.yuyao/venv/bin/python"
    elif command -v python3 >/dev/null 2>&1; then
        # No installed yuyao found: entry.py still checks the arguments (exit 2) and then
        # reports the missing installation itself (exit 1).
        echo python3
    else
        return 1
    fi
}

if ! python="$(pick_python)"; then
    echo "run_agent.sh: no python3 found; run install.sh first" >&2
    exit 1
fi
exec "$python" "$here/entry.py" "$@"
