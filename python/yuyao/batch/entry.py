"""The headless contract of run_agent.sh for one batch task, as a child process:

    python -m yuyao.batch.entry REQUEST.json

REQUEST.json is entry.py's run request (task_file, budget_file, repo_dir, out_dir, model
without its key); the key comes in `YUYAO_RUN_AGENT_API_KEY` and is hidden as entry.py
hides it. The run itself is `yuyao._core.run_headless`, as for run_agent.sh: the same
status.json, trajectory and exit codes (spec §9). This module exists because a batch
worker (possibly a Ray worker on another machine) has the installed package, not the
checkout's entry.py.
"""

from __future__ import annotations

import json
import os
import sys

KEY_VARIABLE = "YUYAO_RUN_AGENT_API_KEY"
EXIT_RUNTIME, EXIT_USAGE = 1, 2


def interrupt_with_parent() -> None:
    """SIGINT when the batch process that started this run dies (a killed driver or Ray
    worker): the run ends as Interrupted with its status written, instead of running on
    unowned. Linux only; elsewhere a no-op."""
    parent = os.environ.pop("YUYAO_BATCH_PARENT", "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGINT), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # it died before the request was made: nobody waits
        raise SystemExit(EXIT_RUNTIME)


def accept_interrupts() -> None:
    """SIGINT and SIGTERM reach this run even when its parent blocked or ignored them (a Ray
    worker does both, and a child inherits the signal mask and ignored signals): they are how
    the batch stops a run, which then writes its Interrupted status."""
    import signal

    wanted = {signal.SIGINT, signal.SIGTERM}
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, wanted)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    accept_interrupts()
    interrupt_with_parent()
    if len(argv) != 1:
        sys.stderr.write("usage: python -m yuyao.batch.entry REQUEST.json\n")
        return EXIT_USAGE
    try:
        with open(argv[0], encoding="utf-8") as handle:
            request = json.load(handle)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"yuyao: error: cannot read the request {argv[0]}: {exc}\n")
        return EXIT_USAGE
    try:
        from yuyao import _core
        from yuyao.core_link import run_headless
    except ImportError as exc:
        sys.stderr.write(f"yuyao: the yuyao core extension is not installed ({exc})\n")
        return EXIT_RUNTIME
    request.setdefault("model", {})["api_key"] = os.environ.pop(KEY_VARIABLE, "")
    return run_headless(_core, request)


if __name__ == "__main__":
    sys.exit(main())
