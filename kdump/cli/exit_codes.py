"""kdump's exit codes, stable and documented in `man/kdump.1`."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a kdump process's exit status means."""

    OK = 0  # done: dump completed, verify clean, nothing to repair or repair applied
    FINDINGS = 1  # verify: findings at or above --fail-on; repairs: changes would be made (dry run)
    USAGE = 2  # bad command line
    UNREADABLE = 3  # a path could not be read (or written), or what was read could not be checked (no codec)
    REFUSED = 4  # a repair was refused (a broker holds the log dir's lock, or it is unsafe)
    CANNOT_REPAIR = (
        5  # a repair refused before touching anything: no room, read-only or unwritable, not a partition
    )
    INTERNAL = 70  # a bug in kdump (EX_SOFTWARE); KDUMP_DEBUG=1 shows the traceback
    INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports it: 128 + 2
    OUTPUT_CLOSED = 141  # a verdict was cut short by a closed output pipe: 128 + SIGPIPE (13)


# Commands that only show data: when their reader goes away (`kdump dump ... | head`) the run ended
# as asked, and exits 0. The others carry a verdict in their exit code (verify, the repairs), which a
# run cut short by its reader does not have, so they exit OUTPUT_CLOSED instead: never a false 0.
SHOW_COMMANDS = frozenset({"dump", "seek-by-time"})
