"""`verify` and tiered storage: a tiered partition's two log starts, and a remote store against its metadata.

**In a log dir.** A tiered partition (`kdump.ops.tiered.partitions`) starts at its checkpointed log start offset,
below its first local segment; that is legal. Its report carries both log starts, and when the
`__remote_log_metadata` that speaks for it is at hand, the offsets between must be covered by segments
whose copy finished (`remote-log-gap` otherwise: the broker answers a fetch there with
OffsetOutOfRange).

**A remote store** (`kdump.model.remote_store`) is checked against the replayed metadata
(`kdump.ops.tiered.remote_metadata`), partition by partition:

- a segment whose copy finished must have its files (`.log`, `.index`, `.timeindex`, `.snapshot`,
  `.leader_epoch_checkpoint`): `remote-segment-missing`; its bytes must be what the metadata says
  (size, first and last offset, leader epochs, max timestamp): `remote-segment-mismatch`;
- a segment whose copy started and never finished: `remote-segment-copy-unfinished`; whose deletion
  started and never finished: `remote-segment-delete-unfinished`;
- files of a segment the metadata does not know, or whose deletion finished: `remote-segment-unknown`;
- finished segments must follow each other without a hole: `remote-log-gap`;
- with no metadata for a partition, or none at all: `remote-metadata-missing`.

Every remote `.log` present is scanned and its indexes checked like a local segment (the same
findings), its producer snapshot and leader epoch checkpoint decoded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats import checkpoints
from kdump.formats.remote_names import REQUIRED_REMOTE_KINDS
from kdump.model.remote_store import RemotePartition, RemoteSegmentFiles, RemoteStore
from kdump.ops.checks.segment import SegmentResult
from kdump.ops.checks.state import check_snapshot
from kdump.ops.checks.transactions import check_transactions
from kdump.ops.checks.verify import (
    PartitionReport,
    VerifyOptions,
    add_up,
    check_segments,
    tally,
)
from kdump.ops.tiered.partitions import coverage_gaps
from kdump.ops.tiered.remote_metadata import (
    COPY_FINISHED,
    COPY_STARTED,
    DELETE_STARTED,
    PartitionRemoteLog,
    RemoteLogMetadata,
    RemoteSegment,
)
from kdump.scan.source import read_small_file

_MISSING_INDEX_CODES = frozenset({"index-missing", "time-index-missing"})


# ----------------------------------------------------------------------------------------- a remote store


def verify_remote_store(
    store: RemoteStore, metadata: RemoteLogMetadata | None, options: VerifyOptions
) -> Iterator[PartitionReport]:
    """One report per remote partition, then the store's roll-up."""
    leaves: list[PartitionReport] = []
    for part in store.partitions:
        remote = metadata.partitions.get((part.topic_id, part.partition)) if metadata is not None else None
        report = remote_partition_report(part, remote, metadata is not None, options)
        leaves.append(report)
        yield report
    rollup = PartitionReport(str(store.path), "log-dir", list(store.problems))
    rollup.taken_as = f"a remote store of {len(store.partitions)} partitions"
    if metadata is None:
        rollup.findings.append(
            make_finding(
                "remote-metadata-missing",
                str(store.path),
                "no __remote_log_metadata was given (a log dir holding __remote_log_metadata-N beside the store, "
                "or --remote-log-metadata): the remote segments could not be checked against what the brokers "
                "recorded",
            )
        )
    else:
        rollup.findings.extend(metadata.findings)
    add_up(rollup, leaves, None)
    yield rollup


def remote_partition_report(
    part: RemotePartition, remote: PartitionRemoteLog | None, have_metadata: bool, options: VerifyOptions
) -> PartitionReport:
    """Check one remote partition's files, and them against its metadata."""
    report = PartitionReport(str(part.path), "partition", list(part.problems))
    present = sorted((f for f in part.segments.values() if "log" in f.files), key=lambda f: f.start_offset)
    report.log_bytes = sum(f.sizes.get("log", 0) for f in present)
    results = [
        _as_remote(r, remote is not None) for r in check_segments([f.segment() for f in present], options)
    ]
    tally(report, results)
    by_id = {f.segment_id: r for f, r in zip(present, results, strict=True)}
    for files in part.segments.values():
        report.findings.extend(_side_files(files))
    if remote is None:
        if have_metadata:
            report.findings.append(
                make_finding(
                    "remote-metadata-missing",
                    str(part.path),
                    f"the __remote_log_metadata given holds no record of {part.label} (topic id {part.topic_id}): "
                    "its segments could not be checked against what the brokers recorded",
                )
            )
        return report
    report.findings.extend(_against_metadata(part, remote, by_id))
    finished = remote.finished()
    ordered = [by_id[s.segment_id] for s in finished if s.segment_id in by_id]
    report.findings.extend(check_transactions(ordered))
    if finished:
        report.findings.extend(
            coverage_gaps(
                remote, finished[0].start_offset, max(s.end_offset for s in finished), str(part.path)
            )
        )
    return report


