"""`yuyao batch`: many headless tasks, each in its own fresh checkout, on a local process
pool or on a Ray cluster (docs/parallel.md). Only the standard library is imported here;
Ray only with `--ray`."""

from __future__ import annotations


def run_batch_command(invocation) -> int:
    """The CLI's `batch` command: `yuyao batch TASKS --out-dir DIR [...]`."""
    from yuyao.batch.driver import main

    return main(invocation.words[0], list(invocation.action_flags))
