"""Confinement of the processes yuyao starts, as an attacker would probe it (DESIGN §5, the
OS sandbox): a scripted model's `bash` call looks for privileges inside the command sandbox
(root's capability sets, the host name, loading a BPF program, a system-wide performance
counter) through the spawn helper and on the fork path, and the project's own files are
still written as before.
"""

from __future__ import annotations

import json
import socket

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

HELPER_OFF = {"YUYAO_SANDBOX_DISABLE": "helper"}

# bpf(BPF_PROG_LOAD) and perf_event_open(software clock, pid=-1, cpu=0): every process of the
# machine. Without the seccomp refusal root gets EINVAL/E2BIG from bpf (a junk program, not a
# refusal) and a counter from perf_event_open.
KERNEL_PROBE = r"""
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
BPF, PERF = {"x86_64": (321, 298), "aarch64": (280, 241)}[os.uname().machine]
L = ctypes.c_long
attr = ctypes.create_string_buffer(48)
ctypes.set_errno(0)
r = libc.syscall(L(BPF), L(5), attr, L(48))
print("bpf:", "refused" if r < 0 and ctypes.get_errno() == 1 else f"NOT REFUSED {r}")
pattr = ctypes.create_string_buffer(struct.pack("IIQ", 1, 112, 0) + bytes(104))
ctypes.set_errno(0)
r = libc.syscall(L(PERF), pattr, L(-1), L(0), L(-1), L(0))
print("perf:", "refused" if r < 0 and ctypes.get_errno() == 1 else f"NOT REFUSED {r}")
"""


def host_name() -> str:
    return socket.gethostname()


@pytest.mark.parametrize("extra", [{}, HELPER_OFF], ids=["helper", "fork-path"])
def test_the_command_sandbox_holds_no_privileges(fake_llm, yuyao, env, repo, extra):
    (repo / "probe.py").write_text(KERNEL_PROBE)
    before = host_name()
    script = [
        calls(
            [
                ("bash", {"command": "grep -E '^Cap(Eff|Bnd|Prm)' /proc/self/status"}, "caps"),
                # Setting the host name it already has: refused all the same, and a regression
                # cannot rename the machine the tests run on.
                ("bash", {"command": 'hostname "$(hostname)" && echo HOSTNAME-SET'}, "uts"),
                ("bash", {"command": "python3 probe.py"}, "kernel"),
                # The project stays usable: a file created, a venv-style tree, a commit.
                (
                    "bash",
                    {
                        "command": "mkdir -p build/out && echo made > build/out/f.txt && "
                        "chmod 600 build/out/f.txt && cat build/out/f.txt && "
                        "git add build && git -c user.email=a@b -c user.name=a "
                        "commit -qm build && echo COMMITTED"
                    },
                    "work",
                ),
            ]
        ),
        say("I looked around."),
    ]
    server = fake_llm(script)
    proc = yuyao("-p", "look", "--yolo", env=env(server, **extra))
    assert proc.returncode == 0, proc.stderr

    caps = server.tool_result("caps")
    lines = [ln for ln in caps.splitlines() if ln.startswith("Cap")]
    assert len(lines) == 3, caps
    assert all(ln.split()[-1] == "0000000000000000" for ln in lines), caps

    uts = server.tool_result("uts")
    assert "HOSTNAME-SET" not in uts and "exit code 1" in uts, uts
    assert host_name() == before

    kernel = server.tool_result("kernel")
    assert "bpf: refused" in kernel and "perf: refused" in kernel, kernel

    work = server.tool_result("work")
    assert "made" in work and "COMMITTED" in work, work
    assert (repo / "build/out/f.txt").read_text() == "made\n"


def test_sandbox_list_names_the_privilege_limits(yuyao, env, repo):
    proc = yuyao("sandbox", "list", env=env())
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "capabilities" in out and "bpf" in out, out
    json.dumps(out)
