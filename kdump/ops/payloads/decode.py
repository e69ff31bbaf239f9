"""Keys and values decoded while dumping: the Schema Registry wire format (Avro, Protobuf, JSON
Schema) and plain typed values.

Each record's key and value is decoded as its `--key-type` / `--value-type` asks. With `registry`,
the schema is named by the payload's prefix (magic 0 and an id) or by a `__key_schema_id` /
`__value_schema_id` header, and found in the `SchemaCatalog`. A payload that names a schema but does
not decode is shown raw with a `payload-decode-failed` finding at its offset; one whose schema no
source has is shown raw too, and counted; one written with a deleted schema is decoded with it (the
registry's soft-deleted schemas are still there) and counted. The counts of a file come in a
`PayloadTally` before its summary, with one `schema-id-unknown` / `schema-deleted` finding per
schema and file (how many records, the first offset): never one per record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from kdump.errors import DecodeError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.payloads import values
from kdump.formats.payloads.limits import PayloadLimitError, check_output, output_limit
from kdump.formats.payloads.protobuf import ProtobufSchema, descriptor_from_base64
from kdump.formats.payloads.wire import (
    KEY_SCHEMA_ID_HEADER,
    VALUE_SCHEMA_ID_HEADER,
    Framing,
    SchemaRef,
    header_ref,
    header_value,
    message_indexes,
    prefix_framing,
)
from kdump.formats.records import Record
from kdump.ops.dump.payload_events import RAW, Decoded, PayloadOptions, PayloadRecord, PayloadTally
from kdump.ops.payloads.schema_catalog import (
    SchemaCatalog,
    SchemaEntry,
    build_catalog,
    schemas_partitions,
    sibling_schemas,
)
from kdump.scan.events import ScanSummary

_FORMATS = {"AVRO": "avro", "PROTOBUF": "protobuf", "JSON": "json-schema"}


_Fast = tuple[Callable[[bytes], "bytes | None"] | None, Callable[[bytes], bytes], int | None, str]


class _Schema(NamedTuple):
    fmt: str
    decode: Callable[[bytes, Framing, bytes], Any]  # (payload, framing, header or payload) -> value
    entry: SchemaEntry
    prefixed: Callable[[bytes], Any] | None = None  # a whole prefixed payload -> value (not Protobuf)
    # Whether a decoded value holds only finite floats (orjson writes the others as null); None: it
    # holds no float at all.
    floats: Callable[[Any], bool] | None = values.all_finite
    # The compiled path: a whole prefixed payload straight to JSON text, None where it declines.
    compiled: Callable[[bytes], bytes | None] | None = None


class PayloadDecoder:
    """Decodes keys and values by the options; keeps the current file's tally."""

    def __init__(self, options: PayloadOptions, catalog: SchemaCatalog | None = None, encoding: str = "utf8"):
        self.options = options
        self.catalog = catalog if catalog is not None else SchemaCatalog()
        self.json = values.JsonWriter(encoding)
        self._schemas: dict[SchemaRef, _Schema | DecodeError | None] = {}
        # For the common case, by prefixed id, of live schemas: the compiled path (or None), the
        # reference (payload -> JSON), the schema id and the format; and the last one used, by prefix.
        self._fast: dict[int, _Fast] = {}
        self._last: (
            tuple[bytes, Callable[[bytes], bytes | None] | None, Callable[[bytes], bytes], int | None, str]
            | None
        ) = None
        self.tally = PayloadTally("")

    def take_tally(self, file: str) -> PayloadTally:
        """The tally so far (then a fresh one for `file`)."""
        done, self.tally = self.tally, PayloadTally(file)
        return done

    def decode(self, r: Record, batch: BatchHeader, file: str) -> tuple[PayloadRecord, list[Finding]]:
        """A record's key and value decoded, and the findings of those that did not decode."""
        found: list[Finding] = []
        opts = self.options
        kind = opts.key_type
        k = r.key
        if kind == "raw":
            key = RAW
        elif k is not None and ((kind == "int32" and len(k) == 4) or (kind == "int64" and len(k) == 8)):
            self.tally.decoded[kind] += 1
            key = Decoded(str(int.from_bytes(k, "big", signed=True)).encode(), None, kind)
        else:
            key = self._side(r, k, True, kind, batch, file, found)
        value = r.value
        kind = opts.value_type
        if kind == "registry" and value is not None and not r.headers:
            fast = self.fast_value(value)
            if fast is not None:
                return PayloadRecord(r, key, Decoded(*fast)), found
        if kind != "raw":
            return PayloadRecord(r, key, self._side(r, value, False, kind, batch, file, found)), found
        return PayloadRecord(r, key, RAW), found

    def fast_value(self, value: bytes) -> tuple[bytes, int | None, str] | None:
        """The common case of a `registry` value without headers: a prefixed id of a live schema
        already built (the same as the value before, most often) that decodes; its JSON, schema
        id and format, counted. None otherwise: then `decode` takes the general way."""
        if value[:1] != b"\x00":
            return None
        last = self._last
        if last is None or not value.startswith(last[0]):
            fast = self._fast.get(int.from_bytes(value[1:5], "big")) if len(value) >= 5 else None
            last = self._last = None if fast is None else (value[:5], *fast)
            if last is None:
                return None
        compiled = last[1]
        text = compiled(value) if compiled is not None else None
        if text is not None and len(text) > output_limit(len(value)):
            return None  # the general way reports it
        if text is None:
            try:
                text = last[2](value)
            except DecodeError:
                return None  # the general way reports it
            if len(text) > output_limit(len(value)):
                return None
        self.tally.decoded[last[4]] += 1
        return text, last[3], last[4]

    def last_common(self) -> tuple[bytes, Callable[[bytes], bytes | None], int | None, str] | None:
        """The common case `fast_value` took last, when it has a compiled path: its 5-byte prefix,
        the compiled decoder, the schema id and the format. A caller that decodes values carrying
        that prefix itself must count them in `tally.decoded[format]`."""
        last = self._last
        if last is None or last[1] is None:
            return None
        return last[0], last[1], last[3], last[4]

    def _side(
        self,
        r: Record,
        data: bytes | None,
        is_key: bool,
        kind: str,
        batch: BatchHeader,
        file: str,
        found: list[Finding],
    ) -> Decoded:
        if data is None:
            return RAW
        if (kind == "int32" and len(data) == 4) or (kind == "int64" and len(data) == 8):
            self.tally.decoded[kind] += 1
            return Decoded(str(int.from_bytes(data, "big", signed=True)).encode(), None, kind)
        what = "key" if is_key else "value"
        if kind != "registry":
            try:
                text = self.json.dumps(values.decode_typed(kind, data))
                check_output(text, len(data))
            except PayloadLimitError as exc:
                return self._failed(
                    found, r, batch, file, f"{what} at offset {r.offset}: {exc}", code="payload-over-limit"
                )
            except DecodeError as exc:
                return self._failed(
                    found, r, batch, file, f"{what} at offset {r.offset} is not {kind}: {exc}"
                )
            self.tally.decoded[kind] += 1
            return Decoded(text, None, kind)
        carrier = header_value(r.headers, KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER)
        try:
            if carrier is not None:
                ref, at = header_ref(carrier)
                framing = Framing(ref, at, carrier)
            else:
                framed = prefix_framing(data)
                if framed is None:
                    self.tally.not_framed += 1
                    return RAW
                framing = framed
        except DecodeError as exc:
            return self._failed(found, r, batch, file, f"{what} at offset {r.offset}: {exc}")
        schema = self._schema(framing.ref)
        sid = framing.ref.schema_id
        if schema is None:
            self.tally.unknown_schema += 1
            slot = self.tally.unknown.setdefault(framing.ref.label(), [0, r.offset])
            slot[0] += 1
            return Decoded(None, sid, None)
        if isinstance(schema, DecodeError):
            return self._failed(
                found, r, batch, file, f"{what} at offset {r.offset}: {framing.ref.label()}: {schema}", sid
            )
        if sid is None:
            sid = schema.entry.schema_id
        if schema.entry.deleted:
            self.tally.deleted_schema += 1
            slot = self.tally.deleted.setdefault(
                f"{framing.ref.label()} ({schema.entry.state})", [0, r.offset]
            )
            slot[0] += 1
        try:
            value = schema.decode(data, framing, carrier if carrier is not None else data)
            text = self.json.dumps_checked(value, schema.floats)
            check_output(text, len(data))
        except PayloadLimitError as exc:
            msg = f"{what} at offset {r.offset} names {framing.ref.label()} ({schema.fmt}); {exc}"
            return self._failed(found, r, batch, file, msg, sid, code="payload-over-limit")
        except DecodeError as exc:
            msg = f"{what} at offset {r.offset} names {framing.ref.label()} ({schema.fmt}) but does not decode: {exc}"
            return self._failed(found, r, batch, file, msg, sid)
        self.tally.decoded[schema.fmt] += 1
        return Decoded(text, sid, schema.fmt)

    def _failed(
        self,
        found: list[Finding],
        r: Record,
        batch: BatchHeader,
        file: str,
        message: str,
        sid: int | None = None,
        code: str = "payload-decode-failed",
    ) -> Decoded:
        self.tally.failed += 1
        found.append(make_finding(code, file, message, position=batch.position, offset=r.offset))
        return Decoded(None, sid, None)

    def _schema(self, ref: SchemaRef) -> _Schema | DecodeError | None:
        if ref in self._schemas:
            return self._schemas[ref]
        entry = self.catalog.find(ref)
        built: _Schema | DecodeError | None = None
        if entry is not None:
            try:
                built = _build(self.catalog, entry)
            except DecodeError as exc:
                built = exc
        self._schemas[ref] = built
        if isinstance(built, _Schema) and ref.schema_id is not None:
            prefixed = built.prefixed
            if prefixed is not None and not built.entry.deleted:
                dumps, check = self.json.dumps_checked, built.floats

                def render(data: bytes) -> bytes:
                    return dumps(prefixed(data), check)

                self._fast[ref.schema_id] = (built.compiled, render, built.entry.schema_id, built.fmt)
        return built

    def finish(self, file: str) -> list[Any]:
        """The file's per-schema findings and its tally (then a fresh tally)."""
        t = self.take_tally(file)
        t.file = file
        out: list[Any] = []
        for label, (n, first) in sorted(t.unknown.items()):
            out.append(
                make_finding(
                    "schema-id-unknown",
                    file,
                    f"{n} keys or values name schema {label}, which no schema source has "
                    f"(first at offset {first}); shown raw",
                    offset=first,
                    records=n,
                )
            )
        for label, (n, first) in sorted(t.deleted.items()):
            out.append(
                make_finding(
                    "schema-deleted",
                    file,
                    f"{n} keys or values were written with schema {label}, deleted in the registry "
                    f"(first at offset {first}); decoded with it",
                    offset=first,
                    records=n,
                )
            )
        out.append(t)
        return out


