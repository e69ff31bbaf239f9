"""Writing a salvage: the output directory, the clean partition, the records, the report.

The input is only read. The output directory is new (or empty), never inside a Kafka log dir
(a broker would take anything there for a partition) nor inside the partition salvaged; every
file in it is created exclusively and without following symbolic links, so nothing existing is
ever overwritten.

The clean partition holds the kept batches of each segment, byte for byte and in their order,
under the segment's original name (offsets keep their values; a gap is left where damage was, as
after compaction). Its `.index`, `.timeindex` and `.txnindex` are built by `kdump.ops.repair.reindex`'s
rule, so `kdump reindex` on it finds nothing to do; then it is verified.
"""

from __future__ import annotations

import importlib
import json
import os
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kdump.errors import DecodeError, KdumpError, PathError, RefusedError
from kdump.formats import fast_records
from kdump.formats.arrow_columns import payload_of
from kdump.formats.batch import BatchHeader, decode_legacy_header, decode_v2_header, v2_crc
from kdump.formats.checkpoints import decode_partition_metadata
from kdump.formats.constants import V2_HEADER_SIZE
from kdump.formats.filenames import LOCK_FILE, LOG_DIR_FILES, PARTITION_METADATA, parse_partition_dir_name
from kdump.formats.records import Record
from kdump.model.entries import list_dir
from kdump.model.log_dir import Target, looks_like_partition_dir
from kdump.model.partition import PartitionDir
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.repair.preflight import check_room
from kdump.ops.repair.reindex import DEFAULT_INDEX_INTERVAL_BYTES, plan_partition
from kdump.ops.repair.safety import CALLS, fsync_dir
from kdump.ops.salvage.durable import Syncs
from kdump.ops.salvage.guard import open_output, output_removed_on_fault, salvage_needs, sync_close
from kdump.ops.salvage.partial import partial_batches
from kdump.ops.salvage.plan import SalvagePlan, plan_salvage
from kdump.ops.salvage.read import PageRelease, batch_records, kept_batches
from kdump.ops.salvage.report import build_report
from kdump.ops.salvage.result import CleanPartition, SalvageResult
from kdump.scan.source import open_buffer, read_small_file

RECORDS_JSONL = "records.jsonl"
RECORDS_PARQUET = "records.parquet"
PARTIAL_JSONL = "partial-unverified.jsonl"
REPORT_JSON = "report.json"

_STORED_CRC = struct.Struct(">I")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

RecordLine = Callable[[Record, BatchHeader, str], str]
"""A record as one JSON line: `kdump.render.jsonl.record_line`, given by the caller (ops cannot
import render)."""
BatchLines = Callable[[Any, BatchHeader, str], bytes | None]
"""The record lines of a whole batch from its decompressed records, through the compiled record
path (`kdump.render.fast_lines`), or None when the batch needs the reference (`RecordLine`)."""


def _inside_log_dir(path: Path, source: Path) -> Path | None:
    """The Kafka log dir `path` would be inside, if any."""
    holder = source.resolve().parent
    for anc in [path, *path.parents]:
        if not anc.is_dir():
            continue
        if (anc / "meta.properties").is_file():
            return anc
        # A broker's `.lock` beside partition directories, or the directory holding the input.
        if ((anc / ".lock").exists() or anc == holder) and _holds_broker_partitions(anc):
            return anc
    return None


def _holds_broker_partitions(path: Path) -> bool:
    """Whether a broker would load partitions from `path`: its checkpoints are there, or directories
    named `<topic>-<partition>` with a partition's content (a broker takes no other name), so a
    `.lock` beside directories of other names (a test runner's, a build tool's) is no log dir."""
    names = list_dir(path)
    if isinstance(names, str):
        return False
    if any(n in LOG_DIR_FILES and n != LOCK_FILE for n in names):
        return True
    return any(
        parse_partition_dir_name(n) is not None and (path / n).is_dir() and looks_like_partition_dir(path / n)
        for n in names
    )


