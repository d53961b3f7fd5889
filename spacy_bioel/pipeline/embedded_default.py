"""The pipeline `link` uses without a trained one, built once per KB and encoder.

Building the untrained pipeline, on the one default (`defaults.py`: the mention
tower exported to ONNX with int8 weights, the int8 name scan, the exact-name
shortcut, 16 candidates), encodes every name of the KB with the base encoder
and exports the tower: tens of seconds to minutes on a CPU. The first call saves the initialised pipeline in
the cache ('auto': $SPACY_BIOEL_CACHE, else $XDG_CACHE_HOME/spacy_bioel or
~/.cache/spacy_bioel, sub-folder `pipelines/KEY`); later calls load it like any
saved pipeline (`loading.load_pipeline`, with its integrity checks), which
imports no PyTorch: ONNX Runtime encodes the mentions.

The shipped disease NER (`ner.shipped`: `tok2vec` and `ner`) comes before the
linker, so plain text links; `ner=False` leaves it out.

KEY digests the KB (`KnowledgeBase.digest`), the shipped NER's files, the encoder's name and files (path,
size and modification time of each), the default config, the shipped
NIL calibration and threshold (saved in an entry's config), the layout of
an entry (`CACHE_LAYOUT`) and this package's version, so another KB, another or
updated encoder, other defaults or an upgrade builds a new entry. An encoder that is not a local folder (a hub
name) is built every time: its files are not ours to digest. Each entry carries a
marker with its key (`outputs.MARKER`): a folder under a key whose marker does not
name that key is never loaded nor deleted (W016; the pipeline is built in memory);
an entry of ours that fails to load is W016 and built again. A read-only cache
(baked into an image) is read; two processes building the same entry each write
their own folder and the first rename wins; a build killed half way leaves a
folder marked with its process, which the next build removes.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any, Dict, Optional, Union

from spacy.language import Language

from ..about import __version__
from ..encoders.common import DEFAULT_ENCODER, resolve_model_path
from ..errors import BioELError, BioELWarning, Errors, Warnings, warn
from ..index.name_index import AUTO_CACHE, cache_folder
from ..kb.knowledge_base import KnowledgeBase
from .. import assets
from ..ner import shipped
from ..nil import stages
from ..outputs import MARKER, read_marker, remove_stale_partials, write_marker, write_partial_marker
from . import served
from .defaults import linker_config
from .loading import load_pipeline, untrained_pipeline

logger = logging.getLogger(__name__)

def fast_config() -> Dict[str, Any]:
    """The linker config the default pipeline is built with: the one default
    (`defaults.linker_config`), nothing changed."""
    return linker_config()


# how an entry is saved: 2 since the ONNX graph's weights lie beside it (runtime
# format 2, mapped on load: a lower peak for the first `link` of an entry);
# 3 since the int8 graph quantises each token row (`onnx_export.scale_rows`: batched calls);
# 4 since an entry carries its key in a marker (entries without one are not loaded);
# 5 since an entry holds the shipped NER before its linker;
# 6 since the NER's mentions pass bioel_mention_consistency
CACHE_LAYOUT = 6


def has_onnx() -> bool:
    """Whether the `onnx` extra (ONNX Runtime and the exporter) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def pipeline_key(kb: Union[KnowledgeBase, str, Path], encoder: str, ner: bool = True) -> Optional[str]:
    """The cache key of the default pipeline on `kb` (a KnowledgeBase, or a KB file
    or handle, digested without building it) and `encoder` (with the shipped NER:
    its files' checksums too; on the shipped tower: its files'), or None when the
    encoder is neither the shipped tower's nor a local folder."""
    digest = hashlib.sha256()
    digest.update(f"{__version__}\n{CACHE_LAYOUT}\n{encoder}\n".encode("utf-8"))
    if ner:
        digest.update(assets.manifest_digest(shipped.ASSET).encode("utf-8"))
    digest.update(json.dumps(fast_config(), sort_keys=True, default=str).encode("utf-8"))
    digest.update(f"{list(stages.DEFAULT_CALIBRATION)}\t{stages.DEFAULT_THRESHOLD}\n".encode("utf-8"))
    if served.available(encoder):  # built on the shipped tower (`served`): its files, not the base's
        digest.update(assets.manifest_digest(served.TOWER).encode("utf-8"))
    else:
        folder = Path(resolve_model_path(encoder))
        if not folder.is_dir():
            return None
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            stat = path.stat()
            digest.update(f"{path.relative_to(folder)}\t{stat.st_size}\t{stat.st_mtime_ns}\n".encode())
    kb_digest = kb.digest() if isinstance(kb, KnowledgeBase) else KnowledgeBase.file_digest(kb)
    digest.update(kb_digest.encode())
    return digest.hexdigest()[:24]