def _build(catalog: SchemaCatalog, entry: SchemaEntry) -> _Schema:
    """The decoder of one schema (its references resolved)."""
    fmt = _FORMATS.get(entry.schema_type)
    if fmt is None:
        raise DecodeError(f"schema type {entry.schema_type!r} is not Avro, Protobuf or JSON")

    def body(data: bytes, framing: Framing) -> bytes:
        return data[framing.body :] if framing.header is None else data

    if fmt == "json-schema":
        return _Schema(
            fmt,
            lambda data, framing, _c: values.parse_json(body(data, framing)),
            entry,
            lambda data: values.parse_json(data[5:]),
        )
    deps = catalog.references_of(entry)
    if fmt == "avro":
        from kdump.formats.payloads.avro import avro_json, avro_reader, finite_check

        texts = [d.schema for _, d in deps]
        read = avro_reader(entry.schema, texts)
        floats = finite_check(entry.schema, texts)
        return _Schema(
            fmt,
            lambda data, framing, _c: read(body(data, framing)),
            entry,
            avro_reader(entry.schema, texts, skip=5),
            floats,
            avro_json(entry.schema, texts, skip=5),
        )
    proto = _protobuf(entry, [(r.name, d) for r, d in deps])

    def decode(data: bytes, framing: Framing, carrier: bytes) -> Any:
        indexes, end = message_indexes(carrier, framing.body)
        return proto.reader(indexes)(data[end:] if framing.header is None else data)

    # The runtime's JSON mapping writes NaN and infinities as strings: no float needs care.
    return _Schema(fmt, decode, entry, None, None)


