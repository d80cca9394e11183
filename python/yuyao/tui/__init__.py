"""The interactive terminal interface of yuyao (prompt_toolkit input, rich rendering)."""

from .app import run_interactive

__all__ = ["run_interactive"]
