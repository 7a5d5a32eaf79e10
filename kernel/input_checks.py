"""The one set of checks every piece of outside text passes: request bodies, query strings, form
fields, worker answers and imported files.

Text that a database or a later reader cannot take is refused here, before it reaches a model:
NUL (PostgreSQL refuses it in text columns), lone surrogates (not encodable as UTF-8), other C0/C1
control characters (tab, newline and carriage return are fine where text may span lines), and
Unicode non-characters. Text made only of white space and invisible format characters (zero-width
spaces, word joiners, byte-order marks) counts as empty. JSON is refused when nested deeper than
a small bound, when it uses the non-standard constants NaN and Infinity, or when a number is written
with more than a few dozen characters (Python refuses to read an integer of more than 4,300 digits,
and a float such as 1e999 reads as infinity).

No Django import: the middleware, the task types and the file readers all call these functions.
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

from .errors import ServiceError

# Deep enough for every payload the platform takes (the deepest is a list of objects in an object).
MAX_JSON_DEPTH = 20
LINE_BREAKS = "\t\n\r"
# Longest number literal read from JSON: more than any id, count or measurement needs.
MAX_JSON_NUMBER_CHARS = 50

# C0 and C1 controls, lone surrogates and the non-characters U+FFFE / U+FFFF.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_FORBIDDEN_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


class HostileInput(ServiceError):
    """The request contains input that is not accepted."""

    status_code = 400

    def __init__(self, message: str = "", *, field: str | None = None):
        super().__init__(message)
        # For JSON objects: the top-level member the problem is in, when known (files name it).
        self.field = field


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


class _RefusedNumber:
    """Stands for a number literal that ``parse_json`` refuses, until its place is known."""

    def __init__(self, reason: str):
        self.reason = reason


def _number_readers(allow_nan: bool):
    def read_int(literal: str):
        if len(literal) > MAX_JSON_NUMBER_CHARS:
            return _RefusedNumber(f"has more than {MAX_JSON_NUMBER_CHARS} characters")
        return int(literal)

    def read_float(literal: str):
        if len(literal) > MAX_JSON_NUMBER_CHARS:
            return _RefusedNumber(f"has more than {MAX_JSON_NUMBER_CHARS} characters")
        value = float(literal)
        if not allow_nan and not math.isfinite(value):
            return _RefusedNumber(f"is too large ({literal})")
        return value

    return read_int, read_float


def parse_json(raw: str, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False) -> Any:
    """JSON with the checks above applied to every key, string and number; HostileInput with a short
    reason ("invalid JSON (Expecting value at character 0)", "the JSON is nested more than 20 levels
    deep", "a text in the JSON contains a NUL character ...", "a number in the JSON has more than 50
    characters") otherwise. When the JSON is an object, the refusal's ``field`` names the top-level
    member at fault, so that files can name the field.

    The parser's own recursion bound stops a body nested 100,000 deep at once; the nesting of what
    parsed is then measured without recursion. ``allow_nan`` accepts NaN and Infinity (published
    files use NaN for missing entries; request bodies may not: PostgreSQL's JSON has no such values).
    """
    too_deep = f"the JSON is nested more than {max_depth} levels deep"
    read_int, read_float = _number_readers(allow_nan)
    options = {"parse_int": read_int, "parse_float": read_float}
    if not allow_nan:
        options["parse_constant"] = _refuse_constant
    try:
        value = json.loads(raw, **options)
    except RecursionError:
        raise HostileInput(too_deep, field=_member_nested_too_deep(raw, max_depth)) from None
    except json.JSONDecodeError as exc:
        raise HostileInput(f"invalid JSON ({exc.msg} at character {exc.pos})") from None
    except ValueError as exc:
        raise HostileInput(f"invalid JSON ({exc})") from None
    members = list(value.items()) if isinstance(value, dict) else [(None, value)]
    for name, member in members:
        if json_depth(member) > max_depth - (name is not None):
            raise HostileInput(too_deep, field=name)
    for name, member in members:
        if name is not None:
            check_text(name, where="a key in the JSON")
        try:
            check_json_strings(member, where="the JSON")
        except HostileInput as refused:
            raise HostileInput(refused.message, field=name) from None
    return value


def _member_nested_too_deep(raw: str, max_depth: int) -> str | None:
    """The top-level member of the JSON object ``raw`` in which nesting first passes ``max_depth``
    (one pass over the text, strings skipped); None when ``raw`` is no object or none does."""
    depth, member, last_string, index = 0, None, None, 0
    while index < len(raw):
        char = raw[index]
        if char == '"':
            end = index + 1
            while end < len(raw) and raw[end] != '"':
                end += 2 if raw[end] == "\\" else 1
            last_string, index = raw[index:end + 1], end + 1
            continue
        if char == ":" and depth == 1:
            try:
                member = json.loads(last_string)
            except (TypeError, ValueError):
                member = None
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return member if raw.lstrip().startswith("{") and isinstance(member, str) else None
        elif char in "]}":
            depth -= 1
        index += 1
    return None


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
    """Every key and string of a parsed JSON value passes ``text_problem``, and no number was refused
    by ``parse_json``'s readers (iterative walk)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _RefusedNumber):
            raise HostileInput(f"a number in {where} {item.reason}.")
        if isinstance(item, str):
            check_text(item, where=f"a text in {where}")
        elif isinstance(item, dict):
            for key, inner in item.items():
                check_text(key, where=f"a key in {where}")
                stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)
