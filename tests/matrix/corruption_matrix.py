"""The corruption matrix: named damages to real Kafka 3.8.0 segments, each with its expected finding.

Cases, all on segments written by the real broker (`shared/corpus`, or the bundled subset):

* **bit flips in every byte of an entry header**: all 61 bytes of a v2 batch header, and every byte of a
  legacy message header (offset, length, crc, magic, attributes, v1 timestamp, key length and value
  length), on the first, a middle and the last entry of segments of every codec and magic. Byte `i` gets
  bit `i % 8` flipped, and its top bit (the sign bit of the field's first byte) in a second case; the magic
  byte gets each of its 8 bits flipped.
* **truncation at every byte of the last batch** of segments of every codec and magic (cut `+0` is the
  batch boundary, a clean end).
* **zero tails** of 1, 17, 18, 61 and 4096 bytes and 1 MiB, and **garbage tails** of 1, 17, 18, 100 and
  4096 random bytes (three seeds each), appended after the last batch.

Each case is scanned in FORENSIC mode (shallow, and deep: decompression and records), and in RECOVERY
mode. A flip is scanned in a window of the damaged entry with its neighbours (the entries before and after
it, sliced from the real segment, with the segment's base offset), so the expected findings can name the
next batch; what the undamaged window already reports (its first entry looks like the segment's first) is
subtracted. The expected outcome of every case is derived from the rules the findings catalog documents
(`kdump/findings.py`), from the damaged header's fields, never by running kdump's checks (the offsets a
damaged legacy wrapper now carries are read with kdump's decoder, which the differential tests hold to
Kafka's):

* a byte covered by the checksum (v2: attributes to the end; legacy: magic to the end) and the stored
  checksum itself: `crc-mismatch` at the batch; `valid_bytes` (the broker's recovery point) is the batch's
  position; the next batch is still read (salvaged) in forensic mode. A checksum-failing batch keeps its
  offsets for the next batch's continuity check only when its base offset continues the log.
* bytes no checksum covers:
  - baseOffset / legacy offset: the batch stays valid; the offset checks name it, or the next batch:
    `offset-below-base` / `offset-overflow` / `segment-base-mismatch` (against the segment's base),
    `offset-regression` / `offset-gap` (against the neighbours).
  - batchLength / legacy length: `invalid-batch-length` (below the format's minimum, or past the end with
    a valid batch after it, then `skipped-bytes` to it), `partial-trailing-batch` (past the end of the file,
    nothing after it), or, when the wrong length still frames an entry, `crc-mismatch` (the checksum is
    computed over the wrong bytes) followed by whatever the misframed bytes give until the scan resyncs.
  - partitionLeaderEpoch: the batch stays valid; `leader-epoch-regression` where an epoch falls below an
    earlier one (the flipped batch, or the next one when the flip raised it); nothing when it turns negative.
  - the v2 magic byte: `unsupported-magic` then `skipped-bytes` for magic > 2 or < 0; for 0 or 1 the
    batch is read as a legacy message and fails its checksum (`crc-mismatch`).
* truncation inside the last batch: `partial-trailing-batch` at the batch (or `zero-filled-tail` when the
  bytes left are all zeros); `valid_bytes` is the batch's position.
* zero tail: `zero-filled-tail` at the old end of the file; garbage tail: at the old end, a
  `partial-trailing-batch` (17 bytes or fewer) or the framing error the garbage's length and magic give
  (`invalid-batch-length`, `unsupported-magic`, `crc-mismatch`); `valid_bytes` is the old end.

`python tests/matrix/corruption_matrix.py` prints the Markdown table of the results (the tests README's
reliability section between `<!-- matrix:start -->` and `<!-- matrix:end -->`); `--write-readme` rewrites
that part of tests/README.md in place; `--corpus PATH` picks the corpus (default: the full one beside the
checkout, else the bundled subset; the README table is made from the full corpus).
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from kdump.findings import Finding  # noqa: E402
from kdump.formats.batch import BatchHeader  # noqa: E402
from kdump.formats.constants import MAX_RELATIVE_OFFSET  # noqa: E402
from kdump.scan.events import ScanMode, ScanSummary  # noqa: E402
from kdump.scan.log_scanner import scan_log  # noqa: E402

REPO_ROOT = _TESTS.parent
README = REPO_ROOT / "tests" / "README.md"
START_MARKER = "<!-- matrix:start -->"
END_MARKER = "<!-- matrix:end -->"

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# --- the segments ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """A real segment and which of its entries the matrix damages."""

    key: str
    label: str
    rel: str
    codec: int | None = None  # flip only entries of this codec
    full_only: bool = False  # not in the bundled subset


FLIP_SUBJECTS = (
    Subject("v2-none", "v2 none", "kafka-3.8.0/timestamps-0/00000000000000001166.log"),
    Subject("v2-none-kraft", "v2 none (KRaft metadata, epoch 1)", "kafka-3.8.0/__cluster_metadata-0/00000000000000000000.log"),
    Subject("v2-gzip", "v2 gzip", "kafka-3.8.0-running-copy/live-0/00000000000000008074.log", codec=1),
    Subject("v2-snappy", "v2 snappy", "kafka-3.8.0/c-snappy-0/00000000000000002982.log"),
    Subject("v2-lz4", "v2 lz4 (LogAppendTime)", "kafka-3.8.0/log-append-time-0/00000000000000001358.log"),
    Subject("v2-zstd", "v2 zstd", "kafka-3.8.0-zk-legacy/mixed-formats-0/00000000000000001780.log", codec=4),
    Subject("v2-txn", "v2 transactional + markers", "kafka-3.8.0/txn-1/00000000000000000547.log"),
    Subject("v0-none", "v0 none", "kafka-3.8.0-zk-legacy/legacy-v0-none-0/00000000000000000645.log"),
    Subject("v0-gzip", "v0 gzip", "kafka-3.8.0-zk-legacy/legacy-v0-gzip-0/00000000000000000000.log", full_only=True),
    Subject("v0-snappy", "v0 snappy", "kafka-3.8.0-zk-legacy/legacy-v0-snappy-0/00000000000000000315.log", full_only=True),
    Subject("v0-lz4", "v0 lz4", "kafka-3.8.0-zk-legacy/legacy-v0-lz4-0/00000000000000000770.log"),
    Subject("v1-none", "v1 none", "kafka-3.8.0-zk-legacy/legacy-v1-none-0/00000000000000000767.log", full_only=True),
    Subject("v1-gzip", "v1 gzip (LogAppendTime)", "kafka-3.8.0-zk-legacy/legacy-v1-lat-0/00000000000000000471.log"),
    Subject("v1-snappy", "v1 snappy", "kafka-3.8.0-zk-legacy/legacy-v1-snappy-0/00000000000000000221.log", full_only=True),
    Subject("v1-lz4", "v1 lz4", "kafka-3.8.0-zk-legacy/legacy-v1-lz4-0/00000000000000000749.log"),
)  # fmt: skip

# Segments whose last entry is cut at every byte (chosen for last entries of a few hundred bytes to a
# few KiB: every cut also runs the forensic resync search over what is left).
TRUNCATE_SUBJECTS = (
    Subject("v2-none", "v2 none", "kafka-3.8.0/timestamps-0/00000000000000001166.log"),
    Subject("v2-gzip", "v2 gzip", "kafka-3.8.0-running-copy/live-0/00000000000000008074.log"),
    Subject("v2-snappy", "v2 snappy", "kafka-3.8.0/c-snappy-0/00000000000000002982.log"),
    Subject("v2-lz4", "v2 lz4", "kafka-3.8.0/compacted-sparse-0/00000000000000001201.log"),
    Subject("v2-zstd", "v2 zstd", "kafka-3.8.0-zk-legacy/mixed-formats-0/00000000000000001780.log"),
    Subject("v2-marker", "v2 COMMIT marker", "kafka-3.8.0/txn-1/00000000000000000547.log"),
    Subject("v0-none", "v0 none", "kafka-3.8.0-zk-legacy/legacy-v0-none-0/00000000000000000645.log"),
    Subject("v0-gzip", "v0 gzip", "kafka-3.8.0-zk-legacy/legacy-v0-gzip-0/00000000000000000000.log", full_only=True),
    Subject("v0-snappy", "v0 snappy", "kafka-3.8.0-zk-legacy/legacy-v0-snappy-0/00000000000000000315.log", full_only=True),
    Subject("v0-lz4", "v0 lz4", "kafka-3.8.0-zk-legacy/legacy-v0-lz4-0/00000000000000000000.log", full_only=True),
    Subject("v1-none", "v1 none", "kafka-3.8.0-zk-legacy/legacy-v1-none-0/00000000000000000767.log", full_only=True),
    Subject("v1-gzip", "v1 gzip", "kafka-3.8.0-zk-legacy/legacy-v1-gzip-0/00000000000000000000.log", full_only=True),
    Subject("v1-snappy", "v1 snappy", "kafka-3.8.0-zk-legacy/legacy-v1-snappy-0/00000000000000000221.log", full_only=True),
    Subject("v1-lz4", "v1 lz4", "kafka-3.8.0-zk-legacy/legacy-v1-lz4-0/00000000000000000749.log"),
)  # fmt: skip

TAIL_SUBJECTS = (
    Subject("v2-none", "v2 none", "kafka-3.8.0/timestamps-0/00000000000000001166.log"),
    Subject("v2-zstd", "v2 zstd", "kafka-3.8.0-zk-legacy/mixed-formats-0/00000000000000001780.log"),
    Subject("v0-none", "v0 none", "kafka-3.8.0-zk-legacy/legacy-v0-none-0/00000000000000000645.log"),
    Subject("v1-lz4", "v1 lz4", "kafka-3.8.0-zk-legacy/legacy-v1-lz4-0/00000000000000000749.log"),
)
ZERO_TAILS = (1, 17, 18, 61, 4096, 1 << 20)
GARBAGE_TAILS = (1, 17, 18, 100, 4096)
GARBAGE_SEEDS = (0, 1, 2)

# --- header fields --------------------------------------------------------------------------------

# (first byte, last byte, name, covered by the checksum)
V2_FIELDS = (
    (0, 7, "baseOffset", False),
    (8, 11, "batchLength", False),
    (12, 15, "partitionLeaderEpoch", False),
    (16, 16, "magic", False),
    (17, 20, "crc", True),
    (21, 22, "attributes", True),
    (23, 26, "lastOffsetDelta", True),
    (27, 34, "baseTimestamp", True),
    (35, 42, "maxTimestamp", True),
    (43, 50, "producerId", True),
    (51, 52, "producerEpoch", True),
    (53, 56, "baseSequence", True),
    (57, 60, "recordsCount", True),
)


def legacy_fields(entry: bytes, magic: int) -> list[tuple[int, int, str, bool]]:
    """The header bytes of a legacy message (relative to its start): the fixed part and both length
    fields (the value length follows the key, wherever that ends)."""
    fields = [
        (0, 7, "offset", False),
        (8, 11, "length", False),
        (12, 15, "crc", True),
        (16, 16, "magic", True),
    ]
    fields.append((17, 17, "attributes", True))
    key_at = 18
    if magic == 1:
        fields.append((18, 25, "timestamp", True))
        key_at = 26
    fields.append((key_at, key_at + 3, "key length", True))
    (key_len,) = struct.unpack_from(">i", entry, key_at)
    value_at = key_at + 4 + max(key_len, 0)
    fields.append((value_at, value_at + 3, "value length", True))
    return fields


# --- cases and outcomes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What a case must give. `exact`: the new findings, as (code, file position), in order; else `primary`
    (the first new finding, one of the codes, at `primary_at`) and `allowed` codes for the rest."""

    valid_bytes: int
    exact: tuple[tuple[str, int], ...] | None = None
    primary: frozenset[str] = frozenset()
    primary_at: int | None = None
    allowed: frozenset[str] = frozenset()
    salvage: int | None = None  # a position where a checksum-valid batch must still be read
    outcome: str = ""  # the documented outcome, as the table states it


