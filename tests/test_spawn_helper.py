"""Spawn cost independent of the host (DESIGN §5, one spawn path): a bash call starts through the spawn
helper (`posix_spawn`, no fork of the host), so a program that embeds yuyao with gigabytes of
memory does not pay for them per command; and the helper opens no way around the sandbox (a
planted look-alike, LD_PRELOAD, inherited descriptors).

Each host is a separate Python process (the sandbox's support probe is per process), driving
`yuyao.agent_api` against the scripted model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

HELPER_OFF = {"YUYAO_SANDBOX_DISABLE": "helper"}


def bash_turn(*commands: str) -> list:
    items = [("bash", {"command": c}, f"b{i}") for i, c in enumerate(commands)]
    return [calls(items), say("I ran the commands; their results are reported above.")]


def host(python, env, repo, body: str, **extra: str) -> dict:
    """Runs `body` in a fresh host process with an agent_api session `s` on `repo`; the host
    prints one JSON object last."""
    code = textwrap.dedent(
        """
        import json, mmap, os, resource, sys
        from yuyao.agent_api import create_session
        s = create_session(mode="yolo", cwd=sys.argv[1])
        """
    ) + textwrap.dedent(body)
    proc = python(code, str(repo), env=env(**extra), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Maps 256 MiB of small pages and touches them; runs one bash call; then writes every page
# again and counts the host's minor faults meanwhile. A fork write-protects every page of the
# host for copy-on-write, so each of those writes faults once; posix_spawn shares nothing.
LARGE_HOST = """
size = 256 << 20
mem = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
if hasattr(mmap, "MADV_NOHUGEPAGE"):
    mem.madvise(mmap.MADV_NOHUGEPAGE)
for off in range(0, size, mmap.PAGESIZE):
    mem[off] = 1
s.chat("run it")
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for off in range(0, size, mmap.PAGESIZE):
    mem[off] = 2
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
tool = [m["content"] for m in s.messages if m.get("role") == "tool"]
s.close()
print(json.dumps({"faults": faults, "pages": size // mmap.PAGESIZE, "tool": tool}))
"""


SMALL_HOST = LARGE_HOST.replace("256 << 20", "1 << 20")


def test_a_large_host_is_not_forked_for_a_bash_call(fake_llm, python, env, repo):
    server = fake_llm(bash_turn("echo confined > inside.txt"))
    out = host(python, lambda **x: env(server, **x), repo, LARGE_HOST)
    assert "exit code 0" in out["tool"][0], out["tool"]
    assert (repo / "inside.txt").read_text() == "confined\n"
    # A handful of faults at most (other threads of the host), not one per page.
    assert out["faults"] < out["pages"] // 20, out


def test_the_fork_path_would_copy_the_host(fake_llm, python, env, repo):
    """The measure above can fail: with the helper switched off, every page faults again."""
    server = fake_llm(bash_turn("true"))
    out = host(python, lambda **x: env(server, **x), repo, LARGE_HOST, **HELPER_OFF)
    assert "exit code 0" in out["tool"][0], out["tool"]
    assert out["faults"] > out["pages"] // 2, out


def test_sandbox_list_tells_which_spawn_path_is_used(yuyao, env, repo):
    on = yuyao("sandbox", "list", env=env())
    assert on.returncode == 0, on.stderr
    assert "spawn helper      in use" in on.stdout, on.stdout
    off = yuyao("sandbox", "list", env=env(**HELPER_OFF))
    assert "spawn helper      not in use: switched off by YUYAO_SANDBOX_DISABLE" in off.stdout
    # Switched off on purpose: no warning.
    assert "warning" not in off.stderr


INHERITABLE_FD = """
fd = os.open(os.devnull, os.O_RDONLY)
os.set_inheritable(fd, True)
s.chat("list descriptors")
tool = [m["content"] for m in s.messages if m.get("role") == "tool"]
s.close()
print(json.dumps({"fd": fd, "tool": tool}))
"""


def listed_fds(result: str) -> set[int]:
    return {int(w) for w in result.split() if w.isdigit()}


@pytest.mark.parametrize("helper", [True, False], ids=["helper", "fork-path"])
def test_host_descriptors_do_not_reach_the_command(fake_llm, python, env, repo, helper):
    server = fake_llm(bash_turn("ls /proc/self/fd | tr '\\n' ' '; echo"))
    extra = {} if helper else HELPER_OFF
    out = host(python, lambda **x: env(server, **x), repo, INHERITABLE_FD, **extra)
    fds = listed_fds(out["tool"][0].split("[exit code")[0])
    if helper:
        # stdin, stdout, stderr and the one `ls` opened to read the folder.
        assert out["fd"] not in fds and len(fds) <= 4, out
    else:
        # What the helper closes: the fork path hands the host's inheritable descriptor down.
        assert out["fd"] in fds, out


def test_a_planted_helper_is_never_run(fake_llm, python, env, repo, tmp_path):
    """A `yuyao-sandbox-exec` in the project, in the working directory and first on PATH is
    never what starts the command: the helper comes from yuyao's own memory."""
    marker = tmp_path / "planted-ran"
    fake = f'#!/bin/sh\necho planted >> {marker}\nexec "$@"\n'
    bin_dir = tmp_path / "hostile-bin"
    bin_dir.mkdir()
    for where in (repo, bin_dir):
        p = where / "yuyao-sandbox-exec"
        p.write_text(fake)
        p.chmod(0o755)
    server = fake_llm(
        bash_turn("echo ok > inside.txt; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status")
    )
    path = f"{bin_dir}:{repo}:{env()['PATH']}"
    out = host(python, lambda **x: env(server, PATH=path, **x), repo, SMALL_HOST)
    assert not marker.exists()
    assert (repo / "inside.txt").read_text() == "ok\n"
    # Still confined: no privilege gain, the network filter installed.
    result = out["tool"][0]
    assert "NoNewPrivs:\t1" in result and "Seccomp:\t2" in result, result


PRELOAD_C = r"""
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 2);
    if (n < 0) return;
    exe[n++] = '\n';
    int fd = open(MARKER, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd >= 0) { write(fd, exe, n); close(fd); }
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the preload")
def test_ld_preload_of_the_host_never_runs_in_the_helper(fake_llm, python, env, repo, tmp_path):
    """The helper runs before the command is confined, so nothing of the host's environment
    may load code into it: it starts with an empty environment (the command itself gets the
    user's environment, as always)."""
    marker = tmp_path / "loaded-into"
    src = tmp_path / "mark.c"
    src.write_text(PRELOAD_C)
    lib = tmp_path / "libmark.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(lib), str(src)], check=True
    )
    server = fake_llm(bash_turn("true"))
    out = host(
        python,
        lambda **x: env(server, **x),
        repo,
        SMALL_HOST,
        LD_PRELOAD=str(lib),
    )
    assert "exit code 0" in out["tool"][0], out["tool"]
    loaded = marker.read_text().splitlines()
    assert any("python" in line for line in loaded), loaded  # the preload works at all
    assert not [line for line in loaded if "memfd" in line or "sandbox-exec" in line], loaded
