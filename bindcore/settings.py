"""Typed settings: a value a person wrote (``--set``, ``papermill -p``, JSON, a keyword) coerced to
its field's declared type, or a ``ValueError`` naming the field."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

TRUE_WORDS = ("true", "yes", "1")
FALSE_WORDS = ("false", "no", "0")
TYPES = (bool, int, float, str)


def _numpy_scalar(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds (anything else unchanged)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value


def _finite(x: int | float) -> bool:
    """A finite number that a float can hold (a 400-digit integer cannot)."""
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


def _fail(name: str, value: Any, rule: str) -> ValueError:
    return ValueError(f"{name} = {value!r}: {rule}")


def _text_int(name: str, text: str) -> int:
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise _fail(name, text, "must be an integer") from None
    if d.is_finite() and d.adjusted() >= 18:  # before d is expanded: 1e999999999 would take minutes
        raise _fail(name, text, "must be an integer below 10**18")
    if not d.is_finite() or d != d.to_integral_value():
        raise _fail(name, text, "must be an integer (a fraction is not rounded)")
    return int(d)


def _canonical_float(x: int | float) -> int | float:
    """The one value equal numbers share: a float (``-0.0`` as ``0.0``), or an int no float holds."""
    if isinstance(x, int) and float(x) != x:
        return x
    return float(x) + 0.0  # + 0.0 turns -0.0 into 0.0


def coerce(value: Any, tp: type, name: str) -> Any:
    """``value`` as the declared type ``tp``, or a ``ValueError`` naming ``name``.

    A value already of type ``tp`` is returned unchanged (so configs keep their hashes); numpy
    scalars count as the Python type they hold.

    * ``bool``: bools, 0/1, and true/false, yes/no, 1/0 in any case.
    * ``int``: an int (not a bool), or text/float that is exactly integral (``"1e1"`` is 10;
      ``"4.5"``, ``nan``, ``inf`` are refused). Text is read as an exact decimal.
    * ``float``: any finite non-bool number as a float; ``-0.0`` becomes ``0.0`` so equal numbers
      give one hash (an int no float holds exactly stays an int).
    * ``str``: text, stripped, with a JSON string literal (``'"batch"'``) unquoted.
    """
    if tp not in TYPES:
        raise TypeError(f"{name}: no rule for type {tp!r}")
    v = _numpy_scalar(value)
    text = v if isinstance(v, str) else None
    if tp is bool:
        if isinstance(v, bool):
            return v
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        if text is not None and text.strip().lower() in TRUE_WORDS + FALSE_WORDS:
            return text.strip().lower() in TRUE_WORDS
        raise _fail(name, value, "must be a boolean: true/false, yes/no or 1/0 (any case)")
    if tp is int:
        if isinstance(v, bool):
            raise _fail(name, value, "must be an integer, not a boolean")
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            if math.isfinite(v) and v.is_integer():
                return int(v)
            raise _fail(name, value, "must be an integer (a fraction is not rounded)")
        if text is not None:
            return _text_int(name, text)
        raise _fail(name, value, "must be an integer")
    if tp is float:
        if isinstance(v, bool):
            raise _fail(name, value, "must be a number, not a boolean")
        if isinstance(v, (int, float)):
            out = v
        elif text is not None:
            s = text.strip()
            try:
                out = int(s) if s.lstrip("+-").isdigit() else float(s)
            except ValueError:
                raise _fail(name, value, "must be a number") from None
        else:
            raise _fail(name, value, "must be a number")
        if not _finite(out):
            raise _fail(name, value, "must be a finite number")
        return _canonical_float(out)
    # str
    if text is None:
        raise _fail(name, value, "must be text")
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        try:
            decoded = json.loads(s)
        except ValueError:
            decoded = None
        if isinstance(decoded, str):
            s = decoded
    return s


def check_type(value: Any, tp: type, name: str) -> None:
    """A ``ValueError`` naming ``name`` unless ``value`` is already of type ``tp`` (an
    int counts as a float; a bool as neither; a float must be finite)."""
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    if not ok:
        raise _fail(name, value, f"must be {'a finite number' if tp is float else 'of type ' + tp.__name__}")


def unknown_name(name: str, known: Iterable[str], what: str, where: str = "") -> ValueError:
    """The error for an unknown ``what`` (a field, a parameter ...) called ``name``
    (``where``: e.g. " of chapter 'x'"), with the closest known names."""
    known = sorted(known)
    close = difflib.get_close_matches(str(name), known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else f"; known: {known}"
    return ValueError(f"unknown {what} {name!r}{where}{hint}")


@dataclass(frozen=True)
class Rule:
    """A setting's declared type and range.

    ``type``: bool, int, float, str, or list (``item``: each item's rule; ``min_items``..``max_items``:
    its length). ``low``..``high`` is inclusive unless ``open_low``/``open_high``; None is unbounded.
    ``optional``: None allowed. ``note`` is added to the message.
    """

    type: type
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] | None = None
    optional: bool = False
    item: Rule | None = None
    min_items: int = 1
    max_items: int | None = None
    open_low: bool = False
    open_high: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        if (self.type is list) != (self.item is not None):
            raise TypeError("a list rule needs an item rule, and only a list rule has one")

    def describe(self) -> str:
        """The rule in words, e.g. ``an int >= 1`` or ``a list of 1+ items, each a number > 0``."""
        if self.type is list:
            n = (f"{self.min_items}" if self.max_items == self.min_items
                 else f"{self.min_items}..{self.max_items}" if self.max_items is not None else f"{self.min_items}+")
            core = f"a list of {n} item(s), each {self.item.describe()}"
        elif self.choices is not None:
            core = f"one of {list(self.choices)}"
        else:
            core = {bool: "a boolean", int: "an integer", float: "a number", str: "text"}[self.type]
            if self.low is not None and self.high is not None and not (self.open_low or self.open_high):
                core += f" in {self.low:g}..{self.high:g}"
            else:
                lo = None if self.low is None else f"{'>' if self.open_low else '>='} {self.low:g}"
                hi = None if self.high is None else f"{'<' if self.open_high else '<='} {self.high:g}"
                core += " " + " and ".join(b for b in (lo, hi) if b) if (lo or hi) else ""
        if self.optional:
            core += ", or None"
        return core + (f" ({self.note})" if self.note else "")

    def check(self, value: Any, name: str) -> Any:
        """``value`` coerced to this rule (a list item by item; a value that already follows it is
        returned as is), or a ``ValueError`` naming ``name`` and the rule."""
        if value is None:
            if self.optional:
                return None
            raise _fail(name, value, f"must be {self.describe()}")
        if self.type is list:
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                hint = " (papermill passes a list with -y 'name: [...]'; -p gives text)" if isinstance(value, str) else ""
                raise _fail(name, value, f"must be {self.describe()}{hint}")
            n = len(value)
            if n < self.min_items or (self.max_items is not None and n > self.max_items):
                raise _fail(name, value, f"must be {self.describe()}")
            out = [self.item.check(v, f"{name}[{i}]") for i, v in enumerate(value)]
            if all(a is b for a, b in zip(out, value)):
                return value
            return type(value)(out) if isinstance(value, tuple) else out
        if isinstance(value, (list, tuple, dict, set)):
            raise _fail(name, value, f"must be {self.describe()}")
        v = coerce(value, self.type, name)
        bad = ((self.choices is not None and v not in self.choices)
               or (self.low is not None and (v < self.low or (self.open_low and v == self.low)))
               or (self.high is not None and (v > self.high or (self.open_high and v == self.high))))
        if bad:
            raise _fail(name, value, f"must be {self.describe()}")
        return v
