"""Progress bars in a log file: slowed to one redraw a minute, or switched by
$SPACY_BIOEL_PROGRESS (spacy_bioel.progress)."""
import io
import sys
import time

import pytest

from spacy_bioel.progress import ENV_VAR, NON_TTY_INTERVAL, progress_bar, quiet_library_bars


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _redraws(monkeypatch, stream, mode=None, n=40):
    if mode is None:
        monkeypatch.delenv(ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(ENV_VAR, mode)
    monkeypatch.setattr(sys, "stderr", stream)
    for _ in progress_bar(range(n), desc="work", file=stream, mininterval=0, miniters=1):
        time.sleep(0.002)
    return stream.getvalue().count("work")


def test_log_file_gets_start_and_end_only(monkeypatch):
    assert _redraws(monkeypatch, io.StringIO()) <= 3  # the first draw, the last, at most one more


def test_terminal_gets_every_redraw(monkeypatch):
    assert _redraws(monkeypatch, _Terminal()) >= 40


def test_environment_forces_bars_on_and_off(monkeypatch):
    assert _redraws(monkeypatch, io.StringIO(), mode="1") >= 40
    assert _redraws(monkeypatch, _Terminal(), mode="0") == 0
    assert _redraws(monkeypatch, _Terminal(), mode="off") == 0


def test_log_file_interval_is_kept_when_larger(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = progress_bar(range(3), mininterval=NON_TTY_INTERVAL * 2, file=io.StringIO())
    assert bar.mininterval == NON_TTY_INTERVAL * 2
    bar.close()


@pytest.mark.parametrize("stream,mode,quiet", [(io.StringIO(), None, True), (_Terminal(), None, False),
                                               (io.StringIO(), "1", False), (_Terminal(), "0", True)])
def test_transformers_bars_follow_ours(monkeypatch, stream, mode, quiet):
    from transformers.utils import logging as hf_logging

    if mode is None:
        monkeypatch.delenv(ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(ENV_VAR, mode)
    monkeypatch.setattr(sys, "stderr", stream)
    hf_logging.enable_progress_bar()
    try:
        quiet_library_bars()
        assert hf_logging.is_progress_bar_enabled() is not quiet
    finally:
        hf_logging.enable_progress_bar()
