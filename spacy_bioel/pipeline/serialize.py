"""Serialisation and small helpers of the `bioel_linker` component.

The component saves, with spaCy's `util.to_disk` / `to_bytes` (so `exclude`
works for each key): `cfg` (settings, the tuned stage parameters and a format
version), `kb`, `index` (the dense store with the name embeddings),
`datastore`, `train_mentions`, `encoder` (tokenizer + transformer config, so
the module is built before its weights load) and `model` (weights). Nothing is
encoded while saving. A component directory saved before stages (version 1,
flat cfg) still loads: its tuned values map onto the stages.
"""
from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Optional

import srsly
from spacy import util
from spacy.tokens import Span

from ..datastore.knn import DatastoreKNN
from ..errors import BioELError, Errors, Warnings, warn
from ..kb.knowledge_base import KnowledgeBase

if TYPE_CHECKING:
    from .linker import BioELLinker

FORMAT_VERSION = 2
ATTRS = ("kb_ents_attr", "is_nil_attr", "nil_score_attr", "similarity_attr", "probability_attr")
STAGES = ("ranker", "nil", "candidates")
# pre-stage cfg keys (v1 pipelines, `evaluate --set`) -> stage parameters
LEGACY_OPTIONS = {"use_knn": "ranker.use_knn", "knn_k": "ranker.knn_k",
                  "knn_lambda": "ranker.knn_lambda", "knn_beta1": "ranker.beta1",
                  "knn_beta2": "ranker.beta2", "nil_threshold": "nil.threshold"}


def install_extensions(cfg: Dict[str, Any]) -> None:
    """Span extensions named by the cfg, installed once each, default None."""
    for attr in ATTRS:
        if cfg.get(attr) and not Span.has_extension(cfg[attr]):
            Span.set_extension(cfg[attr], default=None)


def name_cache_key(linker: "BioELLinker") -> str:
    """A digest of the names, the encoder settings and the concept tower's weights."""
    from ..encoders.thinc_biencoder import torch_module

    digest = hashlib.sha1()
    digest.update("\n".join(linker.index.names.names).encode("utf-8"))
    attrs = linker.model.attrs
    digest.update(repr([attrs.get(k) for k in ("pooling", "similarity", "max_length")]).encode())
    for name, tensor in torch_module(linker.model).tower("concept").state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:20]


def set_option(linker: "BioELLinker", key: str, value: Any) -> None:
    """See `BioELLinker.set_option`."""
    if key in ("top_k", "abbreviations", "context_window"):
        linker.cfg[key] = type(linker.cfg[key])(value)
        return
    stage, _, param = LEGACY_OPTIONS.get(key, key).partition(".")
    target = getattr(linker, stage, None) if stage in STAGES else None
    if not param or not hasattr(target, "set_params"):
        raise BioELError(Errors.E172.format(key=key, options=sorted(LEGACY_OPTIONS)))
    target.set_params(**{param: value})


def _stage_params(linker: "BioELLinker") -> Dict[str, Any]:
    return {stage: getattr(linker, stage).get_params() for stage in STAGES
            if hasattr(getattr(linker, stage), "get_params")}


def _cfg(linker: "BioELLinker") -> Dict[str, Any]:
    return {"version": FORMAT_VERSION, "initialized": linker.kb is not None,
            "dim": linker.model.get_dim("nO") if linker.model.has_dim("nO") else None,
            "encoder_attrs": {k: v for k, v in linker.model.attrs.items() if k != "tokenizer"},
            "settings": dict(linker.cfg), "stages": _stage_params(linker)}


def _writers(linker: "BioELLinker") -> Dict[str, Callable[[Path], Any]]:
    from ..encoders.thinc_biencoder import save_encoder_config

    writers: Dict[str, Callable[[Path], Any]] = {"cfg": lambda p: srsly.write_json(p, _cfg(linker))}
    if linker.kb is not None and linker.model.layers:
        if linker.index.stale or linker.datastore_stale:
            warn(Warnings.W006.format(name=linker.name))
        writers.update({
            "kb": lambda p: linker.kb.to_disk(p),
            "index": lambda p: p.write_bytes(linker.index.to_bytes()),
            "datastore": lambda p: p.write_bytes(linker.datastore.to_bytes()),
            "train_mentions": lambda p: srsly.write_msgpack(p, linker.train_mentions),
            "encoder": lambda p: save_encoder_config(linker.model, p),
            "model": lambda p: linker.model.to_disk(p)})
    return writers


