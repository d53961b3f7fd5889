"""Settings and serialisation of the `bioel_reranker` component.

Saved parts (spaCy's `util.to_disk`, so `exclude` works per key): `cfg`
(settings, whether the "no concept" option was learned, a format version),
`kb` (the candidates' names and definitions: the reranker also works after a
linker that has no KB of ours), `encoder` (tokenizer + transformer config) and
`model` (weights), with the linker's `manifest.json` integrity check.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Optional, Protocol

import srsly
from spacy import util

from ..errors import BioELError, Errors
from ..files import replace_file, unlink_links
from ..kb.knowledge_base import KnowledgeBase
from ..pipeline.integrity import EDITED, damaged, read_saved_cfg, write_manifest
from ..pipeline.serialize import pack_folder, read_payload, unpack_folder
from ..pipeline.weights import build_module, load_weights
from ..validation import as_bool, as_choice, as_float, as_int



class Saved(Protocol):
    """What serialisation reads and restores of a reranker (its public
    attributes; `component.BioELReranker` has them and is not imported here)."""

    name: str
    cfg: Dict[str, Any]
    kb: Optional[KnowledgeBase]
    model: Any  # the thinc cross-encoder

    def set_kb(self, kb: KnowledgeBase) -> None: ...

FORMAT_VERSION = 1
TRAIN_CANDIDATES = ("all", "seen")


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None or (isinstance(v, str) and v.strip().lower() in
                                          ("null", "none", "")) else check(v)


def _text(name: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise BioELError(Errors.E175.format(name=name, value=repr(value)[:80],
                                                expected="a non-empty string"))
        return value
    return check


SETTINGS: Dict[str, Callable[[Any], Any]] = {
    "top_k": lambda v: as_int("top_k", v, 1),
    "train_top_k": _optional(lambda v: as_int("train_top_k", v, 1)),
    "train_linker_weight": lambda v: as_float("train_linker_weight", v, 0.0),
    "train_candidates": lambda v: as_choice("train_candidates", v, TRAIN_CANDIDATES),
    "context_window": lambda v: as_int("context_window", v, 0),
    "n_synonyms": lambda v: as_int("n_synonyms", v, 0),
    "definition_chars": lambda v: as_int("definition_chars", v, 0),
    "learn_nil": lambda v: as_bool("learn_nil", v),
    "use_nil_option": lambda v: as_bool("use_nil_option", v),
    "nil_text": _text("nil_text"),
    "nil_threshold": _optional(lambda v: as_float("nil_threshold", v, 0.0, 1.0)),
    "gate": _optional(lambda v: as_float("gate", v)),
    "linker_weight": lambda v: as_float("linker_weight", v, 0.0),
    "batch_size": lambda v: as_int("batch_size", v, 1)}


def set_option(reranker: Saved, key: str, value: Any) -> None:
    """Check and set one setting (E175 bad value; E172 unknown key)."""
    if key not in SETTINGS:
        raise BioELError(Errors.E187.format(key=key, options=sorted(SETTINGS)))
    reranker.cfg[key] = SETTINGS[key](value)


def _cfg(reranker: Saved) -> Dict[str, Any]:
    return {"version": FORMAT_VERSION, "initialized": reranker.kb is not None, "manifest": True,
            "settings": dict(reranker.cfg),
            "encoder_attrs": {k: v for k, v in reranker.model.attrs.items() if k != "tokenizer"}}


def to_disk(reranker: Saved, path, exclude: Iterable[str]) -> None:
    from ..encoders.thinc_cross_encoder import save_encoder_config

    path = util.ensure_path(path)
    unlink_links(path)  # saving over a folder never writes through a link out of it
    writers: Dict[str, Callable[[Path], Any]] = {"cfg": lambda p: srsly.write_json(p, _cfg(reranker))}
    if reranker.kb is not None and reranker.model.layers:
        writers.update({
            "kb": lambda p: reranker.kb.to_disk(p),
            "encoder": lambda p: save_encoder_config(reranker.model, p),
            "model": lambda p: replace_file(p, lambda t: reranker.model.to_disk(t))})
    util.to_disk(path, writers, exclude)
    write_manifest(path)


def from_disk(reranker: Saved, path, exclude: Iterable[str]) -> None:
    from ..encoders.thinc_cross_encoder import build_from_saved

    path = util.ensure_path(path)
    exclude = set(exclude)
    saved = read_saved_cfg(path, skip=exclude)
    try:
        version, settings = saved.get("version"), dict(saved.get("settings", {}))
    except (ValueError, TypeError) as err:
        raise damaged(path / "cfg", "cfg", f"settings: {err}")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise BioELError(Errors.E173.format(path=path, found=version, expected=FORMAT_VERSION))
    edited = saved.get(EDITED, {})  # a setting edited in config.cfg keeps the edited value
    for key, value in settings.items():
        if key in SETTINGS and f"components.{reranker.name}.{key}" not in edited:
            set_option(reranker, key, value)
        elif key in ("nil_option", "kb_from"):
            reranker.cfg[key] = value
    if not saved.get("initialized", True):
        return
    for part in ("kb", "encoder", "model"):
        if part not in exclude and not (path / part).exists():
            raise BioELError(Errors.E156.format(path=path / part))
    if "kb" not in exclude:
        reranker.set_kb(KnowledgeBase.from_disk(path / "kb"))
    if "model" in exclude:
        return
    build_module(build_from_saved, reranker.model, path, path / "encoder")
    load_weights(reranker.model, path)


def to_bytes(reranker: Saved, exclude: Iterable[str]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        to_disk(reranker, tmp, exclude)
        return srsly.msgpack_dumps(pack_folder(Path(tmp)))


def from_bytes(reranker: Saved, data: bytes, exclude: Iterable[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        unpack_folder(read_payload(data, "bioel_reranker bytes"), Path(tmp))
        from_disk(reranker, tmp, exclude)


__all__ = ["SETTINGS", "set_option", "to_disk", "from_disk", "to_bytes", "from_bytes",
           "FORMAT_VERSION"]
