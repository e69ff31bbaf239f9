"""The catalog's findings of a segment's own files: the log's framing and checksums, its records
(`--deep`), and its indexes."""

from __future__ import annotations

from kdump.findings.kinds import REINDEX, TRIM_TAIL, Consequence, FindingKind

__all__ = ["SEGMENT_KINDS"]

SEGMENT_KINDS = [
    # --- the log: framing and checksums -------------------------------------------------------
    FindingKind(
        "crc-mismatch",
        Consequence.LOSES,
        "log",
        "A batch's stored checksum differs from the one computed over its bytes (CRC-32C over "
        "attributes..end for v2, CRC32 over magic..end for v0/v1).",
        "Recovery truncates the segment at this batch and deletes later unflushed segments; "
        "fetches of it fail with CorruptRecordException.",
        TRIM_TAIL,
    ),
    FindingKind(
        "partial-trailing-batch",
        Consequence.LOSES,
        "log",
        "The file ends inside a batch: an incomplete header, or a length that runs past the end.",
        "Recovery truncates the incomplete batch silently (`Found N invalid bytes at the end`).",
        TRIM_TAIL,
    ),
    FindingKind(
        "zero-filled-tail",
        Consequence.REPAIRS,
        "log",
        "Zeros where the next batch would start, to the end of the file: preallocation "
        "(log.preallocate) or a power loss that left unwritten pages.",
        "Recovery reads a length below 14, treats it as corrupt and truncates the zeros.",
        TRIM_TAIL,
    ),
    FindingKind(
        "invalid-batch-length",
        Consequence.LOSES,
        "log",
        "A length field below the minimum for the message format, or one that cannot be right "
        "because a valid batch starts before the end it claims.",
        "Recovery stops here and truncates the rest of the segment.",
        TRIM_TAIL,
    ),
    FindingKind(
        "unsupported-magic",
        Consequence.LOSES,
        "log",
        "A message format (magic byte) outside 0, 1 and 2.",
        "Recovery fails the checksum of the entry and truncates the segment there.",
        TRIM_TAIL,
    ),
    FindingKind(
        "skipped-bytes",
        Consequence.LOSES,
        "log",
        "Bytes kdump skipped after framing was lost, up to the next plausible batch (magic, length "
        "and checksum all agree); the offsets in between are lost.",
        "Recovery truncates at the damage, so every batch after it is lost too: salvage them with "
        "`kdump salvage` first.",
        TRIM_TAIL,
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
        REINDEX,
    ),
    FindingKind(
        "index-size-invalid",
        Consequence.REPAIRS,
        "index",
        "An index file whose length is not a multiple of its entry size (8 for .index, 12 for "
        ".timeindex, 34 for .txnindex).",
        "The broker rounds the length down to whole entries and ignores the rest (it no longer "
        "sanity-checks indexes when it loads a segment); recovering the segment rebuilds it.",
        REINDEX,
    ),
    FindingKind(
        "index-not-monotonic",
        Consequence.SERVES_WRONG,
        "index",
        "Offset index entries whose offsets or positions do not strictly increase, or an offset "
        "below the segment base.",
        "The broker does not check the order when it loads a segment: its binary search lands in the "
        "wrong place, so fetches read from the wrong position or miss records.",
        REINDEX,
    ),
    FindingKind(
        "index-offset-mismatch",
        Consequence.SERVES_WRONG,
        "index",
        "An offset index entry whose lookup would not land at or before the batch holding its "
        "offset: its position is not a batch start, or the batch there starts after that offset.",
        "Fetches starting at those offsets read from the wrong place or miss records.",
        REINDEX,
    ),
    FindingKind(
        "index-entry-beyond-log",
        Consequence.SERVES_WRONG,
        "index",
        "An index entry that points past the valid end of the log (a stale index after truncation).",
        "The broker does not compare an index with its log when it loads a segment: fetches of those "
        "offsets find no batch at the position and go on to the next segment, skipping records.",
        REINDEX,
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
        REINDEX,
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
        REINDEX,
    ),
    FindingKind(
        "time-index-out-of-order",
        Consequence.SERVES_WRONG,
        "timeindex",
        "Time index entries whose timestamps or offsets do not increase.",
        "Offset-for-timestamp lookups (consumer resets) return wrong offsets.",
        REINDEX,
    ),
    FindingKind(
        "time-index-mismatch",
        Consequence.SERVES_WRONG,
        "timeindex",
        "A time index entry claiming a larger timestamp than any batch up to its offset holds, or "
        "an offset that is not the last offset of a batch.",
        "Offset-for-timestamp lookups may skip records.",
        REINDEX,
    ),
    FindingKind(
        "time-index-offset-not-found",
        Consequence.SERVES_WRONG,
        "timeindex",
        "A time index entry whose offset is not in the valid log.",
        "Offset-for-timestamp lookups may return offsets that do not exist.",
        REINDEX,
    ),
    FindingKind(
        "txn-index-mismatch",
        Consequence.SERVES_WRONG,
        "txnindex",
        "The .txnindex disagrees with the ABORT markers in the log (entries missing, extra or different).",
        "READ_COMMITTED consumers may deliver aborted records, or drop committed ones.",
        REINDEX,
    ),
]
