"""The training progress line (`spacy-bioel.ProgressLogger.v1`): due every
`every_seconds`, it reports the step, the epoch's share of the training mentions,
the mean loss since the last line, the pace, and the time to the next evaluation
and to the end, evaluations included at the length the last one took."""
from types import SimpleNamespace

from spacy_bioel.pipeline.updates import TrainingState
from spacy_bioel.pipeline.progress_logger import TrainingProgress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run_steps(progress, linker, clock, n, seconds=0.5, mentions=10, loss=2.0):
    lines = []
    for _ in range(n):
        clock.now += seconds
        state = linker.steps
        state.steps += 1
        state.seen_in_epoch += mentions
        state.loss_sum += loss
        state.loss_steps += 1
        line = progress.stepped([("bioel_linker", linker)])
        if line:
            lines.append((state.steps, line))
    return lines


def test_a_line_is_due_every_interval_and_says_where_training_is():
    clock = Clock()
    # 1,000 training mentions, 10 per step: 100 steps an epoch of 50 s; 2 epochs; evaluation every 100 steps
    linker = SimpleNamespace(steps=TrainingState(epoch_start=0.0, eval_frequency=100),
                             epoch_size=1000, epoch_seconds=[])
    progress = TrainingProgress(10, eval_frequency=100, max_steps=0, max_epochs=2, clock=clock)
    lines = run_steps(progress, linker, clock, 45)
    assert [step for step, _ in lines] == [20, 40]  # every 10 s of 0.5 s steps
    step, line = lines[0]
    assert line.startswith("bioel_linker: step 20 | epoch 1, 20% of 1,000 mentions | loss 2 (last 20 steps)")
    assert "2 steps/s" in line
    assert "next evaluation (step 100) in 40 s" in line
    # 1.8 epochs left at 100 steps an epoch: 180 steps of 0.5 s (90 s), no evaluation measured yet
    assert line.endswith("end in 2 min")
    assert linker.steps.loss_steps == 5  # read and reset at each line: the steps since (41-45)


def test_the_end_counts_the_evaluations_at_the_length_of_the_last():
    clock = Clock()
    linker = SimpleNamespace(steps=TrainingState(epoch_start=0.0, eval_frequency=100),
                             epoch_size=1000, epoch_seconds=[])
    progress = TrainingProgress(10, eval_frequency=100, max_steps=300, max_epochs=0, patience=50,
                                clock=clock)
    run_steps(progress, linker, clock, 99)
    clock.now += 0.5 + 120.0  # step 100, then its evaluation re-encodes the index: 120 s
    linker.steps.steps += 1
    progress.evaluated()
    assert progress.eval_seconds == 120.0
    lines = run_steps(progress, linker, clock, 25, loss=1.0)
    assert [step for step, _ in lines] == [101, 121]  # due at once after the long evaluation step
    step, line = lines[-1]
    assert "loss 1 (last 20 steps) | 2 steps/s" in line  # the pace leaves the evaluation out
    assert "evaluations 2 min each" in line and "end in at most" in line  # patience: at most
    # 300 - 121 = 179 steps of 0.5 s = 89.5 s, and the evaluations at steps 200 and 300: 240 s
    assert "end in at most 5 min" in line


def test_a_run_without_evaluations_left_says_so():
    """`retrain` evaluates once, at step 0 (eval_frequency above max_steps): the line
    names no evaluation that will not come and counts none in the time left."""
    clock = Clock()
    linker = SimpleNamespace(steps=TrainingState(epoch_start=0.0, eval_frequency=100000),
                             epoch_size=1000, epoch_seconds=[])
    progress = TrainingProgress(10, eval_frequency=100000, max_steps=400, max_epochs=0, clock=clock)
    progress.eval_seconds = 600.0  # the evaluation at step 0 took 10 min
    step, line = run_steps(progress, linker, clock, 25)[-1]
    assert step == 20 and "no evaluation before the end (step 400)" in line
    assert "next evaluation" not in line
    assert "end in 3 min" in line  # 380 steps of 0.5 s, no evaluation
    # the end set by max_epochs (2 epochs of 100 steps) before the next evaluation (step 300)
    linker = SimpleNamespace(steps=TrainingState(epoch_start=0.0, eval_frequency=300),
                             epoch_size=1000, epoch_seconds=[])
    clock = Clock()
    progress = TrainingProgress(10, eval_frequency=300, max_steps=0, max_epochs=2, clock=clock)
    step, line = run_steps(progress, linker, clock, 25)[-1]
    assert "no evaluation before the end (about step 200)" in line  # 180 steps of 0.5 s:
    assert "end in 2 min" in line


def test_durations_read_as_a_person_would():
    assert (duration(42.4), duration(600), duration(9000)) == ("42 s", "10 min", "2.5 h")


def test_evaluations_are_saved_as_spacys_jsonl_and_readable_before_the_end(tmp_path):
    """`output_file` gets spaCy's ConsoleLogger.v3 lines (scores in percent), each
    on disk once written: a run stopped before its end keeps its curve; an
    existing file is left alone."""
    import io
    import json

    import spacy

    from spacy_bioel.pipeline.progress_logger import progress_logger

    nlp = spacy.blank("en")
    nlp.config["training"]["score_weights"] = {"bioel_acc@1": 1.0, "bioel_acc@5": 0.0,
                                               "nel_micro_p": None}
    path = tmp_path / "run" / "log.jsonl"
    out = io.StringIO()
    log_step, finalize = progress_logger(every_seconds=0, output_file=str(path))(nlp, out, out)
    info = {"epoch": 0, "step": 40, "losses": {"bioel_linker": 12.5}, "score": 0.81,
            "other_scores": {"bioel_acc@1": 0.81, "bioel_acc@5": 0.93}}
    log_step(info)
    first = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert first == [{"epoch": 0, "step": 40, "losses": {"bioel_linker": 12.5},
                      "scores": {"bioel_acc@1": 81.0, "bioel_acc@5": 93.0}, "score": 0.81}]
    log_step(dict(info, step=80))
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2  # before finalize
    finalize()
    again = io.StringIO()
    log_step, finalize = progress_logger(every_seconds=0, output_file=str(path))(nlp, again, again)
    log_step(info)
    finalize()
    assert "already exists" in again.getvalue()
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
