"""The catalog of findings: every kind of damage or oddity kdump can report, in one place.

A finding is bad (or merely notable) bytes on disk, never an exception. Each code is a stable
kebab-case identifier, part of kdump's public interface like its exit codes: codes are added,
never renamed. Each carries the broker's consequence (what an Apache Kafka broker does when it meets
the condition), its severity, which follows from that consequence by one rule (`SEVERITY_OF`), and
the kdump command that repairs it. `man/kdump-findings.7` is generated from this table (a test keeps
them in step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any


class Severity(IntEnum):
    """How bad a finding is; ordered so `--fail-on` can compare."""

    INFO = 10
    WARNING = 20
    ERROR = 30

    @property
    def label(self) -> str:
        """Lower-case name used in text and JSON output."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Parse `info`, `warning` or `error`."""
        return cls[text.upper()]


class Consequence(Enum):
    """What a broker does when it meets a finding's condition: the one thing its severity follows.

    kdump is a gate: its verdict must be the broker's. The value is the label the man page shows.
    """

    REFUSES = "refuses"  # refuses to start, to load the partition, or takes its log dir offline
    SERVES_WRONG = "serves-wrong"  # serves wrong records or none, or answers a lookup with a wrong offset
    LOSES = "loses"  # records are lost: recovery truncates them, a follower drops them, or they are gone
    UNCHECKED = "unchecked"  # kdump could not check what it was given: a gate that did not look must not pass
    REPAIRS = "repairs"  # repairs it or sets it aside (at start-up or later) with no effect on the data
    OUTSIDE = "outside"  # not the broker's matter: clients, a schema registry, or kdump's own environment
    LEGAL = "legal"  # what a healthy broker writes or leaves


# The one rule: a finding is an error when the broker loses, refuses or mis-serves data (or kdump
# could not look), a warning when the broker copes without a data effect, info when it is legal.
SEVERITY_OF: dict[Consequence, Severity] = {
    Consequence.REFUSES: Severity.ERROR,
    Consequence.SERVES_WRONG: Severity.ERROR,
    Consequence.LOSES: Severity.ERROR,
    Consequence.UNCHECKED: Severity.ERROR,
    Consequence.REPAIRS: Severity.WARNING,
    Consequence.OUTSIDE: Severity.WARNING,
    Consequence.LEGAL: Severity.INFO,
}


@dataclass(frozen=True, slots=True)
class FindingKind:
    """What one finding code means; its severity is derived from its consequence, never set."""

    code: str
    consequence: Consequence
    where: str
    meaning: str
    broker: str
    repair: str | None

    @property
    def severity(self) -> Severity:
        """The severity the consequence gives (`SEVERITY_OF`)."""
        return SEVERITY_OF[self.consequence]


_TRIM = "kdump trim-tail --apply PARTITION"
_REINDEX = "kdump reindex --apply PARTITION"

