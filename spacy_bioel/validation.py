"""Checking setting values where they enter: stage constructors, `set_params`,
`--set` and override strings. Each check returns the value in its type or
raises E175, which names the setting, the value and the range it must lie in
(a string 'flase' is not a boolean; a 0 batch size is not a batch size)."""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from .errors import BioELError, Errors

# Upper bounds that keep a pipeline usable on any machine (a setting above them
# hangs or exhausts memory rather than doing more of what was asked).
MAX_THREADS = 256
MAX_BATCH = 65536
MAX_TOP_K = 10000
MAX_TOKENS = 8192  # no encoder we load takes longer inputs
MIN_TOKENS = 4  # [CLS], a word piece, [SEP] and room for one more: shorter cannot encode a name
# softmax temperatures: scores are cosines in [-1, 1]; below 1e-4 exp(score / beta)
# overflows float64, above 1e4 every candidate gets the same probability
MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-4, 1e4

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _fail(name: str, value: Any, expected: str) -> BioELError:
    return BioELError(Errors.E175.format(name=name, value=repr(value)[:80], expected=expected))


def as_bool(name: str, value: Any) -> bool:
    """A bool, or one of true/false/1/0/yes/no/on/off."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise _fail(name, value, "true or false")


def as_int(name: str, value: Any, minimum: Optional[int] = None,
           maximum: Optional[int] = None) -> int:
    """An integer in [minimum, maximum] (an integral float or a numeric string is accepted)."""
    number = _finite(value)
    if number is None or int(number) != number or (minimum is not None and number < minimum) \
            or (maximum is not None and number > maximum):
        raise _fail(name, value, _range("an integer", minimum, maximum))
    return int(number)


def as_float(name: str, value: Any, minimum: Optional[float] = None,
             maximum: Optional[float] = None, *, exclusive_minimum: bool = False) -> float:
    """A finite number in [minimum, maximum] ((minimum, maximum] when exclusive_minimum)."""
    number = _finite(value)
    if number is None or (minimum is not None and (
            number < minimum or (exclusive_minimum and number == minimum))) or \
            (maximum is not None and number > maximum):
        raise _fail(name, value, _range("a number", minimum, maximum, exclusive_minimum))
    return number


def _finite(value: Any) -> Optional[float]:
    """A finite number from a number or a numeric string (not a bool); else None."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def as_optional_name(name: str, value: Any, what: str) -> Optional[str]:
    """None, or a non-empty string (`what` says what it names)."""
    if value is None or (isinstance(value, str) and value.strip()):
        return value
    raise _fail(name, value, f"null or {what}")


def as_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """One of `choices`, exactly (a typo such as 'nill' is an error, not a guess)."""
    if not isinstance(value, str) or value not in choices:
        raise _fail(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def _range(kind: str, minimum: Any, maximum: Any, exclusive_minimum: bool = False) -> str:
    if minimum is not None and maximum is not None:
        return f"{kind} in {'(' if exclusive_minimum else '['}{minimum}, {maximum}]"
    if minimum is not None:
        return f"{kind} {'>' if exclusive_minimum else '>='} {minimum}"
    if maximum is not None:
        return f"{kind} <= {maximum}"
    return kind


__all__ = ["as_bool", "as_int", "as_float", "as_choice", "as_optional_name", "MAX_THREADS", "MAX_BATCH", "MAX_TOP_K",
           "MAX_TOKENS", "MIN_TOKENS", "MIN_TEMPERATURE", "MAX_TEMPERATURE"]