def default_pipeline(kb: Union[KnowledgeBase, str] = "embedded:doid",
                     encoder: str = DEFAULT_ENCODER, cache: Optional[str] = AUTO_CACHE,
                     ner: bool = True) -> Language:
    """The shipped disease NER (`ner.shipped`) before the untrained linker on
    `encoder` and `kb` with the fast stages, loaded from the cache when it was
    built before (see the module's docstring): plain text in, linked mentions out.

    kb: a KnowledgeBase, a .bioelkb file or an embedded KB ('embedded:doid').
    cache: 'auto' (the cache root's `pipelines/`), a folder to keep the pipelines in,
        or None: built every call and not saved (its names still go through the
        name index's own embedding cache).
    ner: False leaves the NER out: the linker links the mentions a Doc brings
        (`doc.ents`, or [bracketed] ones through `link`).

    Example:
        >>> nlp = default_pipeline()  # the first call builds, later ones load
        >>> [(e.text, e.kb_id_, e._.kb_prob) for e in nlp("Carriers of FAP develop colon cancer.").ents]
    """
    key = pipeline_key(kb, encoder, ner)  # a KB file is read whole only to build
    root = cache_folder(cache, "pipelines") if key is not None else None
    if key is None or root is None:
        return _build(_kb(kb), encoder, fast_config(), ner)
    folder = Path(root) / key
    if folder.is_dir():
        if not _is_entry(folder, key):
            # not an entry this package wrote for this key: never loaded, never deleted
            warn(Warnings.W016.format(path=folder, problem=(
                f"it is not the cache entry {key} (its {MARKER} names "
                f"{'another key' if read_marker(folder) else 'none'}); it is left as it is, and "
                "the pipeline is built in memory")))
            return _build(_kb(kb), encoder, fast_config(), ner)
        try:
            with warnings.catch_warnings():  # an edited config in our own entry is damage
                warnings.filterwarnings("error", message=r"\[W018\]", category=BioELWarning)
                nlp = load_pipeline(folder)
            logger.debug("Loaded the default pipeline from %s", folder)  # only what the user asked for
            return nlp
        except (BioELError, BioELWarning, OSError, ValueError) as err:
            warn(Warnings.W016.format(path=folder, problem=" ".join(str(err).split())[:200] + (
                "; it is built again and saved in its place")))
            shutil.rmtree(folder, ignore_errors=True)  # our own entry (its marker), damaged
    removed = remove_stale_partials(Path(root), f".{key}.", ".partial", ENTRY)
    if removed:
        logger.info("Removed %d unfinished build(s) of %s left by a killed process", removed, key)
    kb = _kb(kb)
    logger.info("Building the default pipeline on %s (%d concepts); it is saved in %s for the "
                "next call", encoder, len(kb), folder)
    nlp = _build(kb, encoder, fast_config(), ner)
    _save(nlp, folder, key)
    return nlp


def default_pipeline_folder(kb: Union[KnowledgeBase, str] = "embedded:doid",
                            encoder: str = DEFAULT_ENCODER, cache: Optional[str] = AUTO_CACHE,
                            command: str = "this command") -> Path:
    """The cache entry of `default_pipeline(kb, encoder, cache)` (built and saved
    first when it is not there): for the doors that load a pipeline
    from a folder in other processes (`link-corpus`' workers, `visualize`'s page).
    E263 when no entry could be saved (no cache, a read-only cache without it, a
    hub encoder, a folder under the key that is not an entry of ours)."""
    key = pipeline_key(kb, encoder, True)
    root = cache_folder(cache, "pipelines") if key is not None else None
    if key is None or root is None:
        raise BioELError(Errors.E263.format(command=command, problem=(
            "no pipeline cache" if key is not None else
            f"the encoder {encoder!r} is not a local folder, so no cache entry is kept")))
    folder = Path(root) / key
    if _is_entry(folder, key):  # loaded (and checked) by whoever reads it: not loaded twice here
        return folder
    default_pipeline(kb, encoder, cache)  # builds and saves it
    if not _is_entry(folder, key):
        raise BioELError(Errors.E263.format(command=command, problem=(
            f"{folder} is not its cache entry" if folder.is_dir() else
            f"{root} holds no entry {key}, and it could not be written there")))
    return folder


def _is_entry(folder: Path, key: str) -> bool:
    """Whether `folder` is the cache entry this package wrote for `key` (its marker)."""
    marker = read_marker(folder) if folder.is_dir() else None
    return marker is not None and marker.get("command") == ENTRY and marker.get("key") == key


def _kb(kb: Union[KnowledgeBase, str, Path]) -> KnowledgeBase:
    return kb if isinstance(kb, KnowledgeBase) else KnowledgeBase.from_disk(kb)


def _build(kb: KnowledgeBase, encoder: str, config: Dict[str, Any], ner: bool) -> Language:
    """The untrained linker pipeline, with the shipped NER before it when `ner`: on
    the embedded default's encoder, served by the shipped int8 tower (`served`:
    no PyTorch needed, the same links with or without it); on another encoder,
    built with PyTorch."""
    import spacy

    if served.available(encoder) and config == linker_config():  # the one default, unchanged
        nlp = served.served_linker(spacy.blank("en"), kb)
        return with_shipped_ner(nlp) if ner else nlp
    config = {key: value for key, value in config.items() if key != "model"}  # the encoder's own
    nlp = untrained_pipeline(kb, encoder, config=config)
    return with_shipped_ner(nlp) if ner else nlp


