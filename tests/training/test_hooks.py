"""Training hooks: the one way a method joins the linker's training. A hook's
step replaces the plain step for the batch (its loss terms reported), the next
hook or the plain step runs when it declines, and every hook hears each epoch end."""
from thinc.api import Adam

from spacy_bioel.training.hooks import TrainingHook
from spacy_bioel.training.methods import training_hooks

from ..pipeline.test_training_options import build


class Recorder(TrainingHook):
    def __init__(self, take: bool) -> None:
        self.take, self.steps, self.epochs = take, 0, []

    def step(self, linker, batch):
        self.steps += 1
        return (1.5, {"x": 0.5}) if self.take else None

    def epoch_end(self, linker, epoch, steps):
        self.epochs.append((epoch, steps))


def test_a_hook_takes_the_step_and_hears_epoch_ends(tiny_bert_dir):
    nlp, linker, train = build(tiny_bert_dir)
    declines, takes, never = Recorder(False), Recorder(True), Recorder(True)
    linker.hooks = [declines, takes, never]
    optimizer = Adam(1e-3)
    for _ in range(2):  # two epochs of one batch each
        losses = {}
        nlp.update(train, sgd=optimizer, losses=losses)
    assert losses["bioel_linker"] == 1.5 and losses["bioel_linker_Lx"] == 0.5
    assert (declines.steps, takes.steps, never.steps) == (2, 2, 0)  # the first that takes wins
    assert takes.epochs == never.epochs == [(1, 1), (2, 2)]


def test_without_a_hook_the_plain_step_runs(tiny_bert_dir):
    nlp, linker, train = build(tiny_bert_dir)
    assert linker.hooks == []
    losses = {}
    nlp.update(train, sgd=Adam(1e-3), losses=losses)
    assert losses["bioel_linker"] > 0 and set(losses) == {"bioel_linker"}


def test_the_config_brings_its_hooks():
    step = TrainingHook()

    class StepLoss:  # a loss that brings its own step (as GraphPrompt's does)
        def hook(self):
            return step

    biofeg = TrainingHook()
    assert training_hooks(StepLoss(), biofeg) == [step, biofeg]
    assert training_hooks(object(), None) == []
    from spacy.util import registry

    loss = registry.resolve({"loss": {"@misc": "spacy-bioel.GraphPromptLoss.v1"}})["loss"]
    assert [type(h).__name__ for h in training_hooks(loss, None)] == ["GraphPromptHook"]
    assert loss._module is None  # known without building the torch module
