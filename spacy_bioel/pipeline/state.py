"""What a linker knows besides its weights and its stages, in one object: the
KB, the name index (names and their embeddings), each concept's position in
it, the kNN datastore and the training mentions it holds, and whether the
embeddings are stale.

The component owns one `LinkerState`; the prediction path (`linking.Decider`)
reads it, training and `refresh` change it. It never imports the component.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..datastore.knn import DatastoreKNN, document_key
from ..errors import BioELError, Errors
from ..index.name_index import NameIndex
from ..index.names import NameTable
from ..kb.knowledge_base import KnowledgeBase
from .mentions import gold_mentions

if TYPE_CHECKING:
    from spacy.training import Example

Encode = Callable[[List[str]], np.ndarray]


class LinkerState:
    """index (NameIndex): The name index stage (replaced with `set_stage`).

    kb (Optional[KnowledgeBase]): The KB, None before `initialize`.
    concept_index (Dict[str, int]): Primary concept id -> its position in the index.
    datastore (Optional[DatastoreKNN]): The kNN datastore over `train_mentions`.
    datastore_stale (bool): The mention tower changed since the datastore was encoded.
    train_mentions (List[Tuple[str, str]]): (mention input, gold concept id) of its keys.
    train_docs (List[int]): Their document keys (a held-out document skips its
        own), or empty.
    """

    def __init__(self, index: NameIndex) -> None:
        self.index = index
        self.kb: Optional[KnowledgeBase] = None
        self.concept_index: Dict[str, int] = {}
        self.datastore: Optional[DatastoreKNN] = None
        self.datastore_stale = True
        self.train_mentions: List[Tuple[str, str]] = []
        self.train_docs: List[int] = []
        self.checked_spaces: Set[str] = set()  # id spaces the KB has ids in (`check_space`)

    def set_kb(self, kb: KnowledgeBase, names: Optional[NameTable] = None) -> None:
        """Use `kb`: its names go to the index (encoded by the next refresh); E105
        when no name can be indexed. `names`: `kb`'s table as saved with the
        pipeline (`NameTable.load`), instead of building it."""
        names = names if names is not None else NameTable(kb)
        if not names.concept_ids:
            raise BioELError(Errors.E105)
        self.kb = kb
        self.concept_index = {cid: i for i, cid in enumerate(names.concept_ids)}
        self.index.set_names(names)
        self.datastore_stale = True
        self.checked_spaces = set()

    def check_space(self, space: Optional[str]) -> None:
        """E261 when `space` (a linker's `id_space`) names a vocabulary that no
        concept of the KB has an id in (`kb.xrefs.check_space`); once per KB and space."""
        if not space or self.kb is None or space in self.checked_spaces:
            return
        from ..kb.xrefs import check_space

        check_space(self.kb, space)
        self.checked_spaces.add(space)

    def resolve(self, concept_id: str) -> Optional[int]:
        """RETURNS (Optional[int]): the index position of a primary or alternate id."""
        primary = self.kb.resolve(concept_id) if self.kb is not None else None
        return self.concept_index.get(primary) if primary is not None else None

    def set_train_mentions(self, mentions: Iterable[Tuple]) -> None:
        """(mention input, gold concept id) pairs, or (mention input, gold concept
        id, document key) triples that also set `train_docs`."""
        rows = [tuple(m) for m in mentions]
        self.train_mentions = [(m[0], m[1]) for m in rows]
        self.train_docs = [m[2] for m in rows] if rows and all(len(m) == 3 for m in rows) else []

    def mention_rows(self) -> list:
        """(mention, concept id[, document key]) rows, as saved."""
        if self.train_docs:
            return [(t, c, k) for (t, c), k in zip(self.train_mentions, self.train_docs)]
        return self.train_mentions

    def gold_rows(self, examples: Sequence["Example"], context_window: int,
                  spans_key: Optional[str] = None) -> List[Tuple[str, str, int]]:
        """(mention input, gold concept id, document key) of every linkable gold
        mention of `examples` (the key lets a held-out document skip its own)."""
        keys = [document_key(eg.reference.text) for eg in examples]
        ids = self.index.names.concept_ids
        return [(text, ids[c], keys[i])
                for text, c, i in gold_mentions(examples, self.resolve, context_window, spans_key)]

    def refresh_datastore(self, dim: int, encode: Optional[Encode]) -> None:
        """A new datastore of the training mentions encoded with `encode` (None:
        empty, e.g. a model that reads mentions in context has no text tower)."""
        self.datastore = DatastoreKNN(dim)
        if self.train_mentions and encode is not None:
            self.datastore.add(encode([text for text, _ in self.train_mentions]),
                               [cid for _, cid in self.train_mentions], self.train_docs or None)
        self.datastore_stale = False


__all__ = ["LinkerState"]