# abbreviations defined in the text follow their long forms (docs/results/e2e.md)
CONSISTENCY = "bioel_mention_consistency"


def with_shipped_ner(nlp: Language, linker: str = "bioel_linker") -> Language:
    """`nlp` with the shipped NER's `tok2vec` and `ner` sourced before `linker`
    (checked against the package's manifest first, E254), and the document
    consistency of its mentions (`bioel_mention_consistency`) between them."""
    return with_ner(nlp, shipped.load_ner(vocab=nlp.vocab), linker)


def with_ner(nlp: Language, source: Language, linker: str = "bioel_linker") -> Language:
    """`nlp` with every component of `source` (another trained NER pipeline, e.g.
    the shipped one or one converted by `ner-onnx`, loaded with `nlp.vocab`) sourced
    before `linker`, in `source`'s order and under its names (so a component that
    listens to its `tok2vec` still finds it), and the document consistency the
    shipped NER gets after them. E259 when `nlp` already finds mentions before
    `linker` or already has a component of one of those names; E260 when `source`
    writes no entities. When `source` reads a transformer in context, `nlp.pipe`
    batches at most its `source.batch_size` documents: such an NER holds a batch's
    token vectors at once (a batch of 1,000 abstracts took gigabytes)."""
    from ..ner.onnx_tokens import CONTEXT_LAYERS

    check_ner_source(nlp, source, linker)
    if any(node.name in CONTEXT_LAYERS for _, pipe in source.pipeline
           for node in getattr(getattr(pipe, "model", None), "walk", lambda: [])()):
        nlp.batch_size = min(nlp.batch_size, source.batch_size)
    for name in source.pipe_names:
        nlp.add_pipe(name, source=source, before=linker)
    if CONSISTENCY not in nlp.pipe_names:
        nlp.add_pipe(CONSISTENCY, before=linker)
    return nlp


def check_ner_source(nlp: Language, source: Language, linker: str = "bioel_linker") -> None:
    """E259 when `nlp` already finds the mentions `linker` links, or already has a
    component named as one of `source`'s; E260 when no component of `source`
    writes its mentions where `linker` reads them."""
    from .loading import ANY_GROUP, find_linker, mention_finders, mention_targets

    component = find_linker(nlp, linker)
    finders = mention_finders(nlp, component)
    clash = sorted(set(source.pipe_names) & set(nlp.pipe_names))
    if finders or clash:
        raise BioELError(Errors.E259.format(linker=linker, problem=(
            f"it already finds its mentions with {', '.join(map(repr, finders))}" if finders else
            f"it already has components named {', '.join(map(repr, clash))}")))
    key = component.cfg["spans_key"]
    if not any(target == key or (key is not None and target == ANY_GROUP)
               for name in source.pipe_names for target in mention_targets(source, name)):
        raise BioELError(Errors.E260.format(
            names=source.pipe_names, linker=linker,
            reads="doc.ents" if key is None else f"doc.spans[{key!r}]"))


def load_ner_source(ner: str, vocab: Any) -> Language:
    """The NER pipeline `add-ner` puts before a linker: 'shipped' (the package's
    disease NER, checked against its manifest), or a trained pipeline's folder or
    installed package name, loaded with `vocab` (`loading.load_pipeline`'s checks:
    E247 when it is neither)."""
    return shipped.load_ner(vocab=vocab) if ner == "shipped" else load_pipeline(ner, vocab=vocab)


# a cache entry's marker names it (`outputs.MARKER`, command ENTRY, its key); an unfinished
# build's marker names its process
ENTRY = "default-pipeline"


def _save(nlp: Language, folder: Path, key: str) -> None:
    """Write `nlp` to a folder of its own beside `folder` (marked with this process,
    so that a later call can remove it if this one is killed), mark it as the entry
    of `key`, then rename it into place (a reader never sees half a pipeline; a
    concurrent writer's entry is kept)."""
    partial = folder.with_name(f".{key}.{uuid.uuid4().hex[:8]}.partial")
    try:
        partial.mkdir(parents=True)
        write_partial_marker(partial, ENTRY)
        nlp.to_disk(partial)
        write_marker(partial, ENTRY, key=key)
        os.rename(partial, folder)
    except OSError as err:  # another process renamed first, or the cache is not writable
        if not folder.is_dir():
            logger.warning("The default pipeline was not saved in %s (%s): the next call builds "
                           "it again", folder, err)
    finally:
        if partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)  # this call's own partial folder


__all__ = ["default_pipeline", "default_pipeline_folder", "fast_config", "has_onnx", "pipeline_key",
           "check_ner_source", "load_ner_source", "with_ner", "with_shipped_ner"]
