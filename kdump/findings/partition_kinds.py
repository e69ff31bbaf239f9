"""The catalog's findings above one segment: a partition across its segments and state files, what
kdump was given and could not check, tiered storage, broker tarballs, and payloads."""

from __future__ import annotations

from kdump.findings.kinds import TRIM_TAIL, Consequence, FindingKind

__all__ = ["PARTITION_KINDS"]

PARTITION_KINDS = [
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
        "Followers truncate to the wrong offset after a leader change (KIP-101). After a torn or corrupt "
        "tail, the trim's cut takes out what contradicts the checkpoint and drops its epochs past the new "
        "log end, as the broker's recovery does: the repair is named there only, where it fixes the finding.",
        TRIM_TAIL,
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
        "metadata-record-invalid",
        Consequence.REFUSES,
        "partition",
        "A `__cluster_metadata` record that breaks what the controller guarantees (found by "
        "`kdump forecast`): a partition of an unknown topic, a change to an unknown partition or broker, "
        "a leader that is not a replica, an ISR member that is not a replica, or a record that does not "
        "decode.",
        "The broker's metadata loader fails on the record and stops applying the log: the broker does "
        "not catch up with the cluster's metadata and is not unfenced.",
        None,
    ),
    FindingKind(
        "metadata-log-gap",
        Consequence.REFUSES,
        "partition",
        "The `__cluster_metadata` log starts past the end offset of its newest snapshot (or there is no "
        "snapshot and it does not start at 0): the records between are in neither (found by "
        "`kdump forecast`).",
        "The broker cannot rebuild the metadata image from its own log dir; it must fetch a snapshot "
        "from the controller quorum before it can serve.",
        None,
    ),
    FindingKind(
        "metadata-transaction-open",
        Consequence.LEGAL,
        "partition",
        "The `__cluster_metadata` log ends inside a metadata transaction (a BeginTransactionRecord "
        "without its end), as a controller stopped mid-transaction leaves it (found by `kdump forecast`).",
        "The broker does not apply the transaction's records until its end arrives; a new controller "
        "aborts it.",
        None,
    ),
    FindingKind(
        "topic-id-unknown",
        Consequence.SERVES_WRONG,
        "partition",
        "A partition directory whose partition.metadata names a topic id (or a partition) that the "
        "`__cluster_metadata` log in the same log dir does not hold: often a topic deleted and re-created "
        "under the same name while the broker was down.",
        "A KRaft broker sets the log aside as a stray replica (renamed `<topic>-<p>.<uuid>-stray`, kept, "
        "never served); when the metadata assigns the partition here under its new id it creates it "
        "empty, so consumers see none of the directory's records.",
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
    FindingKind(
        "file-shrank-while-read",
        Consequence.UNCHECKED,
        "partition",
        "The file was cut shorter while kdump read it (a live broker truncating a follower's log, "
        "trimming an index at a roll): what kdump checked stops where the file gave way (the message "
        "says where); the bytes the file no longer has were read as zeros and judged as nothing.",
        "The broker that cut it reads the file as it is now; run kdump again on a stopped broker's data "
        "or a copy for a verdict.",
        None,
    ),
    FindingKind(
        "file-replaced-while-read",
        Consequence.UNCHECKED,
        "partition",
        "The path names another file (or none) since kdump opened it (a segment deleted by retention, "
        "renamed at a roll, or swapped): kdump checked the file it opened, not the one there now.",
        "The broker reads the file there now.",
        None,
    ),
    FindingKind(
        "file-grew-while-read",
        Consequence.LEGAL,
        "partition",
        "The file grew while kdump read it (a running broker appending to its active segment): kdump "
        "checked the bytes it had when it opened the file; the message says how many were appended "
        "since and were not checked.",
        "Appending to the active segment is what a running broker does.",
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
        "payload-over-limit",
        Consequence.OUTSIDE,
        "payload",
        "A key or value that decodes to more than kdump bounds per input byte: more than 65,536 + 64 "
        "per byte array items and map entries, or more than 1 MiB + 256 bytes of JSON per byte (an Avro "
        "array of zero-byte items, such as `array<array<null>>`, holds as many items as its count says "
        "for free: a few bytes make millions). It is shown raw and the dump goes on.",
        "Not a broker matter: the broker stores and serves it like any other record. A consumer that "
        "decodes it may run out of memory.",
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
