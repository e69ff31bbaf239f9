"""Hand-made `__remote_log_metadata` record values: every record type and state, and what Kafka refuses.

Brokers write only a few of these (segment copies and deletes); the rest (partition deletes, snapshot
records, unknown states, impossible offsets, unknown frames and types, trailing bytes) are built here
with the tests' encoder, so that the corpus script can run each release's own kafka-dump-log
`--remote-log-metadata-decoder` over them and keep what it prints as an oracle
(`tests/data/make_tiered_corpus.py`). Values only: the script puts them in a segment.
"""

from __future__ import annotations

import base64
from typing import Any

from wire import encode_message, uvarint

from kdump.formats.internal.remote_log_metadata import MESSAGES

TOPIC = {"name": "orders", "id": "CNdFbmoVQ6OKmAm3PFWGjw", "partition": 3}
SEGMENT = {"topicIdPartition": TOPIC, "id": "z3u4W_wlS0CJKrvwu0HXtw"}
CUSTOM = base64.b64encode(b"\x00\x01custom").decode()


def _frame(api_key: int, data: dict[str, Any], *, version: int = 0, frame: int = 1) -> bytes:
    return (
        uvarint(frame) + uvarint(api_key) + uvarint(version) + encode_message(MESSAGES[api_key][1], data, 0)
    )


def _segment(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "remoteLogSegmentId": SEGMENT,
        "startOffset": 100,
        "endOffset": 199,
        "brokerId": 2,
        "maxTimestampMs": 1_795_620_516_124,
        "eventTimestampMs": 1_795_620_517_861,
        "segmentLeaderEpochs": [
            {"leaderEpoch": 5, "offset": 150},
            {"leaderEpoch": 3, "offset": 100},
            {"leaderEpoch": 5, "offset": 160},
        ],
        "segmentSizeInBytes": 4206,
        "customMetadata": None,
        "remoteLogSegmentState": 0,
        "txnIndexEmpty": True,
    }
    data.update(changes)
    return data


def _update(state: int, custom: str | None = None) -> dict[str, Any]:
    return {
        "remoteLogSegmentId": SEGMENT,
        "brokerId": 2,
        "eventTimestampMs": 1_795_620_517_992,
        "customMetadata": custom,
        "remoteLogSegmentState": state,
    }


def _partition_delete(state: int) -> dict[str, Any]:
    return {
        "topicIdPartition": TOPIC,
        "brokerId": 1,
        "eventTimestampMs": 1_795_620_600_000 + state,
        "remotePartitionDeleteState": state,
    }


def _snapshot(**changes: Any) -> dict[str, Any]:
    data = _segment(**changes)
    del data["remoteLogSegmentId"]
    return {"segmentId": SEGMENT["id"], **data}


def samples() -> list[tuple[str, bytes]]:
    """(what it is, record value), in the order the segment holds them."""
    out: list[tuple[str, bytes]] = [
        ("copy started, 2 epochs (one given twice), txn index empty", _frame(0, _segment())),
        (
            "copy started, custom metadata, txn index not empty",
            _frame(
                0,
                _segment(
                    customMetadata=CUSTOM,
                    txnIndexEmpty=False,
                    segmentLeaderEpochs=[{"leaderEpoch": 0, "offset": 100}],
                ),
            ),
        ),
    ]
    out += [(f"update to state {s}", _frame(1, _update(s))) for s in (1, 2, 3)]
    out.append(("update with custom metadata", _frame(1, _update(1, CUSTOM))))
    out += [(f"partition delete state {s}", _frame(2, _partition_delete(s))) for s in (0, 1, 2)]
    out.append(("snapshot record", _frame(3, _snapshot(remoteLogSegmentState=1))))
    out.append(
        ("snapshot record, custom metadata", _frame(3, _snapshot(customMetadata=CUSTOM, txnIndexEmpty=False)))
    )
    # What Kafka's tool refuses ("Error at offset <n>, skipping. <why>").
    out += [
        ("unknown segment state 7", _frame(0, _segment(remoteLogSegmentState=7))),
        ("negative start offset", _frame(0, _segment(startOffset=-1))),
        ("end offset before start offset", _frame(0, _segment(endOffset=99))),
        ("no leader epochs", _frame(0, _segment(segmentLeaderEpochs=[]))),
        ("update to unknown state 9", _frame(1, _update(9))),
        ("partition delete unknown state 5", _frame(2, _partition_delete(5))),
        ("snapshot with no leader epochs", _frame(3, _snapshot(segmentLeaderEpochs=[]))),
        ("snapshot with unknown state 4", _frame(3, _snapshot(remoteLogSegmentState=4))),
        ("unknown record type 7", uvarint(1) + uvarint(7) + uvarint(0) + b"\x00"),
        ("record version 1", _frame(1, _update(1), version=1)),
        ("frame version 0", _frame(1, _update(1), frame=0)),
        ("frame version 2", _frame(1, _update(1), frame=2)),
        ("frame version too large", uvarint(0x8000) + uvarint(1) + uvarint(0)),
        ("two bytes after the message", _frame(1, _update(1)) + b"\x00\x00"),
    ]
    return out
