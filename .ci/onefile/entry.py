"""The one-file build's entry point: kdump's console script, as pip would install it."""

from __future__ import annotations

import sys

from kdump.cli import entry

sys.exit(entry())
