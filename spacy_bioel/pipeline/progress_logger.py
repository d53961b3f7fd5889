"""`spacy-bioel.ProgressLogger.v1`: spaCy's console logger (its table row at each
evaluation) plus a progress line between evaluations, so that `spacy train` is
not silent for the minutes an epoch and an index refresh take.

Every `every_seconds` (checked after each optimizer step) it prints, for each
component that trains and keeps a training state (a bioel_linker, a
bioel_reranker; frozen ones are left out): the step, the epoch and the share of its training
mentions seen, the mean loss since the last line, steps per second, and the
time left to the next evaluation and to the end of training (`max_steps`, or
`max_epochs` from the pace of the current epoch), with the evaluations still
to come at the length the last one took (it re-encodes the name index: minutes
on a CPU). With `patience`, training may stop earlier: the end is "at most".

Example line:
    bioel_linker: step 340 | epoch 2, 62% of 5,134 mentions | loss 0.412 (last 57 steps) |
    1.8 steps/s | next evaluation (step 400) in 33 s | end in at most 12 min (evaluations 95 s each)
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy.util import registry

LogStep = Callable[[Optional[Dict[str, Any]]], None]


def duration(seconds: float) -> str:
    """'45 s', '12 min', '2.3 h'."""
    if seconds < 90:
        return f"{max(0, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class TrainingProgress:
    """The progress line of one training run, from the training state of its
    components (`steps`, `epoch_size`, `epoch_seconds`: a linker's, a reranker's).

    every_seconds (float): Seconds between lines (0: after every step).
    eval_frequency, max_steps, max_epochs, patience: the [training] settings.
    clock: Seconds, monotonic (a test's fake clock).
    """

    def __init__(self, every_seconds: float, eval_frequency: int, max_steps: int,
                 max_epochs: int, patience: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every = float(every_seconds)
        self.eval_frequency = max(1, int(eval_frequency or 1))
        self.max_steps, self.max_epochs, self.patience = int(max_steps), int(max_epochs), int(patience)
        self.clock = clock
        self.last_line = self.last_call = clock()
        self.eval_seconds: Optional[float] = None
        self.step_seconds: List[float] = []  # the last steps' durations, evaluations excluded

    def _typical_step(self) -> float:
        """The median length of the last plain steps (0 before the first)."""
        ordered = sorted(self.step_seconds)
        return ordered[len(ordered) // 2] if ordered else 0.0

    def evaluated(self) -> None:
        """An evaluation step ended now: its length, less a plain step's, is the
        evaluation's (the index refresh and the dev scoring)."""
        now = self.clock()
        self.eval_seconds = max(0.0, now - self.last_call - self._typical_step())
        self.last_call = now

    def stepped(self, linkers: List[Tuple[str, Any]]) -> Optional[str]:
        """A plain step ended now. RETURNS: the progress line when one is due, else None."""
        now = self.clock()
        self.step_seconds = (self.step_seconds + [now - self.last_call])[-50:]
        self.last_call = now
        if now - self.last_line < self.every or not linkers:
            return None
        lines = [self._line(name, linker, now) for name, linker in linkers]
        self.last_line = now
        return "\n".join(lines)

    def _line(self, name: str, linker: Any, now: float) -> str:
        state = linker.steps
        step = state.steps
        step_time = self._typical_step()  # evaluations excluded: they are counted apart
        parts = [f"{name}: step {step}"]
        epoch_mentions = linker.epoch_size
        done = len(linker.epoch_seconds)
        fraction = min(1.0, state.seen_in_epoch / epoch_mentions) if epoch_mentions else 0.0
        if epoch_mentions:
            parts.append(f"epoch {done + 1}, {100 * fraction:.0f}% of {epoch_mentions:,} mentions")
        if state.loss_steps:
            parts.append(f"loss {state.loss_sum / state.loss_steps:.4g} (last {state.loss_steps} steps)")
            state.loss_sum, state.loss_steps = 0.0, 0
        evaluation = self.eval_seconds or 0.0
        if step_time > 0:
            rate = 1 / step_time
            parts.append(f"{rate:.2g} steps/s" if rate >= 0.1 else f"{step_time:.0f} s/step")
            next_eval = self.eval_frequency - (step % self.eval_frequency)
            remaining = self._steps_left(step, fraction, done, epoch_mentions, now, state, step_time)
            if remaining is not None and next_eval > remaining:  # e.g. `retrain`: evaluated at the start only
                exact = self.max_steps > 0 and remaining == self.max_steps - step
                parts.append(f"no evaluation before the end ({'' if exact else 'about '}step {step + remaining:,})")
            else:
                parts.append(f"next evaluation (step {step + next_eval}) in {duration(next_eval * step_time)}")
            if remaining is not None:  # the evaluations at the multiples of eval_frequency still to come
                evaluations = (step + remaining) // self.eval_frequency - step // self.eval_frequency
                seconds = remaining * step_time + evaluations * evaluation
                bound = "at most " if self.patience else ""
                note = f" (evaluations {duration(evaluation)} each)" if self.eval_seconds is not None else ""
                parts.append(f"end in {bound}{duration(seconds)}{note}")
        return " | ".join(parts)

    def _steps_left(self, step: int, fraction: float, done: int, epoch_mentions: int,
                    now: float, state: Any, step_time: float) -> Optional[int]:
        """Steps to the end: to max_steps, or to max_epochs at the steps an epoch
        takes (the current epoch's pace once a tenth of it is seen)."""
        left = []
        if self.max_steps > 0:
            left.append(self.max_steps - step)
        if self.max_epochs > 0 and epoch_mentions and (done or fraction >= 0.1):
            steps_in_epoch = ((now - state.epoch_start) / step_time) / fraction if fraction >= 0.1 \
                else step / max(done, 1)
            left.append(int(round((self.max_epochs - done - fraction) * steps_in_epoch)))
        return max(0, min(left)) if left else None


def training_linkers(nlp: Any, frozen: Sequence[str] = ()) -> List[Tuple[str, Any]]:
    """The pipeline's components that keep a training state (`updates.TrainingState`)
    and are not in `frozen` ([training] frozen_components: a reranker's sourced linker)."""
    from .updates import TrainingState

    return [(name, pipe) for name, pipe in nlp.pipeline
            if name not in frozen and isinstance(getattr(pipe, "steps", None), TrainingState)]


@registry.loggers("spacy-bioel.ProgressLogger.v1")
def progress_logger(every_seconds: float = 60.0, console_output: bool = True,
                    output_file: Optional[str] = None):
    """spaCy's ConsoleLogger.v3 table at each evaluation (`console_output`),
    its JSONL in `output_file` flushed at every evaluation (`EvaluationLog`), and
    a progress line every `every_seconds` between evaluations (see the module docstring)."""
    from spacy.training.loggers import console_logger_v3

    table = console_logger_v3(progress_bar=None, console_output=console_output, output_file=None)

    def setup(nlp: Any, stdout: IO = sys.stdout, stderr: IO = sys.stderr) -> Tuple[LogStep, Callable]:
        log_table, finalize_table = table(nlp, stdout, stderr)
        training = nlp.config.get("training", {})
        evaluations = EvaluationLog(output_file, training.get("score_weights") or {}, stdout)

        def setting(key: str) -> int:
            try:
                return int(training.get(key) or 0)
            except (TypeError, ValueError):  # an unresolved reference: not used for the estimate
                return 0

        progress = TrainingProgress(every_seconds, setting("eval_frequency"), setting("max_steps"),
                                    setting("max_epochs"), setting("patience"))
        linkers = training_linkers(nlp, training.get("frozen_components") or ())

        def log_step(info: Optional[Dict[str, Any]]) -> None:
            if info is not None:
                progress.evaluated()
                log_table(info)
                evaluations.write(info)
                return
            line = progress.stepped(linkers)
            if line and console_output:  # the stream spaCy hands its training loggers
                stdout.write(line + "\n")
                stdout.flush()

        def finalize() -> None:
            finalize_table()
            evaluations.close()

        return log_step, finalize

    return setup


class EvaluationLog:
    """The JSONL of spaCy's ConsoleLogger.v3 (`output_file`: per evaluation its
    epoch, step, losses, scores in percent and score), flushed at every line,
    so that a run stopped before its end keeps its curve (spaCy's own writer
    flushes at the end). An existing file is left alone, as spaCy does (said once)."""

    def __init__(self, output_file: Optional[str], score_weights: Dict[str, Any], stdout: IO) -> None:
        self.columns = [column for column, weight in score_weights.items() if weight is not None]
        self.stream: Optional[IO] = None
        if output_file:
            path = Path(output_file)
            if path.exists():
                stdout.write(f"Not saving the evaluations: {path} already exists\n")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.stream = open(path, "w", encoding="utf-8")

    def write(self, info: Dict[str, Any]) -> None:
        if self.stream is None:
            return
        scores = {}
        for column in self.columns:
            value = float(info.get("other_scores", {}).get(column, 0.0) or 0.0)
            scores[column] = value if column == "speed" else 100 * value
        record = {"epoch": info["epoch"], "step": info["step"],
                  "losses": {name: float(value) for name, value in (info.get("losses") or {}).items()},
                  "scores": scores, "score": float(info["score"])}
        self.stream.write(json.dumps(record) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None


__all__ = ["progress_logger", "TrainingProgress", "EvaluationLog", "training_linkers", "duration"]
