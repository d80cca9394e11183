"""Large file batches (seed 000 behaviour 4 undo, benches/bench_files.py): one apply-patch adding more files
than the usual open-file limit (1024) applies, is snapshotted and undone as one batch.
"""

from __future__ import annotations

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core

CODE = """
import resource, sys
from yuyao.agent_api import create_session
# The common default soft limit: each staged file used to hold its folder open until the renames.
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
with create_session(cwd=sys.argv[1], mode="yolo") as s:
    s.chat("add the files")
    print(s.dispatch("/undo"))
"""


def test_a_patch_adding_1500_files_applies_under_a_1024_open_file_limit(
    fake_llm, python, env, repo
):
    n = 1500
    lines = ["*** Begin Patch"]
    for i in range(n):
        lines += [f"*** Add File: many/f{i:04d}.txt", f"+file {i}"]
    lines.append("*** End Patch")
    server = fake_llm([call("apply-patch", patch="\n".join(lines)), say("added")])
    proc = python(CODE, str(repo), env=env(server))
    assert proc.returncode == 0, proc.stderr
    result = server.tool_result("call_0_0")
    assert result.startswith("Applied the patch"), result[:300]
    # The batch was applied whole (the model was told), then /undo removed all of it.
    assert f"many/f{n - 1:04d}.txt" in result
    assert not (repo / "many").exists(), proc.stdout
