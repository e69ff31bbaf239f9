"""`dump` with keys and values decoded: the files of `kdump.ops.dump.stream`, each log's records
given their decoded payloads when the options ask for them (`--key-type`, `--value-type`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kdump.model.log_dir import Target
from kdump.ops.dump import stream
from kdump.ops.dump.stream import DumpEvent, DumpItem, DumpOptions

__all__ = ["dump_item", "dump_targets"]


def dump_targets(targets: Iterable[Target], options: DumpOptions) -> Iterator[DumpEvent]:
    """Dump every file of every target, in order, payloads decoded as the options ask."""
    for item in stream.dump_items(targets, options):
        yield from dump_item(item, options)


def dump_item(item: DumpItem, options: DumpOptions) -> Iterator[DumpEvent]:
    """Dump one file, a log's payloads decoded as the options ask."""
    events = stream.dump_item(item, options)
    payloads = options.payloads
    if (
        item.note is None
        and item.is_log
        and payloads is not None
        and payloads.decoding
        and options.records
        and item.decoder is None
    ):
        # The decoders load only when keys or values are decoded.
        from kdump.ops.payloads.decode import attach_payloads, registered_decoder

        events = attach_payloads(events, registered_decoder(payloads), item.label)
    yield from events
