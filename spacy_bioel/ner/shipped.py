"""The disease NER shipped in the package: what the default pipeline finds
mentions with in plain text.

A spaCy pipeline of `tok2vec` and `ner` (one label, `Disease`). Its tok2vec reads
each document in context with the embedded MiniLM's first 3 layers, fine-tuned
under the NER and served as an int8 ONNX graph (`spacy-bioel.OnnxTransformerTokens.v1`:
no PyTorch at prediction), beside the KB-name features of the embedded Disease
Ontology (`spacy-bioel.KBNameEmbed.v1`). It was trained on the disease mentions of
NCBI Disease (Dogan et al. 2014) and BC5CDR (Li et al. 2016), train and dev of
both, with seed 0 (`spacy project run build-default-ner`, configs/ner_default.cfg;
the choice against spaCy's CNN is in docs/results/e2e.md). It lives in
`spacy_bioel/assets/ner` with a manifest (`MANIFEST`): each file's SHA-256, the
fingerprint of the data it was trained on, the seed and the command.
`load_ner` checks the files against the manifest before spaCy reads them (E254
for a file that differs or is missing), so what loads is what was built.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, Optional, Union

from .. import assets
from ..assets import MANIFEST

logger = logging.getLogger(__name__)

ASSET = Path(__file__).resolve().parent.parent / "assets" / "ner"
LABEL = "Disease"


WHAT, COMMAND = "disease NER", "build-default-ner"


def tree_checksums(folder: Union[str, Path]) -> Dict[str, str]:
    """{relative posix path: SHA-256} of every file under `folder` but the manifest."""
    return assets.tree_checksums(folder)


def digest(folder: Union[str, Path] = ASSET) -> str:
    """One SHA-256 over every file's checksum (what a test pins, and the default
    pipeline's cache key reads)."""
    return assets.digest(folder)


def manifest(folder: Union[str, Path] = ASSET) -> Dict[str, Any]:
    """The shipped NER's manifest (E254 when it is missing or not JSON)."""
    return assets.manifest(folder, WHAT, COMMAND)


def verify(folder: Union[str, Path] = ASSET) -> Dict[str, Any]:
    """Check every file of the NER in `folder` against its manifest; return the
    manifest. E254 names the first file that is missing, added or changed."""
    return assets.verify(folder, WHAT, COMMAND)


def load_ner(folder: Union[str, Path] = ASSET, vocab: Optional[Any] = None):
    """The shipped NER pipeline (`tok2vec`, `ner`), checked against its manifest.

    vocab: a spaCy Vocab to share (e.g. the linker pipeline's), or None.

    Example:
        >>> ner = load_ner()
        >>> [e.text for e in ner("Carriers of FAP develop colon cancer.").ents]
    """
    import spacy

    verify(folder)
    kwargs = {"vocab": vocab} if vocab is not None else {}
    return spacy.load(folder, **kwargs)


__all__ = ["ASSET", "LABEL", "MANIFEST", "digest", "load_ner", "manifest", "tree_checksums", "verify"]
