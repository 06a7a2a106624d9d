"""Typed settings: a value a person wrote (``--set``, ``papermill -p``, a profile file, JSON, a
keyword) read as its declared type (:func:`coerce`), and declared types with their ranges as
pydantic types (:func:`typed`), checked in one line that names the setting (:func:`check`)."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal, get_args, get_origin

TRUE_WORDS = ("true", "yes", "1")
FALSE_WORDS = ("false", "no", "0")


def _finite(x: int | float) -> bool:
    """A finite number that a float can hold (a 400-digit integer cannot)."""
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


def _text_int(text: str) -> int:
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError("must be an integer") from None
    if d.is_finite() and d.adjusted() >= 18:  # before d is expanded: 1e999999999 would take minutes
        raise ValueError("must be an integer below 10**18")
    if not d.is_finite() or d != d.to_integral_value():
        raise ValueError("must be an integer (a fraction is not rounded)")
    return int(d)


def _as(value: Any, tp: type) -> Any:
    """``value`` as ``tp`` (see :func:`coerce`), or a ``ValueError`` saying what it must be."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()  # a numpy scalar counts as the Python type it holds
    text = value.strip() if isinstance(value, str) else None
    if tp is bool:
        if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
            return bool(value)
        if text is not None and text.lower() in TRUE_WORDS + FALSE_WORDS:
            return text.lower() in TRUE_WORDS
        raise ValueError("must be a boolean: true/false, yes/no or 1/0 (any case)")
    if tp is int:
        if isinstance(value, bool):
            raise ValueError("must be an integer, not a boolean")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if text is not None:
            return _text_int(text)
        raise ValueError("must be an integer" + (" (a fraction is not rounded)" if isinstance(value, float) else ""))
    if tp is float:
        if isinstance(value, bool):
            raise ValueError("must be a number, not a boolean")
        out = value
        if text is not None:
            try:
                out = int(text) if text.lstrip("+-").isdigit() else float(text)
            except ValueError:
                raise ValueError("must be a number") from None
        if not isinstance(out, (int, float)):
            raise ValueError("must be a number")
        if not _finite(out):
            raise ValueError("must be a finite number")
        # the one value equal numbers share: a float (-0.0 as 0.0), or an int no float holds
        return out if isinstance(out, int) and float(out) != out else float(out) + 0.0
    if tp is str:
        if text is None:
            raise ValueError("must be text")
        if len(text) >= 2 and text[0] == text[-1] == '"':  # a JSON string literal, unquoted
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            if isinstance(decoded, str):
                return decoded
        return text
    raise TypeError(f"no rule for type {tp!r}")


def coerce(value: Any, tp: type, name: str | None = None) -> Any:
    """``value`` as the declared type ``tp``, or a ``ValueError`` (naming ``name`` where given).

    A value already of type ``tp`` is returned unchanged (so configs keep their hashes); numpy
    scalars count as the Python type they hold.

    * ``bool``: bools, 0/1, and true/false, yes/no, 1/0 in any case.
    * ``int``: an int (not a bool), or text/float that is exactly integral (``"1e1"`` is 10;
      ``"4.5"``, ``nan``, ``inf`` are refused). Text is read as an exact decimal.
    * ``float``: any finite non-bool number as a float; ``-0.0`` becomes ``0.0`` so equal numbers
      give one hash (an int no float holds exactly stays an int).
    * ``str``: text, stripped, with a JSON string literal (``'"batch"'``) unquoted.
    """
    try:
        return _as(value, tp)
    except ValueError as exc:
        raise ValueError(f"{name} = {value!r}: {exc}" if name else str(exc)) from None


def scalar_type(hint: Any) -> type:
    """The type :func:`coerce` reads a declared type as: ``Literal["a", "b"]`` as ``str``."""
    return type(get_args(hint)[0]) if get_origin(hint) is Literal else hint


def typed(tp: Any, **constraints: Any) -> Any:
    """The pydantic type of a setting: ``tp`` (bool, int, float, str or a ``Literal``), a value
    read as it by :func:`coerce`, then within ``constraints`` (``pydantic.Field``'s: ``ge``, ``gt``,
    ``le``, ``lt``)."""
    from pydantic import BeforeValidator, Field

    base = scalar_type(tp)
    return Annotated[tp, BeforeValidator(lambda v: _as(v, base)), Field(**constraints)]


_ADAPTERS: dict[int, Any] = {}


def check(tp: Any, value: Any, name: str) -> Any:
    """``value`` validated as the pydantic type ``tp`` (strictly: a list is a list, never text or an
    array), or a ``ValueError`` in one line naming ``name`` (an item as ``name[i]``) and the rule."""
    from pydantic import ConfigDict, TypeAdapter, ValidationError

    adapter = _ADAPTERS.get(id(tp))
    if adapter is None:
        adapter = _ADAPTERS[id(tp)] = (tp, TypeAdapter(tp, config=ConfigDict(strict=True)))
    try:
        return adapter[1].validate_python(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = name + "".join(f"[{i}]" for i in err["loc"] if isinstance(i, int))
        what = value if where == name else err["input"]
        error = err.get("ctx", {}).get("error")
        reason = str(error) if isinstance(error, ValueError) else err["msg"].replace("Input should be", "must be")
        raise ValueError(f"{where} = {what!r}: {reason}") from None


def unknown_name(name: str, known: Iterable[str], what: str, where: str = "") -> ValueError:
    """The error for an unknown ``what`` (a field, a parameter ...) called ``name``
    (``where``: e.g. " of chapter 'x'"), with the closest known names."""
    known = sorted(known)
    close = difflib.get_close_matches(str(name), known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else f"; known: {known}"
    return ValueError(f"unknown {what} {name!r}{where}{hint}")
