"""Fixtures the scanner's live-file tests share (tests/live_files.py)."""

from __future__ import annotations

from live_files import path_kind

__all__ = ["path_kind"]
