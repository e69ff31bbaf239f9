"""kdump's exit codes, stable and documented in `man/kdump.1`."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a kdump process's exit status means."""

    OK = 0  # done: dump completed, verify clean, nothing to repair or repair applied
    FINDINGS = 1  # verify: findings at or above --fail-on; repairs: changes would be made (dry run)
    USAGE = 2  # bad command line
    UNREADABLE = 3  # a path could not be read (or written)
    REFUSED = 4  # a repair was refused (a broker holds the log dir's lock, or it is unsafe)
    INTERNAL = 70  # a bug in kdump (EX_SOFTWARE); KDUMP_DEBUG=1 shows the traceback