@dataclass(frozen=True)
class Case:
    group: str  # the table row
    subject: Subject
    description: str
    position: int  # the damaged entry's position in the file
    data: bytes  # the bytes scanned (a window of the damaged segment, or the whole damaged segment)
    offset: int  # file position of data[0]
    start: int  # scan start within `data`
    base_offset: int | None
    expect: Expect
    next_position: int | None = None
    covered: bool | None = None  # whether the entry's checksum covers the damaged byte (flips only)


@dataclass
class Result:
    case: Case
    ok: bool
    new: list[tuple[str, int]]
    deep_new: list[tuple[str, int]]
    valid_bytes: int
    problems: list[str] = field(default_factory=list)

    def signature(self) -> str:
        """The new findings with positions named relative to the damaged entry."""
        return sig(self.new, self.case)


def sig(findings: list[tuple[str, int]], case: Case) -> str:
    parts = []
    for code, pos in findings:
        if pos == case.position:
            where = "b"
        elif case.next_position is not None and pos == case.next_position:
            where = "next"
        else:
            where = f"{pos - case.position:+d}"
        parts.append(f"{code}@{where}")
    # Repeated findings of misframed bytes are summarised.
    out: list[str] = []
    for p in parts:
        if out and out[-1].split(" x")[0] == p:
            head, _, n = out[-1].partition(" x")
            out[-1] = f"{head} x{int(n or 1) + 1}"
        else:
            out.append(p)
    return " + ".join(out) if out else "(none)"


