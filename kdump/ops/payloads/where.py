"""`--where`: which records to keep, as a jq expression over the record's JSON object.

The expression sees exactly the object `--format json` prints for the record (decoded key and value
embedded as objects, `key_schema_id` and `value_schema_id`, the headers as a list of `{key, value}`
objects: `.headers | from_entries` makes them a map). A record is kept when the expression yields
a value other than false and null, as jq's `select(EXPR)` keeps it; an expression that fails on a
record (indexing a string, say) does not keep it. jq runs in libjq through the `jq` package.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from kdump.errors import KdumpError
from kdump.formats.payloads import missing


class WhereError(KdumpError, ValueError):
    """An expression jq does not compile (a usage error)."""


@lru_cache(maxsize=8)
def compile_where(expression: str) -> Callable[[str], bool]:
    """A predicate over a record's JSON text.

    Raises:
        WhereError: jq rejects the expression.
        PathError: the jq package is missing.
    """
    try:
        import jq
    except ImportError:
        raise missing("jq", "--where") from None
    program = f"isempty(try ({expression}) catch empty | select(. != false and . != null)) | not"
    try:
        compiled = jq.compile(program)
    except ValueError as exc:
        raise WhereError(f"--where {expression!r} is not a jq expression: {exc}") from None

    def keep(text: str) -> bool:
        try:
            return compiled.input_text(text).first() is True
        except ValueError:
            return False

    return keep
