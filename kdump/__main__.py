"""Allow `python -m kdump`."""

from __future__ import annotations

from kdump.cli import entry

if __name__ == "__main__":
    entry()