def _entries(data: bytes | memoryview) -> list[BatchHeader]:
    return [e for e in scan_log(data, resync=False) if isinstance(e, BatchHeader)]


def _s32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _s64(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def _low(h: BatchHeader) -> int:
    return h.base_offset if h.base_offset is not None else h.last_offset


def _wrapper_offset_wrong(t: BatchHeader, new_offset: int) -> bool:
    """Whether a compressed legacy wrapper `t` (undamaged) breaks the format's offset rule once its
    offset reads `new_offset`: v0's must be its last inner message's (absolute) offset, which the
    undamaged wrapper's offset is; v1's, unless 0, must not be below its last inner relative offset
    (the broker writes 0..n-1, so n-1)."""
    if t.magic == 2 or not t.compression or t.base_offset is None:
        return False
    if t.magic == 0:
        return new_offset != t.last_offset
    return new_offset != 0 and new_offset < t.last_offset - t.base_offset


def _min_length(magic: int) -> int:
    return {2: 49, 1: 22}.get(magic, 14)


class OffsetModel:
    """The offset rules of the catalog (`offset-*`, `segment-base-mismatch`), applied to header values."""

    def __init__(self, seg_base: int | None) -> None:
        self.seg_base = seg_base

    def at(
        self, h: BatchHeader, low: int, base: int | None, last: int, prev_last: int | None, first: bool
    ) -> list[str]:
        out = []
        if self.seg_base is not None:
            if min(low, last) < self.seg_base:
                out.append("offset-below-base")
            elif last - self.seg_base > MAX_RELATIVE_OFFSET:
                out.append("offset-overflow")
            elif first and base is not None and base > self.seg_base:
                out.append("segment-base-mismatch")
        if prev_last is not None:
            if low <= prev_last:
                out.append("offset-regression")
            elif base is not None and base > prev_last + 1:
                out.append("offset-gap")
        return out


def _standalone(entry: bytes) -> BatchHeader | None:
    """The header an entry now carries, read on its own (its offsets as the scanner resolves them)."""
    for ev in scan_log(entry, resync=False):
        if isinstance(ev, BatchHeader):
            return ev
    return None


def _after_bad_batch(
    model: OffsetModel,
    window: list[BatchHeader],
    ti: int,
    keeps: tuple[int, int] | None,
) -> list[tuple[str, int]]:
    """Findings at the next batch after a checksum-failing one. `keeps`: the (base, last) offsets the
    failing batch carries when the scanner can read them (v2), which it keeps for the next batch's
    continuity check when its base continues the log."""
    if ti + 1 >= len(window):
        return []
    prev = window[ti - 1] if ti > 0 else None
    prev_last = prev.last_offset if prev is not None else None
    if keeps is not None and prev_last is not None and keeps[0] == prev_last + 1 and keeps[1] >= keeps[0]:
        prev_last = keeps[1]
    n = window[ti + 1]
    # No batch before the failing one was valid: the next one is the first the scan keeps.
    first = prev is None
    return [(c, n.position) for c in model.at(n, _low(n), n.base_offset, n.last_offset, prev_last, first)]


def _epoch_findings(window: list[BatchHeader], ti: int, new_epoch: int) -> list[tuple[str, int]]:
    out = []
    max_before = max(
        [h.partition_leader_epoch for h in window[:ti] if h.partition_leader_epoch >= 0], default=-1
    )
    if 0 <= new_epoch < max_before:
        out.append(("leader-epoch-regression", window[ti].position))
    if ti + 1 < len(window):
        n = window[ti + 1]
        highest = max(max_before, new_epoch)
        if 0 <= n.partition_leader_epoch < highest:
            out.append(("leader-epoch-regression", n.position))
    return out


def _length_expect(
    window_data: bytes, window: list[BatchHeader], ti: int, new_length: int, magic: int
) -> tuple[frozenset[str], str]:
    """The primary finding of a length flip, from where the new length ends."""
    t = window[ti]
    remaining = len(window_data) - t.position
    has_next = ti + 1 < len(window)
    if new_length < 14 or (magic <= 2 and new_length < _min_length(magic)):
        return frozenset({"invalid-batch-length"}), "below the minimum"
    if new_length > remaining - 12:
        if has_next:
            return frozenset({"invalid-batch-length"}), "past the end, a valid batch after it"
        return frozenset({"partial-trailing-batch"}), "past the end of the file"
    return frozenset({"crc-mismatch"}), "still frames an entry: checksum over the wrong bytes"


def flip_cases(subject: Subject, data: bytes, base_offset: int) -> Iterator[Case]:
    entries = _entries(data)
    candidates = [i for i, e in enumerate(entries) if subject.codec is None or e.compression == subject.codec]
    chosen = sorted({candidates[0], candidates[len(candidates) // 2], candidates[-1]})
    for k in chosen:
        lo, hi = max(k - 1, 0), min(k + 1, len(entries) - 1)
        wstart = entries[lo].position
        wend = entries[hi].position + entries[hi].size
        window_data = data[wstart:wend]
        window = _entries(window_data)
        ti = k - lo
        t = window[ti]
        # The segment's base offset is known to the scan, as in a whole-segment scan (the previous
        # entry, first in the window, then looks like the segment's first: that finding is baseline).
        seg_base = base_offset
        model = OffsetModel(seg_base)
        which = "first" if k == 0 else "last" if k == len(entries) - 1 else "middle"
        entry = window_data[t.position : t.position + t.size]
        fields = V2_FIELDS if t.magic == 2 else legacy_fields(entry, t.magic)
        family = "v2" if t.magic == 2 else "legacy"
        for first_byte, last_byte, name, covered in fields:
            for b, bit in _flips(first_byte, last_byte, name):
                damaged = bytearray(window_data)
                damaged[t.position + b] ^= 1 << bit
                damaged_bytes = bytes(damaged)
                expect = _flip_expect(
                    family, name, covered, damaged_bytes, window, ti, model, b - first_byte, bit, t.magic
                )
                yield Case(
                    group=f"{family}|{name}|{first_byte}-{last_byte}" if first_byte != last_byte else f"{family}|{name}|{first_byte}",
                    subject=subject,
                    description=f"{subject.key} {which} entry @{wstart + t.position}: flip bit {bit} of byte {b} ({name})",
                    position=wstart + t.position,
                    data=damaged_bytes,
                    offset=wstart,
                    start=0,
                    base_offset=seg_base,
                    expect=_shift(expect, wstart),
                    next_position=wstart + window[ti + 1].position if ti + 1 < len(window) else None,
                    covered=covered,
                )  # fmt: skip


def _flips(first_byte: int, last_byte: int, name: str) -> Iterator[tuple[int, int]]:
    """(byte, bit) of the flips of a field: bit `byte % 8` of every byte and the sign bit of its first
    byte; every bit of the magic byte."""
    if name == "magic":
        yield from ((first_byte, bit) for bit in range(8))
        return
    for b in range(first_byte, last_byte + 1):
        yield b, b % 8
        if b == first_byte and b % 8 != 7:
            yield b, 7


def _shift(e: Expect, by: int) -> Expect:
    def s(p: int | None) -> int | None:
        return None if p is None else p + by

    return Expect(
        valid_bytes=e.valid_bytes + by,
        exact=None if e.exact is None else tuple((c, p + by) for c, p in e.exact),
        primary=e.primary,
        primary_at=s(e.primary_at),
        allowed=e.allowed,
        salvage=s(e.salvage),
        outcome=e.outcome,
    )


# What misframed bytes after a wrong length or magic can give before the scan resyncs.
_MISFRAMED = frozenset(
    {
        "crc-mismatch",
        "invalid-batch-length",
        "unsupported-magic",
        "skipped-bytes",
        "partial-trailing-batch",
        "zero-filled-tail",
        "offset-gap",
        "offset-regression",
        "segment-base-mismatch",
        "offset-below-base",
        "offset-overflow",
        "leader-epoch-regression",
        "record-count-mismatch",
        "unknown-codec",
    }
)


def _flip_expect(
    family: str,
    name: str,
    covered: bool,
    damaged: bytes,
    window: list[BatchHeader],
    ti: int,
    model: OffsetModel,
    byte_in_field: int,
    bit: int,
    magic: int,
) -> Expect:
    t = window[ti]
    p = t.position
    end = window[-1].position + window[-1].size
    prev = window[ti - 1] if ti > 0 else None
    nxt = window[ti + 1] if ti + 1 < len(window) else None
    prev_last = prev.last_offset if prev is not None else None
    salvage = nxt.position if nxt is not None else None
    if name in ("baseOffset", "offset"):
        h = _standalone(damaged[p : p + t.size])
        assert h is not None
        assert h.crc_ok
        low, base, last = _low(h), h.base_offset, h.last_offset
        found = [(c, p) for c in model.at(h, low, base, last, prev_last, prev is None)]
        if _wrapper_offset_wrong(t, last):
            found.append(("wrapper-offset-mismatch", p))
        if nxt is not None:
            found += [
                (c, nxt.position)
                for c in model.at(nxt, _low(nxt), nxt.base_offset, nxt.last_offset, last, False)
            ]
        return Expect(end, exact=tuple(found), salvage=salvage, outcome="valid; offset checks at the batch or the next one")  # fmt: skip
    if name == "partitionLeaderEpoch":
        (new_epoch,) = struct.unpack_from(">i", damaged, p + 12)
        return Expect(end, exact=tuple(_epoch_findings(window, ti, new_epoch)), salvage=salvage, outcome="valid; leader-epoch-regression where an epoch falls")  # fmt: skip
    if name in ("batchLength", "length"):
        (new_length,) = struct.unpack_from(">i", damaged, p + 8)
        primary, why = _length_expect(damaged, window, ti, new_length, magic)
        return Expect(p, primary=primary, primary_at=p, allowed=_MISFRAMED, outcome=f"{'/'.join(sorted(primary))} ({why})")  # fmt: skip
    if name == "magic":
        new_magic = _s32(damaged[p + 16] - 256 if damaged[p + 16] > 127 else damaged[p + 16])
        if new_magic > 2 or new_magic < 0:
            exact = [("unsupported-magic", p), ("skipped-bytes", p)]
            exact += _after_bad_batch(model, window, ti, None)
            return Expect(p, exact=tuple(exact), salvage=salvage, outcome="unsupported-magic + skipped-bytes")
        if t.size - 12 < _min_length(new_magic):
            return Expect(p, primary=frozenset({"invalid-batch-length"}), primary_at=p, allowed=_MISFRAMED, salvage=salvage, outcome="invalid-batch-length (too short for that format)")  # fmt: skip
        return Expect(p, primary=frozenset({"crc-mismatch"}), primary_at=p, allowed=_MISFRAMED, salvage=salvage, outcome=f"read as magic {new_magic}: crc-mismatch")  # fmt: skip
    assert covered, name
    keeps = None
    if family == "v2":
        h = _standalone(damaged[p : p + t.size])
        assert h is not None
        assert not h.crc_ok
        keeps = (h.base_offset or 0, h.last_offset)
    exact = [("crc-mismatch", p), *_after_bad_batch(model, window, ti, keeps)]
    return Expect(p, exact=tuple(exact), salvage=salvage, outcome="crc-mismatch; next batch salvaged")


def truncation_cases(subject: Subject, data: bytes) -> Iterator[Case]:
    last = _entries(data)[-1]
    p = last.position
    for cut in range(last.size):
        kept = data[p : p + cut]
        if cut == 0:
            expect = Expect(p, exact=(), outcome="clean end at the batch boundary")
            group = "truncate|boundary"
        elif not any(kept):
            expect = Expect(p, exact=(("zero-filled-tail", p),), outcome="zero-filled-tail (only zeros left)")
            group = "truncate|header" if cut <= 17 else "truncate|body"
        else:
            expect = Expect(p, exact=(("partial-trailing-batch", p),), outcome="partial-trailing-batch")
            group = "truncate|header" if cut <= 17 else "truncate|body"
        yield Case(
            group=group,
            subject=subject,
            description=f"{subject.key}: last entry @{p} cut at +{cut}",
            position=p,
            data=memoryview(data)[: p + cut],  # type: ignore[arg-type]  # no copy per cut
            offset=0,
            start=p,
            base_offset=None,
            expect=expect,
        )


def tail_cases(subject: Subject, data: bytes, base_offset: int) -> Iterator[Case]:
    end = len(data)
    for n in ZERO_TAILS:
        yield Case(
            group="tail|zeros",
            subject=subject,
            description=f"{subject.key}: {n} zero bytes appended",
            position=end,
            data=data + bytes(n),
            offset=0,
            start=0,
            base_offset=base_offset,
            expect=Expect(end, exact=(("zero-filled-tail", end),), outcome="zero-filled-tail at the old end"),
        )
    for n in GARBAGE_TAILS:
        for seed in GARBAGE_SEEDS:
            garbage = random.Random(seed).randbytes(n)
            if not any(garbage):
                expect = Expect(end, exact=(("zero-filled-tail", end),), outcome="zero-filled-tail")
            elif n <= 17:
                expect = Expect(
                    end, exact=(("partial-trailing-batch", end),), outcome="partial-trailing-batch"
                )
            else:
                expect = Expect(
                    end,
                    primary=frozenset({"partial-trailing-batch", "invalid-batch-length", "unsupported-magic", "crc-mismatch"}),
                    primary_at=end,
                    allowed=_MISFRAMED,
                    outcome="the garbage's framing error at the old end",
                )  # fmt: skip
            yield Case(
                group="tail|garbage-short" if n <= 17 else "tail|garbage",
                subject=subject,
                description=f"{subject.key}: {n} random bytes (seed {seed}) appended",
                position=end,
                data=data + garbage,
                offset=0,
                start=0,
                base_offset=base_offset,
                expect=expect,
            )


# --- running --------------------------------------------------------------------------------------


def _scan(
    case: Case, *, deep: bool, mode: ScanMode
) -> tuple[list[tuple[str, int]], list[BatchHeader], ScanSummary]:
    findings: list[tuple[str, int]] = []
    batches: list[BatchHeader] = []
    summary: ScanSummary | None = None
    for ev in scan_log(case.data, base_offset=case.base_offset, deep=deep, mode=mode, start=case.start):
        if isinstance(ev, Finding):
            findings.append((ev.code, case.offset + (ev.position if ev.position is not None else -1)))
        elif isinstance(ev, BatchHeader):
            batches.append(ev)
        elif isinstance(ev, ScanSummary):
            summary = ev
    assert summary is not None
    return findings, batches, summary


def _minus(found: list[tuple[str, int]], baseline: list[tuple[str, int]]) -> list[tuple[str, int]]:
    rest = Counter(baseline)
    out = []
    for f in found:
        if rest[f]:
            rest[f] -= 1
        else:
            out.append(f)
    return out


_BASELINES: dict[tuple[int, int, int, int | None], tuple[list[tuple[str, int]], list[tuple[str, int]]]] = {}


def run_case(case: Case, baseline: tuple[list[tuple[str, int]], list[tuple[str, int]]]) -> Result:
    """Scan one damaged case and compare it with its expectation; `baseline` is the undamaged bytes'
    findings (shallow, deep), which are not counted as new."""
    e = case.expect
    found, batches, summary = _scan(case, deep=False, mode=ScanMode.FORENSIC)
    deep_found, _, deep_summary = _scan(case, deep=True, mode=ScanMode.FORENSIC)
    _, _, rec_summary = _scan(case, deep=False, mode=ScanMode.RECOVERY)
    new = _minus(found, baseline[0])
    deep_new = _minus(deep_found, baseline[1])
    problems = []
    valid = case.offset + summary.valid_bytes
    if valid != e.valid_bytes:
        problems.append(f"valid_bytes {valid}, expected {e.valid_bytes}")
    for label, s in (("deep", deep_summary), ("recovery", rec_summary)):
        if case.offset + s.valid_bytes != valid:
            problems.append(f"{label} valid_bytes {case.offset + s.valid_bytes} differs from {valid}")
    if e.exact is not None:
        if list(e.exact) != new:
            problems.append(f"findings {new}, expected {list(e.exact)}")
    else:
        if not new or new[0][0] not in e.primary or new[0][1] != e.primary_at:
            problems.append(f"first finding {new[:1]}, expected one of {sorted(e.primary)} at {e.primary_at}")
        extra = {c for c, _ in new[1:]} - e.allowed - e.primary
        if extra:
            problems.append(f"unexpected codes {sorted(extra)} after the first")
    if Counter(new) - Counter(deep_new):
        problems.append(f"the deep scan lacks findings of the shallow one: {deep_new} vs {new}")
    if e.salvage is not None and not any(case.offset + b.position == e.salvage and b.crc_ok for b in batches):
        problems.append(f"the next batch at {e.salvage} was not salvaged")
    return Result(case, not problems, new, deep_new, valid, problems)


def _baseline(case: Case, clean: bytes) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    key = (id(case.subject), case.offset, len(clean), case.base_offset)
    if key not in _BASELINES:
        c = Case(
            case.group,
            case.subject,
            "baseline",
            case.position,
            clean,
            case.offset,
            case.start,
            case.base_offset,
            case.expect,
        )
        _BASELINES[key] = (
            _scan(c, deep=False, mode=ScanMode.FORENSIC)[0],
            _scan(c, deep=True, mode=ScanMode.FORENSIC)[0],
        )
    return _BASELINES[key]  # fmt: skip


def subject_results(subject: Subject, root: Path, kind: str) -> list[Result]:
    """Every case of one kind ("flip", "truncate", "tail") on one subject, run."""
    path = root / subject.rel
    data = path.read_bytes()
    base_offset = int(path.name.split(".")[0])
    results = []
    if kind == "flip":
        entries = _entries(data)
        for case in flip_cases(subject, data, base_offset):
            # The undamaged window: the same slice of the original segment.
            lo = case.offset
            hi = lo + len(case.data)
            assert any(e.position == lo for e in entries)
            results.append(run_case(case, _baseline(case, data[lo:hi])))
    elif kind == "truncate":
        no_findings: tuple[list[tuple[str, int]], list[tuple[str, int]]] = ([], [])
        results = [run_case(c, no_findings) for c in truncation_cases(subject, data)]
    else:
        for case in tail_cases(subject, data, base_offset):
            results.append(run_case(case, _baseline(case, data)))
    return results


def available(subjects: tuple[Subject, ...], root: Path) -> list[Subject]:
    return [s for s in subjects if (root / s.rel).is_file()]


def run_all(root: Path) -> list[Result]:
    results: list[Result] = []
    for kind, subjects in (("flip", FLIP_SUBJECTS), ("truncate", TRUNCATE_SUBJECTS), ("tail", TAIL_SUBJECTS)):
        for s in available(subjects, root):
            results += subject_results(s, root, kind)
    return results


# --- the table ------------------------------------------------------------------------------------

_VALID = "batch stays valid (recovery point unchanged)"
_CRC = "`crc-mismatch` at the batch; recovery point there; the next batch is still read"
_LENGTH = (
    "recovery point at the batch; `invalid-batch-length` (below the minimum, or past the end with a valid "
    "batch after it: then `skipped-bytes` to it), `partial-trailing-batch` (past the end, nothing after "
    "it), or `crc-mismatch` when the wrong length still frames an entry"
)
_OFFSETS = (
    "; `offset-gap` / `offset-regression` / `offset-below-base` / `offset-overflow` / "
    "`segment-base-mismatch` at the batch or the next one, as the new offset gives"
)
# group -> (row title, expected outcome), in table order
ROWS: dict[str, tuple[str, str]] = {
    "v2|baseOffset": ("v2 `baseOffset` (bytes 0-7)", _VALID + _OFFSETS),
    "v2|batchLength": ("v2 `batchLength` (8-11)", _LENGTH),
    "v2|partitionLeaderEpoch": (
        "v2 `partitionLeaderEpoch` (12-15)",
        _VALID + "; `leader-epoch-regression` at the batch (lowered below an earlier epoch) or the next one "
        "(raised); nothing when it turns negative or on a raised last batch",
    ),
    "v2|magic": (
        "v2 `magic` (16), all 8 bits",
        "`unsupported-magic` + `skipped-bytes` to the next batch; magic 0: read as a v0 message, "
        "`crc-mismatch`; recovery point at the batch",
    ),
    "v2|crc": ("v2 `crc` (17-20)", _CRC),
    "v2|attributes": ("v2 `attributes` (21-22)", _CRC),
    "v2|lastOffsetDelta": ("v2 `lastOffsetDelta` (23-26)", _CRC + " (its offsets are kept for the next one's check)"),
    "v2|baseTimestamp": ("v2 `baseTimestamp` (27-34)", _CRC),
    "v2|maxTimestamp": ("v2 `maxTimestamp` (35-42)", _CRC),
    "v2|producerId": ("v2 `producerId` (43-50)", _CRC),
    "v2|producerEpoch": ("v2 `producerEpoch` (51-52)", _CRC),
    "v2|baseSequence": ("v2 `baseSequence` (53-56)", _CRC),
    "v2|recordsCount": ("v2 `recordsCount` (57-60)", _CRC),
    "legacy|offset": (
        "v0/v1 `offset` (0-7)",
        _VALID + _OFFSETS + " (a legacy message has no base offset, so a raised one is no gap); "
        "`wrapper-offset-mismatch` at a compressed wrapper whose offset no longer names its last inner message",
    ),
    "legacy|length": ("v0/v1 `length` (8-11)", _LENGTH),
    "legacy|crc": ("v0/v1 `crc` (12-15)", _CRC),
    "legacy|magic": (
        "v0/v1 `magic` (16), all 8 bits",
        "`unsupported-magic` + `skipped-bytes`; read as the other format: `crc-mismatch` "
        "(`invalid-batch-length` when too short for it)",
    ),
    "legacy|attributes": ("v0/v1 `attributes` (17)", _CRC),
    "legacy|timestamp": ("v1 `timestamp` (18-25)", _CRC),
    "legacy|key length": ("v0/v1 key length (v0: 18-21, v1: 26-29)", _CRC),
    "legacy|value length": ("v0/v1 value length (after the key)", _CRC),
    "truncate|boundary": ("cut at the last batch's start (+0)", "a clean end: no finding"),
    "truncate|header": (
        "cut inside the last batch's first 17 bytes",
        "`partial-trailing-batch` at the batch (`zero-filled-tail` when only zeros are left); recovery point there",
    ),
    "truncate|body": ("cut anywhere else in the last batch", "`partial-trailing-batch` at the batch; recovery point there"),
    "tail|zeros": ("zero tail of 1, 17, 18, 61, 4096 bytes or 1 MiB", "`zero-filled-tail` at the old end; recovery point there"),
    "tail|garbage-short": ("garbage tail of 1 or 17 random bytes", "`partial-trailing-batch` at the old end"),
    "tail|garbage": (
        "garbage tail of 18, 100 or 4096 random bytes",
        "at the old end, the framing error the garbage gives (`invalid-batch-length`, `unsupported-magic`, "
        "`partial-trailing-batch` or `crc-mismatch`); recovery point there",
    ),
}  # fmt: skip


def _row_key(group: str) -> str:
    family, _, rest = group.partition("|")
    return f"{family}|{rest.split('|')[0]}" if family in ("v2", "legacy") else group


def _valid_label(r: Result) -> str:
    if r.valid_bytes != r.case.expect.valid_bytes:
        return "**other**"
    if r.case.group.startswith("tail"):
        return "old end"
    return "at the batch" if r.valid_bytes == r.case.position else "unchanged"


def legend(root: Path) -> str:
    lines = [
        "Segments (damaged copies of the real files; bit flips hit the first, a middle and the last entry of each):",
        "",
    ]
    for title, subjects in (
        ("bit flips", FLIP_SUBJECTS),
        ("truncations of the last batch", TRUNCATE_SUBJECTS),
        ("tails", TAIL_SUBJECTS),
    ):
        names = ", ".join(f"`{s.key}` {s.rel.split('/')[-2]}/{s.rel.split('/')[-1][:20].lstrip('0') or '0'}" for s in available(subjects, root))  # fmt: skip
        lines.append(f"- {title}: {names}")
    return "\n".join(lines) + "\n"


def markdown_table(results: list[Result], corpus_label: str, root: Path | None = None) -> str:
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(_row_key(r.case.group), []).append(r)
    lines = [
        f"{sum(len(v) for v in groups.values())} damaged copies of real Kafka 3.8.0 segments ({corpus_label}), "
        "each scanned by kdump in forensic mode (shallow and `--deep`) and in recovery mode. *Observed* lists "
        "the findings the damage adds (in brackets, how many cases gave them), `@b` being the damaged "
        "batch's position and `@next` the next batch's; "
        "*recovery point* is `valid_bytes` (where the broker's recovery truncates), the same in every mode. "
        "Regenerate with `python tests/matrix/corruption_matrix.py --write-readme`.",
        "",
    ]
    if root is not None:
        lines += [legend(root)]
    lines += [
        "| damage | checksum covers it | cases | expected outcome | observed | recovery point | as expected |",
        "|---|---|---:|---|---|---|---|",
    ]
    total = passed = 0
    for key in [k for k in ROWS if k in groups] + sorted(k for k in groups if k not in ROWS):
        rs = groups[key]
        title, expected = ROWS.get(key, (key, ""))
        flags = {r.case.covered for r in rs}
        covered = "-" if flags == {None} else "yes" if flags == {True} else "**no**"
        sigs = Counter(r.signature() for r in rs)
        observed = ", ".join(f"{s} ({n})" for s, n in sigs.most_common(4))
        if len(sigs) > 4:
            observed += f", {len(sigs) - 4} other patterns ({sum(n for _, n in sigs.most_common()[4:])})"
        vb = Counter(_valid_label(r) for r in rs)
        valid = ", ".join(f"{k} ({n})" if len(vb) > 1 else k for k, n in vb.most_common())
        ok = sum(r.ok for r in rs)
        total += len(rs)
        passed += ok
        verdict = "all" if ok == len(rs) else f"**{ok}/{len(rs)}**"
        lines.append(f"| {title} | {covered} | {len(rs)} | {expected} | {observed} | {valid} | {verdict} |")
    lines += ["", f"{total} cases, {passed} as expected."]
    return "\n".join(lines) + "\n"


def write_readme(table: str, readme: Path = README) -> None:
    text = readme.read_text()
    if START_MARKER not in text or END_MARKER not in text:
        raise SystemExit(f"{readme} has no {START_MARKER} ... {END_MARKER} markers")
    head, _, rest = text.partition(START_MARKER)
    _, _, tail = rest.partition(END_MARKER)
    readme.write_text(f"{head}{START_MARKER}\n{table}{END_MARKER}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the corruption matrix and print its Markdown table.")
    parser.add_argument(
        "--corpus", type=Path, help="corpus root (default: full corpus, else the bundled subset)"
    )
    parser.add_argument(
        "--write-readme", action="store_true", help="rewrite tests/README.md between the markers"
    )
    parser.add_argument("--failures", action="store_true", help="also list every case that failed")
    args = parser.parse_args(argv)
    from corpus import available_corpus_root, full_corpus_available, is_subset

    if args.corpus is not None:
        root = args.corpus
    else:
        import tempfile

        root = available_corpus_root(Path(tempfile.gettempdir()) / "kdump-matrix")
    label = "bundled subset" if is_subset(root) or not full_corpus_available(root) else "full corpus"
    results = run_all(root)
    table = markdown_table(results, label, root)
    print(table, end="")
    failed = [r for r in results if not r.ok]
    if args.failures or failed:
        for r in failed:
            print(f"FAILED {r.case.description}: {'; '.join(r.problems)}", file=sys.stderr)
    if args.write_readme:
        write_readme(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