def default_out_dir(partition: Path, log_dir: Path | None, now: float | None = None) -> Path:
    """A new salvage directory when --out is not given: `<log dir>.kdump-salvage/<partition>-<UTC
    stamp>` beside the log dir holding the partition (or beside the directory holding it), as
    repairs put their backups. Outside every log dir whatever the working directory, so a printed
    `kdump salvage P && kdump trim-tail --apply P` runs as printed from the log dir or the partition
    itself, and a second salvage of the same partition gets a directory of its own."""
    anchor = (log_dir if log_dir is not None else partition.resolve().parent).resolve()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    base = anchor.parent / f"{anchor.name or 'root'}.kdump-salvage"
    name = f"{partition.resolve().name}-{stamp}"
    candidate, n = base / name, 1
    while candidate.exists():
        n += 1
        candidate = base / f"{name}-{n}"
    return candidate


@dataclass(frozen=True, slots=True)
class OutputDir:
    """The salvage's output directory: new or empty, outside any log dir."""

    path: Path

    @classmethod
    def create(cls, out: Path, source: Path) -> OutputDir:
        """Create (or take an empty) `out` for a salvage of the partition `source`.

        Raises:
            RefusedError: `out` is a link, a file, a non-empty directory, inside a log dir or
                inside the partition.
            PathError: it cannot be created.
        """
        if out.is_symlink():
            raise RefusedError(f"--out {out} is a symbolic link; kdump does not write through links")
        if out.exists():
            if not out.is_dir():
                raise RefusedError(f"--out {out} exists and is not a directory")
            if any(out.iterdir()):
                raise RefusedError(
                    f"--out {out} is not empty; salvage writes only into a new or empty directory"
                )
        resolved = Path(os.path.abspath(out))  # noqa: PTH100  (links in it are resolved below)
        real = resolved.resolve()
        src = source.resolve()
        if real == src or src in real.parents:
            raise RefusedError(f"--out {out} is inside the partition being salvaged")
        log_dir = _inside_log_dir(real, source)
        if log_dir is not None:
            raise RefusedError(
                f"--out {out} is inside the Kafka log dir {log_dir}; a broker would take it for a partition"
            )
        try:
            resolved.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PathError(f"cannot create {out}: {exc.strerror or exc}") from exc
        return cls(resolved)

    def open_new(self, name: str | Path, text: bool = False, buffering: int = -1) -> IO[Any]:
        """Create a file under the directory exclusively (never overwriting, never through a link)."""
        path = self.path / name
        try:
            fd = CALLS.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o644)
        except FileExistsError as exc:
            raise RefusedError(f"{path} already exists; salvage never overwrites a file") from exc
        return open_output(fd, text=text, buffering=buffering)

    def mkdir(self, name: str) -> Path:
        """Create a new subdirectory (it must not exist)."""
        path = self.path / name
        try:
            CALLS.mkdir(path)
        except FileExistsError as exc:
            raise RefusedError(
                f"{path} already exists; salvage never writes into an existing directory"
            ) from exc
        return path


_close_synced = sync_close


def write_clean_partition(
    plan: SalvagePlan,
    out: OutputDir,
    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    syncs: Syncs | None = None,
) -> CleanPartition:
    """Write the kept batches byte for byte, then indexes by the reindex rule, then verify it. Its
    files and directories are fsynced on `syncs`' thread (the caller waits for them with
    `Syncs.finish` before it reports success); without `syncs`, before this returns."""
    if syncs is None:
        with Syncs() as own:
            clean = write_clean_partition(plan, out, interval_bytes, own)
            own.finish()
        return clean
    part = plan.partition
    dest = out.mkdir(part.name)
    clean = CleanPartition(dest)
    for sp in plan.segments:
        seg = sp.segment
        assert seg.log is not None
        if sp.summary is None:
            clean.omitted[seg.log.name] = f"cannot be read: {sp.unreadable}"
            continue
        if not sp.kept and sp.summary.size > 0:
            clean.omitted[seg.log.name] = "no batch in it verifies"
            continue
        fh = out.open_new(Path(part.name) / f"{seg.name}.log")
        with open_buffer(seg.log) as buf:
            release = PageRelease(buf)
            start = end = 0  # the range of adjacent kept batches not written yet
            for position, size, magic, crc in sp.kept.checked():
                # The checksum is verified again on the very bytes copied: a file that changed since
                # it was scanned stops the salvage rather than put unverified bytes in.
                _check_unchanged(buf, position, size, magic, crc, seg.log)
                if position != end or end - start >= _WRITE_RUN:
                    fh.write(buf[start:end])
                    release(end)
                    start = position
                end = position + size
                clean.log_bytes += size
            fh.write(buf[start:end])
        syncs.sync_close(fh)
        clean.segments.append(f"{seg.name}.log")
        clean.batches += len(sp.kept)
    rebuilt = plan_partition(PartitionDir.load(dest), None, interval_bytes=interval_bytes, rebuild_all=True)
    for change in rebuilt.changes:
        fh = out.open_new(Path(part.name) / change.path.name)
        fh.write(change.data)
        syncs.sync_close(fh)
        clean.index_files.append(change.path.name)
    _copy_partition_metadata(part, out, clean, syncs)
    for p in [*part.snapshots.values(), part.leader_epoch_checkpoint, *part.leftovers, *part.other_files]:
        if p is not None:
            clean.omitted[p.name] = _why_not_copied(p.name)
    syncs.sync_dir(dest)
    syncs.sync_dir(out.path)
    target = Target(str(dest), dest, "partition", None)
    # An empty partition salvages to an empty one: that is what there was.
    clean.verify = next(iter(verify_targets([target], VerifyOptions(jobs=1, allow_empty=True))))
    # verify's own verdict, unfiltered: `kdump verify` of the clean partition says the same. The
    # offsets of the damaged batches are missing from it by design (an `offset-hole` warning, the
    # report's lost offsets).
    return clean


