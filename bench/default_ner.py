"""The shipped disease NER (issue 72): its training corpus and its shipping.

`merge_corpora` joins DocBins (NCBI Disease and BC5CDR train + dev: test never)
into one training file and returns their fingerprint (each file's SHA-256 and
size, its documents and mentions); `ship` copies the trained NER pipeline into
the package (`spacy_bioel/assets/ner`) with `spacy_bioel.ner.shipped`'s manifest:
each file's checksum, the data fingerprint, the seed and the command.
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Sequence

logger = logging.getLogger(__name__)


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def merge_corpora(inputs: Sequence[Path], output: Path) -> Dict[str, Any]:
    """Write the documents of every DocBin in `inputs` (in order) to `output`;
    return the fingerprint of the inputs and of the output."""
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    merged = DocBin(store_user_data=True)
    files: List[Dict[str, Any]] = []
    for path in inputs:
        docs = list(DocBin().from_disk(path).get_docs(nlp.vocab))
        for doc in docs:
            merged.add(doc)
        files.append({"file": Path(path).as_posix(), "sha256": file_digest(path),
                      "bytes": Path(path).stat().st_size, "documents": len(docs),
                      "mentions": sum(len(doc.ents) for doc in docs)})
        logger.info("%s: %d documents, %d mentions", path, len(docs), files[-1]["mentions"])
    output.parent.mkdir(parents=True, exist_ok=True)
    merged.to_disk(output)
    return {"inputs": files, "output": {"file": output.as_posix(), "sha256": file_digest(output),
                                        "documents": sum(f["documents"] for f in files),
                                        "mentions": sum(f["mentions"] for f in files)}}


def describe(model: Path) -> str:
    """What reads the tokens of the NER pipeline `model`, from its config: the
    in-context encoder (its layers, its runtime) or spaCy's CNN."""
    from spacy.util import load_config

    embed = load_config(model / "config.cfg", interpolate=False)["components"]["tok2vec"]["model"]["embed"]
    inner = embed.get("embed", embed)
    name = inner.get("@architectures", "")
    if name == "spacy-bioel.OnnxTransformerTokens.v1":
        return "the embedded MiniLM fine-tuned in context (configs/ner_default.cfg), served as ONNX,"
    if name == "spacy-bioel.TransformerTokens.v1":
        return f"the embedded MiniLM's first {inner.get('layers') or 'all'} layers read in context"
    return "CNN tok2vec"


def ship(model: Path, target: Path, fingerprint: Dict[str, Any], seed: int,
         command: str) -> Dict[str, Any]:
    """Copy the NER pipeline `model` (tok2vec + ner) into `target` and write its
    manifest (`spacy_bioel.ner.shipped.MANIFEST`). `target` is replaced only when
    it holds a manifest (an earlier shipped NER) or is absent."""
    from spacy_bioel.ner.shipped import MANIFEST, tree_checksums

    if target.exists() and not (target / MANIFEST).is_file():
        raise SystemExit(f"{target} exists and is not a shipped NER (no {MANIFEST}): "
                         "give another folder or move it away")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".staging", dir=target.parent))
    staging.rmdir()  # created empty by this call: copytree wants to create it
    shutil.copytree(model, staging, ignore=shutil.ignore_patterns(MANIFEST))
    meta_path = staging / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    # spaCy's dev scores: the dev sets are training data of the shipped NER, so they say
    # nothing; docs/results/out_of_the_box.md has its test scores
    meta.pop("performance", None)
    meta.update({"name": "disease_ner", "license": "public domain data (NCBI Disease, BC5CDR); "
                 "KB-name features from the Disease Ontology (CC0 1.0)",
                 "description": f"spacy-bioel's shipped disease NER: {describe(model)} with the "
                 "embedded Disease Ontology's KB-name features and one label (Disease), trained "
                 "on NCBI Disease and BC5CDR train + dev"})
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    manifest = {"seed": seed, "command": command, "data": fingerprint,
                "files": tree_checksums(staging)}
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                    encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)  # an earlier shipped NER (its manifest checked above)
    staging.rename(target)
    return manifest


__all__ = ["describe", "file_digest", "merge_corpora", "ship"]
