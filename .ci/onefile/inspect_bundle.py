"""What the built file holds: the highest glibc symbol version asked for by PyInstaller's
bootloader or any binary packed inside it (the glibc the staticx wrapper must carry, at least), and
what the staticx wrapper carries (its libraries, their glibc). Run in the build root, where
PyInstaller, staticx and pyelftools are installed.

    python inspect_bundle.py dist/kdump-pyinstaller dist/kdump > bundle.json
"""

from __future__ import annotations

import io
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


def staticx_archive(wrapped: Path) -> dict[str, object]:
    """The libraries the staticx wrapper unpacks next to the program, and the glibc among them."""
    import tarfile

    from elftools.elf.elffile import ELFFile

    with wrapped.open("rb") as f:
        elf = ELFFile(f)
        static = not any(seg["p_type"] == "PT_INTERP" for seg in elf.iter_segments())
        section = elf.get_section_by_name(".staticx.archive")
        data = section.data() if section is not None else b""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        program = tar.getmember(".staticx.prog").linkname
        names = sorted(
            m.name for m in tar.getmembers() if m.name not in (program, ".staticx.prog", ".staticx.interp")
        )
        libc = tar.extractfile("libc.so.6") if "libc.so.6" in names else None
        found = re.findall(rb"GNU C Library [^\n]*?release version (\d+\.\d+)", libc.read()) if libc else []
    return {
        "static_executable": static,
        "carried_libraries": names,
        "carried_glibc": found[0].decode() if found else None,
        "staticx": __import__("staticx.version").version.__version__,
    }


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
            **staticx_archive(Path(sys.argv[2])),
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