_JSONL_BUFFER = 1 << 20

# Adjacent kept batches are copied in one write of up to this many bytes.
_WRITE_RUN = 4 << 20


def _check_unchanged(buf: memoryview, position: int, size: int, magic: int, crc: int, log: Path) -> None:
    end = position + size
    if len(buf) >= end and magic == 2 and size >= V2_HEADER_SIZE:
        # The stored checksum and the checksum of the bytes now there, without a header object.
        now_ok = _STORED_CRC.unpack_from(buf, position + 17)[0] == crc == v2_crc(buf, position, size)
    else:
        now = (decode_v2_header if magic == 2 else decode_legacy_header)(buf, position, size)
        now_ok = len(buf) >= end and now.crc_ok and now.crc == crc
    if not now_ok:
        raise KdumpError(f"{log} changed while it was being salvaged (batch at position {position})")


def _why_not_copied(name: str) -> str:
    if name.endswith(".snapshot"):
        return "producer state names offsets that may be lost; the broker rebuilds it from the log"
    if name == "leader-epoch-checkpoint":
        return "it may name epochs past the salvaged log end; the broker rebuilds it from the batches"
    return "not a file of the partition's log"


def _copy_partition_metadata(part: PartitionDir, out: OutputDir, clean: CleanPartition, syncs: Syncs) -> None:
    src = part.partition_metadata
    if src is None:
        return
    try:
        data = read_small_file(src)
        decode_partition_metadata(data)
    except (DecodeError, KdumpError, ValueError) as exc:
        clean.omitted[PARTITION_METADATA] = f"it does not parse: {exc}"
        return
    fh = out.open_new(Path(part.name) / PARTITION_METADATA)
    fh.write(data)
    syncs.sync_close(fh)
    clean.copied.append(PARTITION_METADATA)


def salvage(
    part: PartitionDir,
    out: Path,
    *,
    record_line: RecordLine,
    batch_lines: BatchLines | None = None,
    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    parquet: bool = True,
    interval_source: str = "the broker default",
    progress: Callable[[int], None] | None = None,
    source: Path | None = None,
    rerun: Sequence[str | Path] | None = None,
) -> SalvageResult:
    """Salvage a partition directory into `out`: clean partition, records, partial records, report;
    `progress` is told the bytes of each kept batch as its records are written. `source` is what
    --out must not lie in: the partition directory, or the segment file given alone."""
    # pyarrow (0.1-0.2 s, mostly its libraries' pages coming in) is imported on a thread while the
    # plan scans, and waited for before anything is written: a missing pyarrow still fails first.
    # Both together peak below what the records pass holds (plan 38 MiB + pyarrow 33 on 71k
    # batches, against 91).
    loading = _ImportThread("kdump.ops.salvage.parquet", "load_pyarrow") if parquet else None
    try:
        plan = plan_salvage(part)
    finally:
        if loading is not None:
            loading.join()
    if loading is not None:
        loading.result()
    check_room("salvage", salvage_needs(part, out))
    with output_removed_on_fault(out, part.path, rerun or ("kdump", "salvage", "--out", out, part.path)):
        odir = OutputDir.create(out, source or part.path)
        # The fsyncs of every file but the report run on a thread while the work goes on, and are
        # all waited for (any error raised, so the output is removed) before the report is written.
        with Syncs() as syncs:
            clean = write_clean_partition(plan, odir, interval_bytes, syncs)
            result = SalvageResult(plan, odir.path, clean, parquet=parquet)
            _write_records(result, odir, record_line, batch_lines, progress, syncs)
            _write_partial(result, odir, record_line, syncs)
            syncs.finish()
        result.report = build_report(result, interval_bytes, interval_source)
        fh = odir.open_new(REPORT_JSON, text=True)
        json.dump(result.report, fh, indent=2)
        fh.write("\n")
        _close_synced(fh)
        fsync_dir(odir.path)
    return result


