"""Permission engine benchmarks: adjudication time per 10-segment command line (target under
1 ms) and the spawn overhead of the sandboxed path against a plain `bash -c true`.

    python benches/bench_policy.py            # release build of the example (slower to build)
    python benches/bench_policy.py --debug    # the dev profile (no extra build if warm)

Prints the example's JSON and a verdict. Ratios, not absolute times, are what to compare.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))

from _record import Recorder  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--debug", action="store_true", help="use the dev profile")
    args = ap.parse_args()
    rec = Recorder("policy")
    cmd = ["cargo", "run", "-q", "-j2", "-p", "yuyao-policy", "--example", "bench_policy"]
    if not args.debug:
        cmd.insert(3, "--release")
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    print(json.dumps(result, indent=2))
    adj = result["adjudication"]
    ok = adj["us_per_call"] < adj["target_us"]
    print(
        f"adjudication of a {adj['segments']}-segment line: {adj['us_per_call']:.1f} us "
        f"({'under' if ok else 'OVER'} the 1 ms target)"
    )
    spawn = result["spawn"]
    if "ratio" in spawn:
        print(
            f"sandboxed spawn: {spawn['sandboxed_ms']:.2f} ms vs plain {spawn['plain_ms']:.2f} ms "
            f"(x{spawn['ratio']:.2f})"
        )
    else:
        print(f"sandbox unavailable here: {spawn['unavailable']}")
    out = rec.save(
        {"profile": "dev" if args.debug else "release", **result},
        peer="bash -c true without the sandbox (spawn); none (adjudication: 1 ms target)",
        peer_version=None,
        tree="none",
    )
    print(f"raw figures: {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
