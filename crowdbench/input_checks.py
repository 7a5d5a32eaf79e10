"""The one set of checks every piece of outside text passes: request bodies, query strings, form
fields, worker answers and imported files.

Text that a database or a later reader cannot take is refused here, before it reaches a model:
NUL (PostgreSQL refuses it in text columns), lone surrogates (not encodable as UTF-8), other C0/C1
control characters (tab, newline and carriage return are fine where text may span lines), and
Unicode non-characters. Text made only of white space and invisible format characters (zero-width
spaces, word joiners, byte-order marks) counts as empty. JSON is refused when nested deeper than
a small bound or when it uses the non-standard constants NaN and Infinity.

No Django import: the middleware, the task types and the file readers all call these functions.
"""
from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from .errors import ServiceError

# Deep enough for every payload the platform takes (the deepest is a list of objects in an object).
MAX_JSON_DEPTH = 20
LINE_BREAKS = "\t\n\r"

# C0 and C1 controls, lone surrogates and the non-characters U+FFFE / U+FFFF.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_FORBIDDEN_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


class HostileInput(ServiceError):
    """The request contains input that is not accepted."""

    status_code = 400


def describe_character(char: str) -> str:
    code = ord(char)
    if char == "\x00":
        return "a NUL character (U+0000)"
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate (U+{code:04X}), which is not valid Unicode text"
    if code in (0xFFFE, 0xFFFF):
        return f"a Unicode non-character (U+{code:04X})"
    if char in LINE_BREAKS:
        return f"a line break or tab (U+{code:04X}) where one line is expected"
    return f"a control character (U+{code:04X})"


def text_problem(value: str, *, multiline: bool = True) -> str | None:
    """Why ``value`` is refused ("contains a NUL character (U+0000)"), or None when it is fine."""
    pattern = _FORBIDDEN if multiline else _FORBIDDEN_ONE_LINE
    match = pattern.search(value)
    if match is None:
        return None
    return f"contains {describe_character(match.group())} at character {match.start() + 1}"


def is_blank(value: str) -> bool:
    """True when nothing visible is left once white space and format characters (Cf) are removed."""
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in value)


def check_text(value: str, *, where: str, multiline: bool = True) -> str:
    """``value`` unchanged, or HostileInput naming ``where`` (a field, a parameter)."""
    problem = text_problem(value, multiline=multiline)
    if problem:
        raise HostileInput(f"{where} {problem}.")
    return value


def strict_int(value: Any, *, allow_digit_strings: bool = False) -> int | None:
    """``value`` as an int, or None when it is not one.

    JSON gives real integers, so ``3.9``, ``"3"`` and ``true`` are refused there; form fields only
    carry text, so ``allow_digit_strings`` accepts plain decimal digits (no sign, no space).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if allow_digit_strings and isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    return None


def _refuse_constant(name: str):
    raise ValueError(f"the JSON constant {name} is not accepted")


def load_json(raw: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, where: str = "The JSON body") -> Any:
    """A request body parsed with ``parse_json``; HostileInput "<where> is refused: <reason>." otherwise."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise HostileInput(f"{where} is not UTF-8 text ({exc.reason}).") from None
    try:
        return parse_json(raw, max_depth=max_depth)
    except HostileInput as refused:
        raise HostileInput(f"{where} is refused: {refused.message.rstrip('.')}.") from None


def parse_json(raw: str, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False) -> Any:
    """JSON with the checks above applied to every key and string; HostileInput with a short reason
    ("invalid JSON (Expecting value at character 0)", "the JSON is nested more than 20 levels deep",
    "a text in the JSON contains a NUL character ...") otherwise.

    The parser's own recursion bound stops a body nested 100,000 deep at once; the nesting of what
    parsed is then measured without recursion. ``allow_nan`` accepts NaN and Infinity (published
    files use NaN for missing entries; request bodies may not: PostgreSQL's JSON has no such values).
    """
    too_deep = f"the JSON is nested more than {max_depth} levels deep"
    try:
        value = json.loads(raw) if allow_nan else json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise HostileInput(too_deep) from None
    except json.JSONDecodeError as exc:
        raise HostileInput(f"invalid JSON ({exc.msg} at character {exc.pos})") from None
    except ValueError as exc:
        raise HostileInput(f"invalid JSON ({exc})") from None
    if json_depth(value) > max_depth:
        raise HostileInput(too_deep)
    check_json_strings(value, where="the JSON")
    return value


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed JSON value (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            stack.extend((inner, level + 1) for inner in (item.values() if isinstance(item, dict) else item))
    return deepest


def check_json_strings(value: Any, *, where: str) -> None:
    """Every key and string of a parsed JSON value passes ``text_problem`` (iterative walk)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, where=f"a text in {where}")
        elif isinstance(item, dict):
            for key, inner in item.items():
                check_text(key, where=f"a key in {where}")
                stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)
