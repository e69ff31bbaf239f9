"""A finding's repair as a command that runs pasted into a shell, on the location as given.

The catalog names the command with `PARTITION` (and `OFFSET`) in it (`kdump.findings`); here the
finding's partition is filled in: shell-quoted when it is a local path, and named as "a local copy
of" a stored one (a URL, or inside a tarball), since repairs work on local files only.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from kdump.findings import CATALOG, Finding
from kdump.store.locations import is_stored

__all__ = ["repair_command"]


def repair_command(finding: Finding) -> str | None:
    """The kdump command that repairs it, with this finding's partition (and offset) filled in."""
    # A finding the catalog's repair does not fix here carries `repair` None in its details.
    template = finding.details["repair"] if "repair" in finding.details else CATALOG[finding.code].repair
    if template is None:
        return None
    if is_stored(finding.file):
        # Repairs work on local files only: name the copy to repair, keeping the URL whole.
        where = f"a local copy of {finding.file.rsplit('/', 1)[0]}"
    else:
        where = shlex.quote(str(finding.details.get("repair_path") or Path(finding.file).parent))
    command = template.replace("PARTITION", where)
    if finding.details.get("salvage_first"):
        # Valid data lies past the cut the trim makes: get it out first, into salvage's own new
        # directory beside the log dir (no --out: a literal one would be refused, or taken, from
        # inside the log dir or the partition, and a second run would find it full).
        command = f"kdump salvage {where} && {command}"
    if finding.offset is not None:
        command = command.replace("OFFSET", str(finding.offset))
    return command