_KINDS = [
    # --- the log: framing and checksums -------------------------------------------------------
    FindingKind(
        "crc-mismatch",
        Consequence.LOSES,
        "log",
        "A batch's stored checksum differs from the one computed over its bytes (CRC-32C over "
        "attributes..end for v2, CRC32 over magic..end for v0/v1).",
        "Recovery truncates the segment at this batch and deletes later unflushed segments; "
        "fetches of it fail with CorruptRecordException.",
        _TRIM,
    ),
    FindingKind(
        "partial-trailing-batch",
        Consequence.LOSES,
        "log",
        "The file ends inside a batch: an incomplete header, or a length that runs past the end.",
        "Recovery truncates the incomplete batch silently (`Found N invalid bytes at the end`).",
        _TRIM,
    ),
    FindingKind(
        "zero-filled-tail",
        Consequence.REPAIRS,
        "log",
        "Zeros where the next batch would start, to the end of the file: preallocation "
        "(log.preallocate) or a power loss that left unwritten pages.",
        "Recovery reads a length below 14, treats it as corrupt and truncates the zeros.",
        _TRIM,
    ),
    FindingKind(
        "invalid-batch-length",
        Consequence.LOSES,
        "log",
        "A length field below the minimum for the message format, or one that cannot be right "
        "because a valid batch starts before the end it claims.",
        "Recovery stops here and truncates the rest of the segment.",
        _TRIM,
    ),
    FindingKind(
        "unsupported-magic",
        Consequence.LOSES,
        "log",
        "A message format (magic byte) outside 0, 1 and 2.",
        "Recovery fails the checksum of the entry and truncates the segment there.",
        _TRIM,
    ),
    FindingKind(
        "skipped-bytes",
        Consequence.LOSES,
        "log",
        "Bytes kdump skipped after framing was lost, up to the next plausible batch (magic, length "
        "and checksum all agree); the offsets in between are lost.",
        "Recovery truncates at the damage, so every batch after it is lost too: salvage them with "
        "`kdump salvage` first.",
        _TRIM,
    ),
    FindingKind(
        "offset-regression",
        Consequence.LOSES,
        "log",
        "A batch whose base offset is not above the last offset of the batch before it (within a "
        "segment or across segments).",
        "Appending an index entry fails with InvalidOffsetException during recovery; the broker "
        "then empties the whole segment (KAFKA-3919).",
        "kdump trim-tail --to-offset OFFSET --apply PARTITION",
    ),
    FindingKind(
        "offset-gap",
        Consequence.LEGAL,
        "log",
        "Offsets missing between two batches: normal after compaction, retention of transactions "
        "or deleted records.",
        "Nothing: consumers skip the gap.",
        None,
    ),
    FindingKind(
        "offset-hole",
        Consequence.LOSES,
        "partition",
        "Offsets missing between batches, within a segment or between segments, in a topic that is not "
        "compacted (cleanup.policy from the KRaft metadata log or the log cleaner's checkpoint beside the "
        "partition; a warning when neither says). A broker assigns offsets one after another and rolls "
        "segments at the log end, so only compaction leaves such gaps; a trim that kept the segments "
        "after the cut (`trim-tail --keep-later-segments`) does.",
        "Nothing notices: fetches skip the missing offsets, and consumers lose those records silently.",
        None,
    ),
    FindingKind(
        "offset-below-base",
        Consequence.SERVES_WRONG,
        "log",
        "A batch offset below the segment's base offset (the number in its file name).",
        "Reads by offset go to the wrong segment; the index cannot store a negative relative offset.",
        None,
    ),
    FindingKind(
        "offset-overflow",
        Consequence.SERVES_WRONG,
        "log",
        "A batch offset more than 2^31-1 above the segment's base offset: it does not fit a relative "
        "offset in the index.",
        "Recovery raises LogSegmentOffsetOverflowException and splits the segment.",
        None,
    ),
    FindingKind(
        "segment-base-mismatch",
        Consequence.LEGAL,
        "log",
        "The first batch starts above the base offset in the segment's file name: normal after "
        "compaction or when records were deleted.",
        "Nothing.",
        None,
    ),
    FindingKind(
        "unknown-codec",
        Consequence.SERVES_WRONG,
        "log",
        "A compression id 5-7, which no Kafka version defines.",
        "Recovery does not notice (the checksum covers it); fetches fail with "
        "IllegalArgumentException: Unknown compression type id.",
        None,
    ),
    FindingKind(
        "record-count-mismatch",
        Consequence.SERVES_WRONG,
        "log",
        "The records in a batch disagree with its header: a negative count, more records than its "
        "offset range holds, or (with --deep) a decoded count that differs from the header's.",
        "Consumers fail with InvalidRecordException when they iterate the batch.",
        None,
    ),
    FindingKind(
        "leader-epoch-regression",
        Consequence.REPAIRS,
        "log",
        "A batch whose partition leader epoch is below an earlier batch's (the epoch is not covered "
        "by the checksum, so a flipped bit shows here).",
        "Recovery ignores lower epochs when it rebuilds the leader-epoch cache.",
        None,
    ),
    FindingKind(
        "wrapper-offset-mismatch",
        Consequence.SERVES_WRONG,
        "log",
        "A compressed legacy (v0/v1) wrapper whose offset is not its last inner message's offset: "
        "v0 inner offsets are absolute and must end at the wrapper's; a v1 wrapper's offset (unless 0) "
        "is below its last inner offset. The wrapper's offset is outside its checksum.",
        "Recovery does not notice (it reads only the wrapper); consumers get records at offsets the "
        "log and its index do not place there (v0), or fail with InvalidRecordException (v1).",
        None,
    ),
    FindingKind(
        "inner-message-too-short",
        Consequence.SERVES_WRONG,
        "log",
        "An inner message of a compressed legacy (v0/v1) wrapper whose length is below the minimum "
        "message size (14 bytes; 22 for v1). It is stepped over; the messages around it keep their "
        "offsets.",
        "Recovery does not notice (the wrapper's checksum matches); consumers fail on the whole "
        "wrapper with CorruptRecordException (Record size is less than the minimum record overhead).",
        None,
    ),
    # --- the log with --deep ------------------------------------------------------------------
    FindingKind(
        "record-decode-failed",
        Consequence.SERVES_WRONG,
        "log (deep)",
        "Records that do not decode: lengths that run past the batch, bad varints, bytes left over, "
        "invalid control records or legacy inner messages.",
        "Consumers fail with InvalidRecordException or CorruptRecordException on this batch.",
        None,
    ),
    FindingKind(
        "record-offset-invalid",
        Consequence.SERVES_WRONG,
        "log (deep)",
        "A record whose offset is outside its batch's offset range or not above the record before it.",
        "Consumers see offsets out of order.",
        None,
    ),
    FindingKind(
        "decompression-failed",
        Consequence.SERVES_WRONG,
        "log (deep)",
        "A compressed payload that does not decompress (the checksum may still match: it covers the "
        "compressed bytes).",
        "Consumers fail with KafkaException: Failed to decompress record stream.",
        None,
    ),
    FindingKind(
        "codec-unavailable",
        Consequence.OUTSIDE,
        "log (deep)",
        "The Python library for this batch's codec is missing or broken here (lz4: lz4, snappy: python-snappy, "
        "zstd: zstandard; gzip needs none), so its records were not decoded or checked; the finding names the "
        "library, why it failed to load and the command that installs it. Also without --deep for a legacy "
        "v0/v1 wrapper, whose first offset and record count need its inner messages: they are shown as unknown "
        "(its own offset is its last). Every command that needed the records exits 3: not checked, never a pass.",
        "Nothing: this is about kdump's environment, not the data.",
        None,
    ),
    FindingKind(
        "max-timestamp-mismatch",
        Consequence.SERVES_WRONG,
        "log (deep)",
        "A CreateTime batch whose maxTimestamp is not the largest of its records' timestamps.",
        "The time index and offset-for-timestamp lookups use the header's value.",
        None,
    ),
    FindingKind(
        "unknown-internal-record",
        Consequence.OUTSIDE,
        "log (deep)",
        "A record of an internal topic (__consumer_offsets, __transaction_state, __share_group_state, "
        "__cluster_metadata) whose type or version kdump does not know; it is shown raw (base64) and the "
        "finding names the type and version.",
        "Newer brokers write it; older brokers and tools skip or fail on it.",
        None,
    ),
    FindingKind(
        "unknown-tagged-field",
        Consequence.OUTSIDE,
        "log (deep)",
        "A record of an internal topic holds a tagged field (key or value, and where in it) that no Kafka up to "
        "4.4 declares for its type and version; the rest decodes, the field is kept raw (base64) and named.",
        "Brokers and tools of the versions kdump knows ignore the tag and drop it when they rewrite the record.",
        None,
    ),
    # --- indexes -------------------------------------------------------------------------------
    FindingKind(
        "index-missing",
        Consequence.REPAIRS,
        "index",
        "A segment without its .index file.",
        "On start-up the broker recovers the segment to rebuild it, which can take a long time.",
        _REINDEX,
    ),
    FindingKind(
        "index-size-invalid",
        Consequence.REPAIRS,
        "index",
        "An index file whose length is not a multiple of its entry size (8 for .index, 12 for "
        ".timeindex, 34 for .txnindex).",
        "The broker rounds the length down to whole entries and ignores the rest (it no longer "
        "sanity-checks indexes when it loads a segment); recovering the segment rebuilds it.",
        _REINDEX,
    ),
    FindingKind(
        "index-not-monotonic",
        Consequence.SERVES_WRONG,
        "index",
        "Offset index entries whose offsets or positions do not strictly increase, or an offset "
        "below the segment base.",
        "The broker does not check the order when it loads a segment: its binary search lands in the "
        "wrong place, so fetches read from the wrong position or miss records.",
        _REINDEX,
    ),
    FindingKind(
        "index-offset-mismatch",
        Consequence.SERVES_WRONG,
        "index",
        "An offset index entry whose lookup would not land at or before the batch holding its "
        "offset: its position is not a batch start, or the batch there starts after that offset.",
        "Fetches starting at those offsets read from the wrong place or miss records.",
        _REINDEX,
    ),
    FindingKind(
        "index-entry-beyond-log",
        Consequence.SERVES_WRONG,
        "index",
        "An index entry that points past the valid end of the log (a stale index after truncation).",
        "The broker does not compare an index with its log when it loads a segment: fetches of those "
        "offsets find no batch at the position and go on to the next segment, skipping records.",
        _REINDEX,
    ),
    FindingKind(
        "index-preallocated-tail",
        Consequence.LEGAL,
        "index",
        "A zero-filled preallocated tail of an index: normal for a broker's active segment.",
        "The broker trims it when the segment rolls or the broker stops cleanly.",
        None,
    ),
    FindingKind(
        "time-index-missing",
        Consequence.REPAIRS,
        "timeindex",
        "A segment without its .timeindex file.",
        "The broker creates an empty one without rebuilding it; time lookups then fall back to the "
        "file's modification time.",
        _REINDEX,
    ),
    FindingKind(
        "time-index-max-timestamp-low",
        Consequence.SERVES_WRONG,
        "timeindex",
        "A closed segment (not the partition's last) whose .timeindex's last slot, zero-filled slots "
        "counted, holds a timestamp below the largest of its batches: a time index overwritten with "
        "zeros, cut short, or left with a preallocated tail.",
        "The broker takes the last slot for the segment's largest timestamp: ListOffsets by timestamp "
        "passes over the segment and answers with a later offset, and time retention deletes it early.",
        _REINDEX,
    ),
    FindingKind(
        "time-index-out-of-order",
        Consequence.SERVES_WRONG,
        "timeindex",
        "Time index entries whose timestamps or offsets do not increase.",
        "Offset-for-timestamp lookups (consumer resets) return wrong offsets.",
        _REINDEX,
    ),
    FindingKind(
        "time-index-mismatch",
        Consequence.SERVES_WRONG,
        "timeindex",
        "A time index entry claiming a larger timestamp than any batch up to its offset holds, or "
        "an offset that is not the last offset of a batch.",
        "Offset-for-timestamp lookups may skip records.",
        _REINDEX,
    ),
    FindingKind(
        "time-index-offset-not-found",
        Consequence.SERVES_WRONG,
        "timeindex",
        "A time index entry whose offset is not in the valid log.",
        "Offset-for-timestamp lookups may return offsets that do not exist.",
        _REINDEX,
    ),
    FindingKind(
        "txn-index-mismatch",
        Consequence.SERVES_WRONG,
        "txnindex",
        "The .txnindex disagrees with the ABORT markers in the log (entries missing, extra or different).",
        "READ_COMMITTED consumers may deliver aborted records, or drop committed ones.",
        _REINDEX,
    ),
    # --- partition-level -----------------------------------------------------------------------
    FindingKind(
        "transaction-open",
        Consequence.SERVES_WRONG,
        "partition",
        "A transaction with no COMMIT or ABORT marker up to the log end. An error where the "
        "coordinator's log in the same log dir (`__transaction_state`) says the producer's transaction "
        "is complete or that it has none: the marker was lost (a truncation, a copy cut short); info "
        "otherwise (a copy taken while a producer was in a transaction is healthy).",
        "The last stable offset stays at the transaction's first offset and READ_COMMITTED consumers "
        "stop there until a marker comes; a coordinator that has completed the transaction never "
        "writes one, so it hangs until an operator aborts it (`kafka-transactions.sh abort`, KIP-664).",
        None,
    ),
    FindingKind(
        "swap-loses-offsets",
        Consequence.LOSES,
        "partition",
        "A `<base>.log.swap` the broker would complete at start (no `.cleaned` at or below its base) "
        "holding fewer offsets than the segments it replaces (those whose base offset lies in its "
        "range), in a topic that is not known to be compacted: a cleaner or split killed half way, or "
        "a copy.",
        "At start `LogLoader` deletes the segments in the swap's range and renames the swap into "
        "place: the offsets they held and it does not are gone.",
        "kdump quarantine --apply PARTITION",
    ),
    FindingKind(
        "segment-stray",
        Consequence.SERVES_WRONG,
        "partition",
        "A stray copy of a segment: a `.log` whose every offset another segment of the partition holds, "
        "saved under a name inside another segment's range (its batches all below its base offset) or "
        "under a name that is no segment name (`copy.log`).",
        "The broker takes a copy named inside another segment's range for the segment from that offset "
        "on: a fetch or seek that starts at an offset it shadows skips to the segment after it, and a "
        "recovery that reaches it empties it and deletes every later unflushed segment. A name with no "
        "number fails the partition's load.",
        "kdump quarantine --apply PARTITION",
    ),
    FindingKind(
        "segment-overlap",
        Consequence.SERVES_WRONG,
        "partition",
        "A segment whose last offset is at or above the next segment's base offset.",
        "Reads by offset may return duplicated or stale records; the broker's segment map is keyed "
        "by base offset.",
        "kdump trim-tail --to-offset OFFSET --apply PARTITION",
    ),
    FindingKind(
        "log-missing",
        Consequence.LOSES,
        "partition",
        "A partition (the KRaft metadata log among them) that holds no batch, and for the metadata "
        "log no snapshot reaching that far, while its leader-epoch-checkpoint says offsets past its "
        "log start were written: the segments were deleted or not copied.",
        "The broker loads it empty at its log start and truncates the epoch cache there: those offsets "
        "are no longer served. A metadata log so loaded leaves the node no metadata: a node of a dynamic "
        "quorum (KIP-853) loses its voter set with it, elects no leader, and its broker exits at start, "
        "unable to register with the controller quorum (a real 4.4 node, tests/brokers).",
        None,
    ),
    FindingKind(
        "leftover-file",
        Consequence.REPAIRS,
        "partition",
        "A .swap, .cleaned, .deleted or .part file left by the log cleaner, a segment split, a deletion "
        "or a KRaft snapshot write that did not finish (a .tmp of a state file too). Info where a "
        "healthy broker leaves it and deletes it at its next start with no data effect (.deleted, "
        ".cleaned, .part, .tmp); a warning for a .swap.",
        "On start-up the broker deletes .deleted, .cleaned and .part files and completes .swap renames, "
        "deleting the segments whose base offsets lie in the swap's offset range.",
        None,
    ),
    FindingKind(
        "orphan-index",
        Consequence.REPAIRS,
        "partition",
        "An index file (.index, .timeindex, .txnindex) without its .log.",
        "On start-up the broker deletes it (`Found an orphaned index file`).",
        None,
    ),
    FindingKind(
        "snapshot-corrupt",
        Consequence.REPAIRS,
        "partition",
        "A producer state .snapshot whose checksum, version or length is wrong.",
        "The broker deletes it and rebuilds producer state from an older snapshot or the log.",
        None,
    ),
    FindingKind(
        "checkpoint-corrupt",
        Consequence.REFUSES,
        "partition",
        "A leader-epoch-checkpoint, partition.metadata or log-dir checkpoint that does not parse.",
        "Reading it fails (IOException): the broker puts the log dir offline (KafkaStorageException), so "
        "its partitions are not served, and a broker with one log dir halts. Only a recovery-point or "
        "log-start-offset checkpoint whose numbers do not parse is reset instead. Repair: a "
        "leader-epoch-checkpoint is derived from the batches' epochs, and `kdump reindex --apply "
        "PARTITION` rebuilds it as the broker's cache would hold it (the finding names that command); "
        "the others have no repair.",
        None,
    ),
    FindingKind(
        "leader-epoch-mismatch",
        Consequence.LOSES,
        "partition",
        "The leader-epoch-checkpoint disagrees with the leader epochs in the batches: an epoch that "
        "starts at a different offset, or epochs in the log missing from the checkpoint. Batches below "
        "the log start offset are not judged and the checkpoint is compared as the broker truncates it "
        "there (DeleteRecords, retention): the start offset is the log dir's log-start-offset-checkpoint, "
        "the metadata log's oldest snapshot or, with neither, the checkpoint's first entry when the "
        "batches agree its epoch was in force there.",
        "Followers truncate to the wrong offset after a leader change (KIP-101).",
        None,
    ),
    FindingKind(
        "leader-epoch-checkpoint-contradicted",
        Consequence.LOSES,
        "partition",
        "A leader-epoch-checkpoint entry that the partition's own batches contradict: the epoch starts "
        "inside a batch, or the first batch at its start offset was written under an earlier epoch "
        "(found by `kdump compare`).",
        "The broker answers OffsetsForLeaderEpoch from the checkpoint, so followers truncate to the wrong "
        "offset: they keep records the leader does not have, or drop records it has.",
        None,
    ),
    FindingKind(
        "topic-id-mismatch",
        Consequence.REFUSES,
        "partition",
        "Partition directories given to `kdump compare` as replicas of one partition whose "
        "partition.metadata files name different topic ids: they belong to different topics (often a "
        "topic deleted and re-created under the same name), so they are not compared.",
        "A broker keeps a partition only under the topic id the cluster metadata gives it: a log with "
        "another topic id is refused (InconsistentTopicIdException) or, on a KRaft broker, deleted as a "
        "stray replica; a follower never truncates or fetches it against the other topic's leader.",
        None,
    ),
    FindingKind(
        "unreadable-file",
        Consequence.UNCHECKED,
        "partition",
        "A file kdump could not open or read (permissions, I/O error).",
        "The broker fails to load the log dir.",
        None,
    ),
    # --- accounting: every path given is classified, and what is not checked is said -----------
    FindingKind(
        "wrong-file-type",
        Consequence.REFUSES,
        "path",
        "An entry that is not a regular file where one is expected (a directory named like a segment, "
        "a FIFO, socket or device): kdump does not read it, as reading could block or never end.",
        "The broker skips a directory named like a segment file and fails on a special file.",
        None,
    ),
    FindingKind(
        "symlink-loop",
        Consequence.REFUSES,
        "path",
        "A symbolic link that resolves back into itself: nothing behind it can be read.",
        "Opening it fails with `Too many levels of symbolic links`; the log dir fails to load.",
        None,
    ),
    FindingKind(
        "dangling-symlink",
        Consequence.LOSES,
        "path",
        "A symbolic link whose target does not exist: a file was moved or deleted behind it.",
        "Opening it fails (NoSuchFileException); the data it stood for is gone.",
        None,
    ),
    FindingKind(
        "unknown-entry",
        Consequence.UNCHECKED,
        "path",
        "A file or directory kdump does not recognise in a partition directory, a log dir or a "
        "directory of log dirs: it was not checked. `--allow-unknown` reports it as info instead.",
        "The broker ignores unknown files; an unknown directory in a log dir stops it loading the "
        "log dir (`not in the form of topic-partition`).",
        None,
    ),
    FindingKind(
        "segment-name-invalid",
        Consequence.SERVES_WRONG,
        "partition",
        "A `.log` or index file not named `<20-digit offset>.<kind>`. kdump still checks a misnamed "
        "`.log`: with the base offset the broker reads from its name, or from its first batch.",
        "The broker parses the digits before the first dot and opens the 20-digit file of that "
        "offset instead, so the misnamed file is never served; a name with no number fails the load.",
        None,
    ),
    FindingKind(
        "partition-name-invalid",
        Consequence.REFUSES,
        "log-dir",
        "A directory in a log dir that holds segment files but is not named `<topic>-<partition>`; "
        "kdump checks it as a partition.",
        "The broker refuses to load the log dir (`is not in the form of topic-partition`).",
        None,
    ),
    FindingKind(
        "nothing-to-check",
        Consequence.UNCHECKED,
        "path",
        "A path given to verify held no partition, no segment or no log byte: a gate that checked "
        "nothing must not pass. `--allow-empty` accepts partitions with no segment or only empty ones.",
        "-",
        None,
    ),
    FindingKind(
        "incomplete-check",
        Consequence.UNCHECKED,
        "partition",
        "verify checked fewer log bytes than the segment files held when listed, without "
        "`--max-bytes` asking for less (a file shrank, vanished or could not be read whole).",
        "-",
        None,
    ),
    # --- tiered storage: the broker's remote index cache, a remote store against its metadata ---
    FindingKind(
        "remote-index-cache-name-invalid",
        Consequence.REFUSES,
        "remote index cache",
        "An entry of `<log dir>/remote-log-index-cache/` not named `<start offset>_<segment id>.<index|"
        "timeindex|txnindex>` (nor `.tmp`/`.deleted`): a stray file, a directory, a bad segment id.",
        "The broker exits at start-up (the segment id does not parse as a Uuid, or the name has no dot). "
        "Remove the entry.",
        None,
    ),
    FindingKind(
        "remote-index-cache-corrupt",
        Consequence.REFUSES,
        "remote index cache",
        "A cached remote index that fails the broker's sanity check: an `.index` or `.timeindex` that is "
        "not whole entries, whose last entry lies below its base offset or (time index) before its first "
        "timestamp, or a `.txnindex` entry of another version or ending below the base offset.",
        "The broker exits at start-up (CorruptIndexException). Delete the segment's three cached files: "
        "the broker fetches them again from remote storage when it next reads that segment.",
        None,
    ),
    FindingKind(
        "remote-index-cache-leftover",
        Consequence.LEGAL,
        "remote index cache",
        "A `.tmp` download or `.deleted` evicted entry in the remote index cache, or the files of a cached "
        "segment missing one of its three indexes.",
        "Deleted at start-up; the indexes are fetched again from remote storage when needed.",
        None,
    ),
    FindingKind(
        "remote-segment-missing",
        Consequence.SERVES_WRONG,
        "remote store",
        "A remote segment whose copy finished per `__remote_log_metadata` lacks files in the remote "
        "store (`.log`, `.index`, `.timeindex`, `.snapshot` or `.leader_epoch_checkpoint`).",
        "Fetches of its offsets and timestamp lookups in it fail (RemoteResourceNotFoundException); once "
        "local retention deleted the local copy, its records are lost to consumers.",
        None,
    ),
    FindingKind(
        "remote-segment-mismatch",
        Consequence.SERVES_WRONG,
        "remote store",
        "A remote segment's bytes differ from its metadata: the `.log` size, the first or last offset, "
        "the leader epochs or the max timestamp are not what `__remote_log_metadata` recorded.",
        "The broker reads positions and offsets by the metadata: fetches return the wrong records or "
        "fail, and timestamp lookups skip or pick the wrong segment.",
        None,
    ),
    FindingKind(
        "remote-segment-copy-unfinished",
        Consequence.REPAIRS,
        "remote store",
        "A segment whose copy to remote storage started (COPY_SEGMENT_STARTED) and never finished: a "
        "broker stopped or failed mid-copy. Its files may be partly in the store.",
        "Never served; the leader copies the local segment again under a new id. The partial files "
        "stay in the store until they are cleaned up.",
        None,
    ),
    FindingKind(
        "remote-segment-delete-unfinished",
        Consequence.LEGAL,
        "remote store",
        "A remote segment whose deletion started (DELETE_SEGMENT_STARTED) and has not finished.",
        "No longer served; the broker retries the deletion.",
        None,
    ),
    FindingKind(
        "remote-segment-unknown",
        Consequence.REPAIRS,
        "remote store",
        "Files of a remote segment that `__remote_log_metadata` does not know, or whose deletion it "
        "records as finished.",
        "The broker never reads or deletes them: storage paid for nothing.",
        None,
    ),
    FindingKind(
        "remote-log-gap",
        Consequence.SERVES_WRONG,
        "partition",
        "Offsets of a tiered partition that no remote segment whose copy finished covers: between its log "
        "start offset and its local log start offset, or between two remote segments.",
        "Fetches there fail with OffsetOutOfRange: consumers reset or skip the records.",
        None,
    ),
    FindingKind(
        "remote-metadata-missing",
        Consequence.UNCHECKED,
        "remote store",
        "A remote store (or one of its partitions) was given to verify without the `__remote_log_metadata` "
        "that describes it: its segments could not be checked against what the brokers recorded.",
        "-",
        None,
    ),
    # --- broker tarballs (a log dir read in place from a .tar, .tar.gz or .tar.zst) -------------
    FindingKind(
        "archive-damaged",
        Consequence.LOSES,
        "archive",
        "A tarball of a log dir that cannot be read to its end-of-archive marker: it was cut short, "
        "a member header does not decode, or its compressed stream is corrupt. The members before "
        "the damage are read and checked; whatever came after it is missing from the results.",
        "Not applicable: a broker reads only unpacked log dirs; unpacking this archive would lose "
        "the same members.",
        None,
    ),
    FindingKind(
        "archive-member-truncated",
        Consequence.LOSES,
        "archive",
        "A member of a tarball whose bytes end before the size its header declares (the archive was "
        "cut inside it). kdump checks the bytes present, so a segment usually also shows a partial "
        "trailing batch where the archive ends.",
        "Not applicable: unpacked, the file would be just as short, and recovery would truncate it.",
        None,
    ),
    # --- payloads (dump --key-type/--value-type, kdump schemas) ----------------------------------
    FindingKind(
        "payload-decode-failed",
        Consequence.OUTSIDE,
        "payload",
        "A key or value that names a schema (the Schema Registry wire format: magic byte 0 and a schema "
        "id, or a `__key_schema_id` / `__value_schema_id` header) or was asked for as a typed value "
        "(`int32`, `int64`, `float`, `double`, `uuid`, `json`) but does not decode as that: a poison "
        "message, bytes that only look like the wire format, or a schema that does not parse. It is "
        "shown raw.",
        "Not a broker matter: the broker stores and serves it like any other record. Consumers with "
        "the registry's deserializers fail on it with a SerializationException.",
        None,
    ),
    FindingKind(
        "schema-id-unknown",
        Consequence.OUTSIDE,
        "payload",
        "Keys or values of a file name a schema id (or GUID) that none of the schema sources has "
        "(`_schemas`, local files, the registry URL): one finding per schema and file, with how many "
        "records and the first offset. They are shown raw.",
        "Not a broker matter. Consumers fail to deserialize them while the registry lacks the schema "
        "(a lost or rebuilt registry: see `kdump schemas --write`).",
        None,
    ),
    FindingKind(
        "schema-deleted",
        Consequence.LEGAL,
        "payload",
        "Keys or values of a file were written with a schema that the registry has deleted (soft- "
        "or hard-deleted in `_schemas`, or cleared); they are decoded with it, since `_schemas` still "
        "holds it. One finding per schema and file.",
        "Not a broker matter. A registry serves soft-deleted schemas to deserializers by id; after a "
        "hard delete, consumers fail on these records.",
        None,
    ),
    FindingKind(
        "schemas-record-invalid",
        Consequence.OUTSIDE,
        "payload",
        "A record of the `_schemas` topic that the Schema Registry would not read: a key or value that "
        "is not JSON, a SCHEMA record without subject, version, id or schema text, an unknown key type.",
        "The broker serves it; a registry reading the topic at start-up skips or fails on it.",
        None,
    ),
]