class _ImportThread(threading.Thread):
    """Call `module.name()` on a thread: `result()` then raises what it raised."""

    def __init__(self, module: str, name: str) -> None:
        super().__init__(name="kdump-import", daemon=True)
        self._call = (module, name)
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            getattr(importlib.import_module(self._call[0]), self._call[1])()
        except BaseException as exc:  # re-raised on the caller's thread
            self._error = exc

    def result(self) -> None:
        if self._error is not None:
            raise self._error


def _write_records(
    result: SalvageResult,
    odir: OutputDir,
    record_line: RecordLine,
    batch_lines: BatchLines | None,
    progress: Callable[[int], None] | None,
    syncs: Syncs,
) -> None:
    """records.jsonl and records.parquet, batch by batch as they are read (constant memory):
    clean batches from the compiled record path's buffers (lines rendered in C, Arrow columns),
    the others record by record the reference way."""
    part = result.plan.partition
    # The lines of a batch are a few KiB: with the default 8 KiB buffer nearly every batch was a
    # write of its own (71,246 system calls for a segment of small batches).
    jsonl = odir.open_new(RECORDS_JSONL, buffering=_JSONL_BUFFER)
    pq_writer = None
    pq_file = None
    if result.parquet:
        from kdump.ops.salvage.parquet import ParquetRecords

        pq_file = odir.open_new(RECORDS_PARQUET)
        pq_writer = ParquetRecords(pq_file, part.topic, part.partition)
    # Both files start their writeback as they grow: the final fsyncs wait for little.
    jsonl_back = syncs.writeback(jsonl, beside=pq_file)
    compiled = batch_lines is not None and fast_records.compiled is not None
    for seg, buf, batch in kept_batches(result.plan):
        if progress is not None:
            progress(batch.size)
        file = str(seg.log)
        data = payload_of(buf, batch) if compiled else None
        lines = batch_lines(data, batch, file) if data is not None and batch_lines is not None else None
        if lines is not None and batch.count:
            jsonl.write(lines)
            jsonl_back.wrote(len(lines))
            result.records += batch.count
            if pq_writer is not None:
                pq_writer.add_clean(seg, batch, data)
            continue
        records = batch_records(seg, buf, batch, result.record_findings)
        if not records:
            continue
        text = ("\n".join([record_line(r, batch, file) for r in records]) + "\n").encode()
        jsonl.write(text)
        jsonl_back.wrote(len(text))
        result.records += len(records)
        if batch.is_control:
            result.control_records += len(records)
        if pq_writer is not None:
            pq_writer.add_batch(seg, batch, records)
    jsonl_back.close()
    if pq_writer is not None and pq_file is not None:
        pq_writer.close()
        syncs.sync_close(pq_file)


def _write_partial(result: SalvageResult, odir: OutputDir, record_line: RecordLine, syncs: Syncs) -> None:
    fh = odir.open_new(PARTIAL_JSONL, text=True)
    for pb in partial_batches(result.plan):
        assert pb.segment.log is not None
        result.partial_dropped += pb.dropped
        result.partial_by_batch[(str(pb.segment.log), pb.batch.position)] = len(pb.records)
        for r in pb.records:
            row = json.loads(record_line(r, pb.batch, str(pb.segment.log)))
            row["type"] = "unverified-record"
            row["unverified"] = True
            row["batch_crc"] = pb.batch.crc
            row["batch_computed_crc"] = pb.batch.computed_crc
            row["decoding_stopped"] = pb.stopped
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")
            result.partial_records += 1
    syncs.sync_close(fh)
