# A directory's entries and its small files' bytes in one call (kdump/scan/_dirfiles.c);
# kdump/scan/held.py uses it.
import os

def read_dir(
    path: str | bytes | os.PathLike[str], file_limit: int, budget: int
) -> list[tuple[str, int, int, bytes | None]] | None: ...