def to_disk(linker: "BioELLinker", path, exclude: Iterable[str]) -> None:
    util.to_disk(util.ensure_path(path), _writers(linker), exclude)


def from_disk(linker: "BioELLinker", path, exclude: Iterable[str]) -> "BioELLinker":
    from ..encoders.thinc_biencoder import build_from_saved

    path = util.ensure_path(path)
    exclude = set(exclude)
    if not (path / "cfg").exists():
        raise BioELError(Errors.E156.format(path=path / "cfg"))
    saved = srsly.read_json(path / "cfg")
    version = saved.get("version", 1)
    if version > FORMAT_VERSION:
        raise BioELError(Errors.E173.format(path=path, found=version, expected=FORMAT_VERSION))
    if version == 1:  # flat cfg of the pipelines saved before stages
        saved = {"initialized": True, "dim": saved.get("dim"),
                 "encoder_attrs": saved.get("encoder_attrs", {}), "settings": {},
                 "stages": {"ranker": {k[len("knn_"):] if k.startswith("knn_beta") else k: saved[k]
                                       for k in ("use_knn", "knn_k", "knn_lambda", "knn_beta1",
                                                 "knn_beta2") if k in saved},
                            "nil": {"threshold": saved.get("nil_threshold")}}}
    _check_attrs(path, saved.get("encoder_attrs", {}), linker.model.attrs)
    for stage, params in saved.get("stages", {}).items():
        if hasattr(getattr(linker, stage, None), "set_params"):
            getattr(linker, stage).set_params(**params)
    if not saved.get("initialized", True):
        return linker
    parts = [p for p in ("kb", "index", "datastore", "train_mentions", "encoder", "model")
             if p not in exclude]
    for part in parts:
        if not (path / part).exists():
            raise BioELError(Errors.E156.format(path=path / part))
    if "kb" in parts:
        datastore_stale = linker.datastore_stale
        linker.set_kb(KnowledgeBase.from_disk(path / "kb"))
        linker.datastore_stale = datastore_stale if linker.datastore is not None else True
    if "model" in parts:
        build_from_saved(linker.model, path / "encoder")
        try:
            linker.model.from_disk(path / "model")
        except (ValueError, RuntimeError, KeyError) as err:
            raise BioELError(Errors.E157.format(path=path, key="weights", saved=type(err).__name__,
                                                config=str(err)[:200]))
        if saved.get("dim") is not None and linker.model.get_dim("nO") != saved["dim"]:
            raise BioELError(Errors.E157.format(path=path, key="dim", saved=saved["dim"],
                                                config=linker.model.get_dim("nO")))
    if "index" in parts:
        linker.index.from_bytes((path / "index").read_bytes(), path=str(path / "index"))
    if "datastore" in parts:
        linker.datastore = DatastoreKNN.from_bytes((path / "datastore").read_bytes())
        linker.datastore_stale = False
    if "train_mentions" in parts:
        linker.train_mentions = [tuple(x) for x in srsly.read_msgpack(path / "train_mentions")]
    return linker


def _check_attrs(path, saved: Dict[str, Any], config: Dict[str, Any]) -> None:
    for key in ("pooling", "similarity", "shared_towers"):
        if key in saved and saved[key] != config.get(key):
            raise BioELError(Errors.E157.format(path=path, key=key, saved=saved[key],
                                                config=config.get(key)))


def to_bytes(linker: "BioELLinker", exclude: Iterable[str]) -> bytes:
    """The files of `to_disk`, packed in one msgpack (the encoder config and the
    weights go through a temporary folder: transformers writes files)."""
    with tempfile.TemporaryDirectory() as tmp:
        to_disk(linker, tmp, exclude)
        return srsly.msgpack_dumps(_pack(Path(tmp)))


def from_bytes(linker: "BioELLinker", data: bytes, exclude: Iterable[str]) -> "BioELLinker":
    with tempfile.TemporaryDirectory() as tmp:
        _unpack(srsly.msgpack_loads(data), Path(tmp))
        return from_disk(linker, tmp, exclude)


def _pack(folder: Path) -> Dict[str, Any]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _unpack(files: Dict[str, bytes], folder: Path) -> None:
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


__all__ = ["install_extensions", "to_disk", "from_disk", "to_bytes", "from_bytes",
           "name_cache_key", "set_option", "LEGACY_OPTIONS", "FORMAT_VERSION"]