def _as_remote(result: SegmentResult, said_missing: bool) -> SegmentResult:
    """A remote segment's scan findings, judged as the broker meets them there: it fetches a remote index
    into its cache and fails on any damage (it rebuilds only local indexes), so index findings are errors.
    A missing index is the segment's missing file, said once (`remote-segment-missing`)."""
    out: list[Finding] = []
    for f in result.findings:
        if said_missing and f.code in _MISSING_INDEX_CODES:
            continue
        if f.code.startswith(("index-", "time-index-", "txn-index-")) and f.code != "index-preallocated-tail":
            f = replace(
                f,
                severity=max(f.severity, Severity.ERROR),
                message=f"{f.message} (a remote index: the broker fetches it as it is and fails on it)",
            )
        out.append(f)
    return replace(result, findings=tuple(out))


def _side_files(files: RemoteSegmentFiles) -> list[Finding]:
    out: list[Finding] = []
    snapshot = files.files.get("snapshot")
    if snapshot is not None:
        out.extend(check_snapshot(snapshot))
    epochs = files.files.get("leader_epoch_checkpoint")
    if epochs is not None:
        try:
            checkpoints.decode_leader_epoch_checkpoint(read_small_file(epochs))
        except (DecodeError, ValueError) as exc:
            out.append(make_finding("checkpoint-corrupt", str(epochs), str(exc)))
        except KdumpError as exc:
            out.append(make_finding("unreadable-file", str(epochs), str(exc)))
    return out


def _against_metadata(
    part: RemotePartition, remote: PartitionRemoteLog, results: dict[str, SegmentResult]
) -> Iterator[Finding]:
    label = str(part.path)
    for seg in sorted(remote.segments.values(), key=lambda s: (s.start_offset, s.segment_id)):
        files = part.segments.get(seg.segment_id)
        where = f"segment {seg.segment_id} (offsets {seg.start_offset}..{seg.end_offset})"
        said = f"__remote_log_metadata ({seg.source}, offset {seg.record_offset})"
        if seg.state == COPY_STARTED:
            have = "its files are partly there" if files is not None else "none of its files is there"
            yield make_finding(
                "remote-segment-copy-unfinished",
                label,
                f"the copy of {where} started and never finished per {said}; {have}. The broker never serves "
                "it and copies the local segment again",
                offset=seg.start_offset,
            )
            continue
        if seg.state == DELETE_STARTED:
            yield make_finding(
                "remote-segment-delete-unfinished",
                label,
                f"the deletion of {where} started and has not finished per {said}; the broker retries it",
                offset=seg.start_offset,
            )
            continue
        if seg.state != COPY_FINISHED:
            continue
        missing = [k for k in REQUIRED_REMOTE_KINDS if files is None or k not in files.files]
        if missing:
            yield make_finding(
                "remote-segment-missing",
                label,
                f"{where} is copied per {said} but its {', '.join('.' + k for k in missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not in the remote store: fetches of it fail",
                offset=seg.start_offset,
            )
        result = results.get(seg.segment_id)
        if files is not None and result is not None:
            yield from _mismatch(label, where, said, seg, files, result)
    known = set(remote.segments) | set(remote.deleted)
    for seg_id, files in sorted(part.segments.items(), key=lambda kv: kv[1].start_offset):
        deleted = remote.deleted.get(seg_id)
        if seg_id in known and deleted is None:
            continue
        why = (
            f"its deletion finished per __remote_log_metadata ({deleted.source}, offset {deleted.record_offset})"
            if deleted is not None
            else "__remote_log_metadata does not know it"
        )
        yield make_finding(
            "remote-segment-unknown",
            str(next(iter(files.files.values()))),
            f"remote segment {seg_id} (from offset {files.start_offset}, {len(files.files)} files) is in the store "
            f"but {why}: the broker never reads or deletes it",
            offset=files.start_offset,
        )


def _mismatch(
    label: str, where: str, said: str, seg: RemoteSegment, files: RemoteSegmentFiles, result: SegmentResult
) -> Iterator[Finding]:
    problems: list[str] = []
    size = files.sizes.get("log")
    if size is not None and size != seg.size:
        problems.append(f"its .log holds {size} bytes, not {seg.size}")
    if files.start_offset != seg.start_offset:
        problems.append(f"its files are named for offset {files.start_offset}, not {seg.start_offset}")
    s = result.summary
    if s is not None and not s.partial:
        if s.first_offset is not None and s.first_offset != seg.start_offset:
            problems.append(f"its first offset is {s.first_offset}, not {seg.start_offset}")
        if s.last_offset is not None and s.last_offset != seg.end_offset:
            problems.append(f"its last offset is {s.last_offset}, not {seg.end_offset}")
        if s.max_timestamp is not None and s.max_timestamp != seg.max_timestamp:
            problems.append(f"its max timestamp is {s.max_timestamp}, not {seg.max_timestamp}")
    epochs = _epoch_starts(result.epochs)
    if epochs and epochs != seg.leader_epochs:
        problems.append(f"its batches carry leader epochs {epochs}, not {seg.leader_epochs}")
    if problems:
        yield make_finding(
            "remote-segment-mismatch",
            label,
            f"{where} is not what {said} says: {'; '.join(problems)}",
            offset=seg.start_offset,
        )


def _epoch_starts(epochs: Sequence[tuple[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for epoch, first in epochs:
        out.setdefault(epoch, first)
    return out
