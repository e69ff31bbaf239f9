"""What the built file needs of the host: the highest glibc symbol version asked for by the
bootloader or any binary packed inside it (run in the build root, where PyInstaller is installed).

    python inspect_bundle.py dist/kdump > bundle.json
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from PyInstaller.archive.readers import CArchiveReader


def glibc_versions(path: Path) -> set[tuple[int, ...]]:
    out = subprocess.run(["objdump", "-T", str(path)], capture_output=True, text=True, check=False).stdout
    return {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", out)}


def main() -> None:
    exe = Path(sys.argv[1])
    floor: tuple[int, ...] = (0,)
    floor_from = exe.name
    elves = 0
    archive = CArchiveReader(str(exe))
    with tempfile.TemporaryDirectory() as tmp:
        members = [("(bootloader)", exe)]
        for name in archive.toc:
            data = archive.extract(name)
            if isinstance(data, bytes) and data[:4] == b"\x7fELF":
                path = Path(tmp) / f"{len(members)}.so"
                path.write_bytes(data)
                members.append((name, path))
        for name, path in members:
            elves += 1
            versions = glibc_versions(path)
            if versions and max(versions) > floor:
                floor, floor_from = max(versions), name
    json.dump(
        {
            "glibc_floor": ".".join(map(str, floor)),
            "glibc_floor_from": floor_from,
            "binaries": elves,
            "python": sys.version.split()[0],
            "pyinstaller": __import__("PyInstaller").__version__,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
