"""Progress bars that suit both a terminal and a log file.

On a terminal a bar redraws in place, a few times a second (tqdm's default).
When stderr is not a terminal (a log file, `nohup`, CI, `spacy project run`
piped somewhere), every redraw becomes text in the log: an encoding pass wrote
about 120 updates. There the bar is drawn at most once every
`NON_TTY_INTERVAL` seconds (plus its final state), so an hour's job leaves about
60 lines. `SPACY_BIOEL_PROGRESS` overrides the choice: `0` (or `off`) hides every
bar, `1` (or `on`) draws them as on a terminal, `auto` (the default) decides by
stderr. A caller's own `disable=True` always wins.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Optional

ENV_VAR = "SPACY_BIOEL_PROGRESS"
NON_TTY_INTERVAL = 60.0  # seconds between redraws in a log file


def progress_mode() -> str:
    """`off`, `on` or `auto`, from $SPACY_BIOEL_PROGRESS (anything else: auto)."""
    value = os.environ.get(ENV_VAR, "auto").strip().lower()
    if value in ("0", "off", "false", "no"):
        return "off"
    if value in ("1", "on", "true", "yes"):
        return "on"
    return "auto"


def stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def progress_bar(iterable: Optional[Iterable] = None, *, disable: bool = False, **kwargs: Any):
    """A `tqdm` bar with the redraw rate of its destination (module docstring).
    Takes tqdm's arguments; RETURNS the tqdm instance (iterate it, or use
    `update` / as a context manager)."""
    from tqdm import tqdm

    mode = progress_mode()
    if mode == "off":
        disable = True
    elif mode == "auto" and not stderr_is_terminal():
        kwargs["mininterval"] = max(float(kwargs.get("mininterval", 0.1)), NON_TTY_INTERVAL)
        kwargs["maxinterval"] = max(float(kwargs.get("maxinterval", 10.0)), NON_TTY_INTERVAL)
    return tqdm(iterable, disable=disable, **kwargs)


def quiet_library_bars() -> None:
    """Hide the bars of Hugging Face libraries (transformers' "Loading weights")
    where ours are hidden or slowed: `off`, or `auto` without a terminal."""
    mode = progress_mode()
    if mode == "on" or (mode == "auto" and stderr_is_terminal()):
        return
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # transformers without the switch: its bars stay
        pass


__all__ = ["progress_bar", "progress_mode", "quiet_library_bars", "ENV_VAR", "NON_TTY_INTERVAL"]
