"""Corpus reader that gives the linker gold mention spans.

Linking is evaluated with gold spans given: each Example's predicted doc has
the reference's tokens and entity spans (labels kept, kb ids removed), so
`nlp.evaluate` and `spacy train` exercise the linker without an NER model.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator, List, Optional

from spacy.language import Language
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.util import registry

from ..errors import BioELError, Errors
from ..datastore.knn import HELD_OUT_KNN


def gold_spans_doc(nlp: Language, reference: Doc) -> Doc:
    """A copy of `reference`'s tokens and entity spans without kb ids."""
    doc = Doc(nlp.vocab, words=[t.text for t in reference],
              spaces=[bool(t.whitespace_) for t in reference])
    doc.user_data.update(reference.user_data)
    doc.ents = [Span(doc, e.start, e.end, label=e.label_) for e in reference.ents]
    return doc


def docbin_files(path: Optional[Path]) -> List[Path]:
    """The DocBins at `path`: the file, or a directory's .spacy files (searched
    recursively, in sorted order, as spaCy's own corpus reader does). E008 when
    there is none."""
    if path is None or not Path(path).exists():
        raise BioELError(Errors.E008.format(path=path))
    files = sorted(Path(path).rglob("*.spacy")) if Path(path).is_dir() else [Path(path)]
    if not files:
        raise BioELError(Errors.E008.format(path=Path(path) / "*.spacy"))
    return files


@registry.readers("spacy-bioel.GoldEntsCorpus.v1")
def create_gold_ents_corpus(path: Optional[Path], limit: int = 0, held_out_knn: bool = False
                            ) -> Callable[[Language], Iterable[Example]]:
    """Read a DocBin written by `python -m spacy_bioel convert` into Examples whose
    predicted docs carry the gold spans (no kb ids).

    path (Optional[Path]): The .spacy file, or a directory whose .spacy files
        (searched recursively, in sorted order) are read one after the other,
        as spaCy's own corpus reader does: e.g. train and dev for a final fit.
    limit (int): Read at most this many docs (0: all).
    held_out_knn (bool): Mark each predicted doc so that a bioel_linker's kNN
        datastore leaves that document's own mentions out when linking it: a
        linker whose datastore holds these documents then links them as it
        would link unseen text (the reranker's training candidates).
    """
    def read(nlp: Language) -> Iterator[Example]:
        files = docbin_files(path)
        references = (doc for file in files for doc in DocBin().from_disk(file).get_docs(nlp.vocab))
        for i, reference in enumerate(references):
            if limit and i >= limit:
                break
            predicted = gold_spans_doc(nlp, reference)
            if held_out_knn:
                predicted.user_data[HELD_OUT_KNN] = True
            yield Example(predicted, reference)
    return read


__all__ = ["create_gold_ents_corpus", "docbin_files", "gold_spans_doc"]