def _protobuf(entry: SchemaEntry, deps: list[tuple[str, SchemaEntry]]) -> ProtobufSchema:
    root = descriptor_from_base64(entry.schema)
    described = {name: descriptor_from_base64(d.schema) for name, d in deps}
    if root is not None and all(v is not None for v in described.values()):
        return ProtobufSchema(root, {k: v for k, v in described.items() if v is not None})
    from kdump.ops.payloads.proto_text import compile_proto

    if root is not None:
        raise DecodeError("a base64 descriptor importing .proto text is not supported")
    name = Path(entry.path).name if entry.path else f"kdump-schema-{entry.schema_id}.proto"
    texts = {n: d.schema for n, d in deps if described[n] is None}
    texts[name] = entry.schema
    compiled = compile_proto(
        name,
        texts,
        {n: v for n, v in described.items() if v is not None},
        Path(entry.path).parent if entry.path else None,
    )
    return ProtobufSchema(compiled.pop(name), compiled)


# The decoder of each set of options in this process: built once by the command (before worker
# processes fork, so they inherit its schemas), then found by the options the dump carries.
_DECODERS: dict[PayloadOptions, PayloadDecoder] = {}


def registered_decoder(options: PayloadOptions) -> PayloadDecoder:
    """The decoder `open_decoder` built for these options (a fresh one from the options alone in a
    process that did not inherit it)."""
    found = _DECODERS.get(options)
    if found is None:
        found = _DECODERS[options] = open_decoder(options)
    return found


