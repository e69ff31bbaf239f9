"""Java's text conventions for decoded messages: UTF-8 as `new String(bytes, UTF_8)` reads it, and JSON as
Jackson's `JsonNode.toString()` writes it (with floats in `Double.toString` form).

Kafka's tools print decoded internal records through these two; kdump reproduces them byte for byte.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Final

_REPLACEMENT: Final = "\ufffd"


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def java_utf8_decode(data: bytes) -> str:
    """UTF-8 to text the way Java's `new String(bytes, UTF_8)` does it (JDK 9+), U+FFFD for bad input.

    Valid input decodes as usual. Java differs from Python's "replace" in how many bytes one U+FFFD stands
    for: an encoded surrogate (ED A0..BF xx) or a lead byte followed by one good continuation byte and a
    bad one is a single U+FFFD, and a sequence cut off by the end of the input is one U+FFFD for all of it.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    n = len(data)
    i = 0
    while i < n:
        lead = data[i]
        rest = n - i - 1
        if lead < 0x80:
            out.append(chr(lead))
            i += 1
        elif 0xC2 <= lead <= 0xDF:
            if rest == 0:
                out.append(_REPLACEMENT)
                break
            if _is_continuation(data[i + 1]):
                out.append(chr(((lead & 0x1F) << 6) | (data[i + 1] & 0x3F)))
                i += 2
            else:
                out.append(_REPLACEMENT)
                i += 1
        elif 0xE0 <= lead <= 0xEF:
            second_bad = rest >= 1 and (
                not _is_continuation(data[i + 1]) or (lead == 0xE0 and data[i + 1] < 0xA0)
            )
            if rest >= 2:
                out.append(_REPLACEMENT)
                if second_bad:
                    i += 1
                elif not _is_continuation(data[i + 2]):
                    i += 2
                else:
                    cp = ((lead & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)
                    if not 0xD800 <= cp <= 0xDFFF:
                        out[-1] = chr(cp)
                    i += 3
            elif second_bad:
                out.append(_REPLACEMENT)
                i += 1
            else:  # truncated: one replacement for what is left
                out.append(_REPLACEMENT)
                break
        elif 0xF0 <= lead <= 0xF7:
            second = data[i + 1] if rest >= 1 else -1
            second_bad = rest >= 1 and (
                not _is_continuation(second)
                or (lead == 0xF0 and not 0x90 <= second <= 0xBF)
                or (lead == 0xF4 and second & 0xF0 != 0x80)
            )
            if rest >= 3:
                third, fourth = data[i + 2], data[i + 3]
                cp = ((lead & 0x07) << 18) | ((second & 0x3F) << 12) | ((third & 0x3F) << 6) | (fourth & 0x3F)
                if (
                    _is_continuation(second)
                    and _is_continuation(third)
                    and _is_continuation(fourth)
                    and 0x10000 <= cp <= 0x10FFFF
                ):
                    out.append(chr(cp))
                    i += 4
                    continue
                out.append(_REPLACEMENT)
                if lead > 0xF4 or second_bad:
                    i += 1
                elif not _is_continuation(third):
                    i += 2
                else:
                    i += 3
            elif lead > 0xF4 or second_bad:
                out.append(_REPLACEMENT)
                i += 1
            else:  # truncated after a good second byte: skip it; stop unless a bad third byte follows
                out.append(_REPLACEMENT)
                i += 2
                if not (i < n and not _is_continuation(data[i])):
                    break
        else:
            out.append(_REPLACEMENT)
            i += 1
    return "".join(out)


def float_to_json(value: float) -> float | str:
    """A float64 in the JSON view: non-finite values become the strings Jackson writes."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def kafka_json(value: Any) -> str:
    """Serialise a JSON view exactly as Jackson's `JsonNode.toString()` does in Kafka 3.8.

    Compact separators, non-ASCII characters unescaped, control characters as `\\uXXXX` with upper-case hex
    (`\\b \\t \\n \\f \\r` short forms), and floats in Java's `Double.toString` form.
    """
    parts: list[str] = []
    _write_json(value, parts)
    return "".join(parts)


def _write_json(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(java_double_to_string(value))
    elif isinstance(value, str):
        out.append(json_string(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            if not first:
                out.append(",")
            first = False
            out.append(json_string(str(key)))
            out.append(":")
            _write_json(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write_json(item, out)
        out.append("]")
    else:
        raise TypeError(f"not JSON-able: {type(value).__name__}")


_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_ESCAPES: Final = {chr(c): _SHORT_ESCAPES.get(chr(c), f"\\u{c:04X}") for c in range(0x20)} | _SHORT_ESCAPES


def json_string(text: str) -> str:
    """A JSON string literal as Jackson writes it."""
    if not any(ch in _ESCAPES for ch in text):
        return f'"{text}"'
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in text) + '"'


def java_double_to_string(value: float) -> str:
    """Java's `Double.toString` (JDK 19+: the shortest decimal that rounds to `value`, at least two digits
    when that is closer)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    # `digits` d1 d2 ... dn means 0.d1d2...dn x 10^exponent; Java writes d1.d2...dn x 10^(exponent-1).
    sci_exp = exponent - 1
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        if exponent <= 0:
            text = "0." + "0" * (-exponent) + digits
        elif exponent >= len(digits):
            text = digits + "0" * (exponent - len(digits)) + ".0"
        else:
            text = digits[:exponent] + "." + digits[exponent:]
        return sign + text
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{sci_exp}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-tripping digits of a positive finite float, as (digits, exponent) with value =
    0.digits x 10^exponent; a one-digit result is replaced by the closest two-digit decimal that also
    rounds to `value` (the JDK 19+ rule)."""
    text = repr(value)
    mantissa, _, exp_text = text.partition("e")
    exp10 = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = (int_part + frac_part).lstrip("0")
    # Position of the decimal point relative to the first significant digit.
    lead_zeros = len(int_part + frac_part) - len((int_part + frac_part).lstrip("0"))
    exponent = len(int_part) - lead_zeros + exp10
    all_digits = all_digits.rstrip("0") or "0"
    if len(all_digits) == 1:
        exact = Decimal(value)
        two = exact.scaleb(-(exponent - 2)).to_integral_value()  # round half even to two digits
        candidate = Decimal(two).scaleb(exponent - 2)
        if float(candidate) == value:
            two_digits = str(int(two))
            if len(two_digits) == 2 and two_digits[1] != "0":
                return two_digits, exponent
    return all_digits, exponent