CATALOG: dict[str, FindingKind] = {k.code: k for k in _KINDS}


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding at one place: code, severity, file, byte position, Kafka offset, message."""

    code: str
    severity: Severity
    file: str
    position: int | None
    offset: int | None
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    # The repair of this one finding where its code's catalog repair does not fit every file the code
    # covers (a leader-epoch-checkpoint among the checkpoints): a template as the catalog's.
    repair_template: str | None = None

    @property
    def kind(self) -> FindingKind:
        """The catalog entry of this finding's code."""
        return CATALOG[self.code]

    @property
    def repair(self) -> str | None:
        """The kdump command that repairs it, with this finding's partition (and offset) filled in."""
        template = self.repair_template or CATALOG[self.code].repair
        if template is None:
            return None
        from kdump.store.locations import is_stored

        if is_stored(self.file):
            # Repairs work on local files only: name the copy to repair, keeping the URL whole.
            where = f"a local copy of {self.file.rsplit('/', 1)[0]}"
        else:
            import shlex

            where = shlex.quote(str(Path(self.file).parent))
        command = template.replace("PARTITION", where)
        if self.details.get("salvage_first"):
            # Valid data lies past the cut the trim makes: get it out first.
            command = f"kdump salvage --out DIR {where} && {command}"
        if self.offset is not None:
            command = command.replace("OFFSET", str(self.offset))
        return command


def make_finding(
    code: str,
    file: str,
    message: str,
    *,
    position: int | None = None,
    offset: int | None = None,
    severity: Severity | None = None,
    repair: str | None = None,
    **details: Any,
) -> Finding:
    """Build a finding of a catalogued code (its severity comes from the catalog; `repair`, a template
    as the catalog's, where this finding's repair is not its code's)."""
    kind = CATALOG[code]
    return Finding(code, severity or kind.severity, file, position, offset, message, details, repair)
