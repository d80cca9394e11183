"""`python -m yuyao`: the same entry point as the `yuyao` console script."""

from yuyao.cli import main

raise SystemExit(main())