def open_decoder(options: PayloadOptions, targets: Iterable[Path] = ()) -> PayloadDecoder:
    """A decoder for the options (kept for `registered_decoder`); `_schemas` is looked for in the
    given targets too when `registry` decoding is asked and no `--schemas` was given.

    Raises:
        PathError: a schema source cannot be read.
    """
    if options.schemas:
        schemas = schemas_partitions(Path(p) for p in options.schemas)
    elif "registry" in (options.key_type, options.value_type):
        schemas = sibling_schemas(targets)
    else:
        schemas = []
    catalog = build_catalog(
        schemas, [(n, Path(p)) for n, p in options.schema_files], options.registry, options.order
    )
    decoder = _DECODERS[options] = PayloadDecoder(options, catalog, options.encoding)
    return decoder


def attach_payloads(events: Iterable[Any], decoder: PayloadDecoder, file: str) -> Iterator[Any]:
    """Replace each data record by a `PayloadRecord`; findings of payloads that do not decode come
    before their record; the tally (and per-schema findings) before the file's summary."""
    batch: BatchHeader | None = None
    decoder.take_tally(file)
    # The records' own decoding findings count in the file's summary, as the compiled path counts them.
    decoding: list[Finding] = []
    for ev in events:
        if type(ev) is Record and batch is not None and not batch.is_control:
            pr, found = decoder.decode(ev, batch, file)
            decoding += found
            yield from found
            yield pr
            continue
        if isinstance(ev, BatchHeader):
            batch = ev
        elif isinstance(ev, ScanSummary):
            extra = decoder.finish(file)
            yield from extra
            ev = count_findings(ev, decoding + [f for f in extra if isinstance(f, Finding)])
            decoding = []
        yield ev


def count_findings(summary: ScanSummary, found: list[Finding]) -> ScanSummary:
    """A summary counting these findings too."""
    import dataclasses

    if not found:
        return summary
    n = {sev: sum(1 for f in found if f.severity == sev) for sev in Severity}
    return dataclasses.replace(
        summary,
        findings_info=summary.findings_info + n[Severity.INFO],
        findings_warning=summary.findings_warning + n[Severity.WARNING],
        findings_error=summary.findings_error + n[Severity.ERROR],
    )
