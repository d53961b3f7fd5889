"""Corpus augmenters for the NER before a linker (issue 44).

`spacy-bioel.one_label.v1` gives every gold mention one label. NCBI Disease
annotates four mention classes (SpecificDisease, DiseaseClass, Modifier,
CompositeMention); the disease NER literature (TaggerOne, BioBERT, the
BioCreative V CDR task) finds disease mentions of one class, and the linker
needs the span, not the class. The spans, their kb ids and every other
annotation of the reference doc are kept.
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional

from spacy.language import Language
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import registry

Augmenter = Callable[[Language, Example], Iterator[Example]]


def relabel_example(example: Example, label: str) -> Example:
    """A copy of `example` whose reference entities all carry `label`."""
    reference = example.reference.copy()
    reference.set_ents([Span(reference, e.start, e.end, label=label, kb_id=e.kb_id)
                        for e in reference.ents], default="unmodified")
    return Example(example.predicted, reference)


@registry.augmenters("spacy-bioel.one_label.v1")
def create_one_label_augmenter(label: Optional[str] = "Disease") -> Augmenter:
    """Relabel each gold entity with `label` (None: keep the corpus's labels).

    label (Optional[str]): The one label of the NER's mentions.
    """
    def augment(nlp: Language, example: Example) -> Iterator[Example]:
        yield relabel_example(example, label) if label else example
    return augment


__all__ = ["create_one_label_augmenter", "relabel_example"]
