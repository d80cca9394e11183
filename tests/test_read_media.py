"""read-media on screen recordings (an animated GIF decoded in Rust; videos through ffmpeg when
it is installed, a clear error when it is not), and images named with @path in the task of
`yuyao -p` and run_agent.sh reaching the model as image parts."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from fakellm import FAKE_MODEL, call, calls, say
from test_files import png

pytestmark = pytest.mark.core


def animated_gif(colors: list[tuple[int, int, int]], delay_cs: int = 25) -> bytes:
    """A 4x4 GIF with one solid frame per colour, `delay_cs` hundredths of a second each.

    Written by hand (standard library only): a clear code before every two pixels keeps the
    LZW code width at 3 bits, so no compression table is needed."""
    w = h = 4
    out = bytearray(b"GIF89a" + struct.pack("<HHBBB", w, h, 0, 0, 0))
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
    for r, g, b in colors:
        out += b"\x21\xf9\x04\x00" + struct.pack("<H", delay_cs) + b"\x00\x00"
        # Image descriptor with a local 4-colour table: index 0 is the frame's colour.
        out += b"\x2c" + struct.pack("<HHHH", 0, 0, w, h) + b"\x81"
        out += bytes([r, g, b]) + b"\x00\x00\x00" * 3
        codes = []
        for i in range(w * h):
            if i % 2 == 0:
                codes.append(4)  # clear
            codes.append(0)
        codes.append(5)  # end
        bits = 0
        nbits = 0
        data = bytearray()
        for c in codes:
            bits |= c << nbits
            nbits += 3
            while nbits >= 8:
                data.append(bits & 0xFF)
                bits >>= 8
                nbits -= 8
        if nbits:
            data.append(bits & 0xFF)
        out += b"\x02"  # LZW initial code size
        for i in range(0, len(data), 255):
            chunk = data[i : i + 255]
            out += bytes([len(chunk)]) + chunk
        out += b"\x00"
    out += b"\x3b"
    return bytes(out)


def images_sent(server) -> list[str]:
    last = server.messages()[-1]
    if last["role"] != "user" or not isinstance(last["content"], list):
        return []
    return [p["image_url"]["url"] for p in last["content"] if p.get("type") == "image_url"]


def run(fake_llm, yuyao, env, batch):
    server = fake_llm([calls(batch), say("The recording shows a colour change.")])
    proc = yuyao("-p", "look at the recording", env=env(server))
    assert proc.returncode in (0, 1), proc.stderr
    return server


def test_an_animated_gif_is_sampled_into_timed_frames(fake_llm, yuyao, env, repo):
    colors = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255), (9, 9, 9)]
    (repo / "rec.gif").write_bytes(animated_gif(colors))
    server = run(
        fake_llm,
        yuyao,
        env,
        [
            ("read-media", {"file_path": "rec.gif", "frames": 3}, "gif"),
            ("read-media", {"file_path": "rec.gif", "frames": 50}, "many"),
        ],
    )
    result = server.tool_result("gif")
    assert "animated GIF, 6 frames, 1.50 s" in result, result
    assert "image 1: t = 0.00 s" in result and "image 3: t = 1.25 s" in result, result
    assert len(images_sent(server)) == 3
    assert "at most 20" in server.tool_result("many")


def test_a_video_without_ffmpeg_says_what_to_install(fake_llm, yuyao, env, repo):
    (repo / "screen.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    server = fake_llm(
        [calls([("read-media", {"file_path": "screen.mp4"}, "v")]), say("No frames.")]
    )
    # PATH holds only the test interpreter's folder: no ffmpeg, wherever the machine has one.
    proc = yuyao("-p", "look", env=env(server, PATH=str(Path(sys.executable).parent)))
    assert proc.returncode in (0, 1), proc.stderr
    result = server.tool_result("v")
    assert "needs ffmpeg" in result and "apt-get install ffmpeg" in result, result
    assert images_sent(server) == []


# CI installs ffmpeg and sets YUYAO_REQUIRE_FFMPEG=1: there a missing one fails, not skips.
@pytest.mark.skipif(
    not (shutil.which("ffmpeg") and shutil.which("ffprobe"))
    and not os.environ.get("YUYAO_REQUIRE_FFMPEG"),
    reason="ffmpeg is not installed (apt-get install ffmpeg); YUYAO_REQUIRE_FFMPEG=1 fails instead",
)
def test_a_video_is_sampled_with_ffmpeg(fake_llm, yuyao, env, repo):
    video = repo / "screen.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=10", str(video)],
        check=True,
    )  # fmt: skip
    server = run(
        fake_llm, yuyao, env, [("read-media", {"file_path": "screen.mp4", "frames": 4}, "v")]
    )
    result = server.tool_result("v")
    assert "video, 2.00 s; 4 frames sampled" in result, result
    assert "image 1: t = 0.00 s" in result and "image 4: t = 1." in result, result
    assert len(images_sent(server)) == 4


def test_an_image_named_in_the_task_reaches_the_model(
    fake_llm, yuyao, env, repo, run_agent, tmp_path
):
    (repo / "shot.png").write_bytes(png(30, 20))
    server = fake_llm([say("It is a red rectangle, 30 by 20 pixels.")])
    proc = yuyao("-p", "what is in @shot.png ?", env=env(server))
    assert proc.returncode == 0, proc.stderr
    first = server.messages(0)
    user = [m for m in first if m["role"] == "user"][-1]
    assert isinstance(user["content"], list)
    assert any(p.get("type") == "image_url" for p in user["content"]), user

    agent_server = fake_llm([say("It is a red rectangle, 30 by 20 pixels.")])
    task = tmp_path / "task.txt"
    task.write_text("Describe @shot.png in one sentence.")
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({"max_steps": 3}))
    out = tmp_path / "out"
    proc = run_agent(
        "--task-file", str(task),
        "--repo-dir", str(repo),
        "--model-base-url", agent_server.url,
        "--model-name", FAKE_MODEL,
        "--model-api-key", agent_server.api_key,
        "--budget-file", str(budget),
        "--out-dir", str(out),
        env=env(),
    )  # fmt: skip
    assert (out / "status.json").is_file(), proc.stderr
    user = [m for m in agent_server.messages(0) if m["role"] == "user"][-1]
    assert isinstance(user["content"], list), user
    assert any(p.get("type") == "image_url" for p in user["content"])


def test_read_media_advertises_frames(fake_llm, yuyao, env):
    # Deferred: listed in the first request, its schema sent once tool-search loaded it.
    server = fake_llm([call("tool-search", names=["read-media"]), say("hi there")])
    yuyao("-p", "hi", env=env(server))
    assert "read-media" in server.tool_names(0)
    tools = {t["function"]["name"]: t["function"] for t in server.body(1)["tools"]}
    assert "frames" in tools["read-media"]["parameters"]["properties"]
