"""Protobuf schemas given as .proto text, compiled to file descriptors with protoc (the compiler
that the `grpcio-tools` package carries, run in this process), in a private temporary directory.

Confluent's registry keeps Protobuf schemas in `_schemas` as .proto text, and a registry's
references name the other files by their import names: each text is written under its import name,
base64 descriptors are handed to protoc as a descriptor set, and protoc resolves the imports (the
well-known `google/protobuf/*` files come with the compiler).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from kdump.errors import DecodeError
from kdump.formats.payloads import missing


def _protoc() -> tuple[object, str]:
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:
        raise missing("grpcio-tools", "decoding Protobuf schemas kept as .proto text") from None
    return protoc, str(Path(grpc_tools.__file__).parent / "_proto")


def compile_proto(
    root: str, texts: Mapping[str, str], descriptors: Mapping[str, bytes], include: Path | None = None
) -> dict[str, bytes]:
    """The serialized `FileDescriptorProto` of `root` and of every file it imports, by file name.

    `texts` are .proto sources by import name (`root` among them), `descriptors` serialized file
    descriptors by name (for imports a registry keeps in that form); `include` a directory where
    the imports of a local .proto file are found.

    Raises:
        DecodeError: protoc rejects the sources (its message is given).
    """
    protoc, well_known = _protoc()
    from google.protobuf import descriptor_pb2

    with tempfile.TemporaryDirectory(prefix="kdump-proto-") as tmp:
        src = Path(tmp, "src")
        for name, text in texts.items():
            if name.startswith("/") or ".." in Path(name).parts:
                raise DecodeError(f"import name {name!r} leaves the source tree")
            path = src / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        args = [
            "protoc",
            f"-I{src}",
            *([f"-I{include}"] if include else []),
            f"-I{well_known}",
            "--include_imports",
        ]
        if descriptors:
            given = descriptor_pb2.FileDescriptorSet()
            for raw in descriptors.values():
                given.file.add().MergeFromString(raw)
            set_in = Path(tmp, "given.pb")
            set_in.write_bytes(given.SerializeToString())
            args.append(f"--descriptor_set_in={set_in}")
        out = Path(tmp, "out.pb")
        errors = Path(tmp, "errors.txt")
        args += [f"--descriptor_set_out={out}", root]
        code = _run_quietly(protoc, args, errors)
        if code != 0 or not out.exists():
            message = errors.read_text(encoding="utf-8", errors="replace").strip().replace(str(src) + "/", "")
            raise DecodeError(f"protoc rejects the .proto text: {message or f'exit {code}'}")
        result = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return {f.name: f.SerializeToString() for f in result.file}


def _run_quietly(protoc: object, args: list[str], errors: Path) -> int:
    """protoc's exit code; what it prints (on file descriptor 2) goes to `errors`, not the terminal."""
    saved = os.dup(2)
    try:
        with open(errors, "wb") as sink:
            os.dup2(sink.fileno(), 2)
            try:
                return int(protoc.main(args))  # type: ignore[attr-defined]
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)
