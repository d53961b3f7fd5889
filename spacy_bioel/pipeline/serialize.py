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
import logging
import tempfile
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Optional

import srsly
from spacy import util
from spacy.tokens import Span

from ..datastore.knn import DatastoreKNN
from ..errors import BioELError, Errors, Warnings, warn
from ..kb.knowledge_base import KnowledgeBase
from ..validation import as_bool, as_int

if TYPE_CHECKING:
    from .linker import BioELLinker

logger = logging.getLogger(__name__)
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
ATTRS = ("kb_ents_attr", "is_nil_attr", "nil_score_attr", "similarity_attr", "probability_attr")
STAGES = ("ranker", "nil", "candidates")
# pre-stage cfg keys (v1 pipelines, `evaluate --set`) -> stage parameters
LEGACY_OPTIONS = {"use_knn": "ranker.use_knn", "knn_k": "ranker.knn_k",
                  "knn_lambda": "ranker.knn_lambda", "knn_beta1": "ranker.beta1",
                  "knn_beta2": "ranker.beta2", "nil_threshold": "nil.threshold"}


# prediction settings of the component and their checks (E175)
SETTINGS: Dict[str, Callable[[Any], Any]] = {
    "top_k": lambda v: as_int("top_k", v, 1),
    "context_window": lambda v: as_int("context_window", v, 0),
    "abbreviations": lambda v: as_bool("abbreviations", v),
    "nil_without_alnum": lambda v: as_bool("nil_without_alnum", v),
    "exact_shortcut": lambda v: as_bool("exact_shortcut", v),
    "encode_batch_size": lambda v: as_int("encode_batch_size", v, 1)}


def install_extensions(cfg: Dict[str, Any]) -> None:
    """Span extensions named by the cfg, installed once each, default None. The
    candidate list reads back as [(id, score), ...] tuples also after a Doc went
    through msgpack (`nlp.pipe(n_process=2)`, DocBin), which turns tuples into lists."""
    for attr in ATTRS:
        name = cfg.get(attr)
        if not name or Span.has_extension(name):
            continue
        if attr == "kb_ents_attr":
            Span.set_extension(name, getter=_pairs_getter(name), setter=_pairs_setter(name))
        else:
            Span.set_extension(name, default=None)


def _key(name: str, span: Span) -> tuple:
    return ("._.", name, span.start_char, span.end_char)


def _pairs_getter(name: str) -> Callable[[Span], Optional[list]]:
    def get(span: Span) -> Optional[list]:
        value = span.doc.user_data.get(_key(name, span))
        return None if value is None else [tuple(pair) for pair in value]
    return get


def _pairs_setter(name: str) -> Callable[[Span, Optional[list]], None]:
    def set_(span: Span, value: Optional[list]) -> None:
        span.doc.user_data[_key(name, span)] = value
    return set_


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
    if key in SETTINGS:
        linker.cfg[key] = SETTINGS[key](value)
        return
    stage, _, param = LEGACY_OPTIONS.get(key, key).partition(".")
    target = getattr(linker, stage, None) if stage in STAGES else None
    if not param or not hasattr(target, "set_params") or param not in target.get_params():
        raise BioELError(Errors.E172.format(key=key, options=sorted(LEGACY_OPTIONS) + sorted(SETTINGS)))
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
    path = util.ensure_path(path)
    util.to_disk(path, _writers(linker), exclude)
    write_manifest(path)


# How to re-create each saved part, for E176.
RESAVE = ("Re-save the pipeline from its training output (model-last or model-best) "
          "with nlp.to_disk, or retrain.")
REBUILD = ("It is derived data: `python -m spacy_bioel repair-pipeline {pipeline} NEW_DIR` "
           "re-encodes it from the weights, the KB and the training mentions.")
REMEDIES = {
    "cfg": RESAVE, "model": RESAVE, "train_mentions": RESAVE, MANIFEST: RESAVE,
    "kb": ("Rebuild the KB from its source (`python -m spacy_bioel kb build`), then "
           "`python -m spacy_bioel repair-pipeline {pipeline} NEW_DIR --kb KB` (it re-encodes "
           "the index)."),
    "index": REBUILD, "datastore": REBUILD,
    "encoder": ("Copy the tokenizer files and config.json of the encoder the pipeline was "
                "trained from (paths.encoder) into {component}/encoder, or re-save the "
                "pipeline from its training output, or retrain.")}


def _damaged(path: Path, part: str, problem: str) -> BioELError:
    """E176 for `path`, a file of the component directory's `part` (its first path
    component: 'encoder' for encoder/tokenizer.json), with that part's remedy."""
    component = path.parent.parent if path.parent.name == part else path.parent
    remedy = REMEDIES.get(part, RESAVE).format(component=component, pipeline=component.parent)
    return BioELError(Errors.E176.format(path=path, problem=problem, remedy=remedy))


def write_manifest(path: Path) -> None:
    """`manifest.json`: size and SHA-256 of every file the component saved."""
    files = {p.relative_to(path).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
             for p in sorted(path.rglob("*")) if p.is_file() and p.name != MANIFEST}
    srsly.write_json(path / MANIFEST, {"version": 1, "files": files})


def verify_manifest(path: Path, skip: Iterable[str] = ()) -> None:
    """Check every file listed in `manifest.json` (E156 missing, E176 changed);
    a directory saved before manifests is not checked (logged)."""
    if not (path / MANIFEST).exists():
        logger.info("%s has no %s (saved by an older version): files not verified", path, MANIFEST)
        return
    try:
        files = srsly.read_json(path / MANIFEST)["files"]
        entries = [(name, int(entry["size"]), str(entry["sha256"])) for name, entry in files.items()]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise _damaged(path / MANIFEST, MANIFEST, f"unreadable: {type(err).__name__}: {err}")
    skip = set(skip)
    for name, size, digest in entries:
        part = name.split("/")[0]
        if part in skip:
            continue
        target = path / name
        if not target.is_file():
            raise BioELError(Errors.E156.format(path=target))
        if target.stat().st_size != size:
            raise _damaged(target, part, f"{target.stat().st_size} bytes, the manifest says {size}")
        if _sha256(target) != digest:
            raise _damaged(target, part, "its SHA-256 differs from the manifest's")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


# parts `repair-pipeline` re-creates instead of loading (see pipeline.repair)
REBUILD_PARTS: ContextVar[frozenset] = ContextVar("bioel_rebuild_parts", default=frozenset())


def from_disk(linker: "BioELLinker", path, exclude: Iterable[str]) -> "BioELLinker":
    path = util.ensure_path(path)
    exclude = set(exclude) | REBUILD_PARTS.get()
    if not (path / "cfg").exists():
        raise BioELError(Errors.E156.format(path=path / "cfg"))
    verify_manifest(path, skip=exclude)
    try:
        saved = srsly.read_json(path / "cfg")
        version = saved.get("version", 1)
    except (ValueError, AttributeError) as err:
        raise _damaged(path / "cfg", "cfg", f"not a JSON object: {err}")
    if not isinstance(version, int):
        raise _damaged(path / "cfg", "cfg", f"version {version!r}")
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
        _load_model(linker, path, saved)
    dim = linker.model.get_dim("nO") if linker.model.has_dim("nO") else saved.get("dim")
    if "index" in parts:
        linker.index.from_bytes((path / "index").read_bytes(), path=str(path / "index"))
        if dim is not None and linker.index.store.dim != dim:
            raise _damaged(path / "index", "index", f"vectors of dimension "
                           f"{linker.index.store.dim} for a model of dimension {dim}: it comes "
                           "from another pipeline")
    if "datastore" in parts:
        linker.datastore = _read(path / "datastore", "datastore",
                                 lambda p: DatastoreKNN.from_bytes(p.read_bytes()))
        if dim is not None and linker.datastore.dim != dim:
            raise _damaged(path / "datastore", "datastore", f"keys of dimension "
                           f"{linker.datastore.dim} for a model of dimension {dim}")
        linker.datastore_stale = False
    if "train_mentions" in parts:
        linker.train_mentions = _read(path / "train_mentions", "train_mentions", _read_mentions)
    return linker


def _read(path: Path, part: str, reader: Callable[[Path], Any]) -> Any:
    """`reader(path)`, any failure to parse reported as E176 naming the file."""
    try:
        return reader(path)
    except BioELError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, EOFError) as err:
        raise _damaged(path, part, f"{type(err).__name__}: {str(err)[:200]}")


def _read_mentions(path: Path) -> list:
    mentions = [tuple(x) for x in srsly.read_msgpack(path)]
    if not all(len(m) == 2 and all(isinstance(v, str) for v in m) for m in mentions):
        raise ValueError("entries are not (mention, concept id) pairs")
    return mentions


def _load_model(linker: "BioELLinker", path: Path, saved: Dict[str, Any]) -> None:
    """Rebuild the module from the saved encoder config, then load the weights
    (torch>=2.6 reads them with weights_only: no pickle code runs). A weights file
    that does not parse is E176; weights of another shape are E157."""
    import pickle

    from ..encoders.thinc_biencoder import build_from_saved

    try:
        build_from_saved(linker.model, path / "encoder")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise _damaged(path / "encoder", "encoder", f"{type(err).__name__}: {str(err)[:200]}")
    _check_tokenizer(linker, path / "encoder")
    try:
        linker.model.from_disk(path / "model")
    except RuntimeError as err:
        if "size mismatch" in str(err) or "key(s) in state_dict" in str(err):
            raise BioELError(Errors.E157.format(path=path, key="weights", saved=type(err).__name__,
                                                config=str(err)[:200]))
        raise _damaged(path / "model", "model", f"{type(err).__name__}: {str(err)[:200]}")
    except (ValueError, KeyError, TypeError, EOFError, IndexError, AttributeError,
            pickle.UnpicklingError) as err:
        raise _damaged(path / "model", "model", f"{type(err).__name__}: {str(err)[:200]}")
    if saved.get("dim") is not None and linker.model.get_dim("nO") != saved["dim"]:
        raise BioELError(Errors.E157.format(path=path, key="dim", saved=saved["dim"],
                                            config=linker.model.get_dim("nO")))


def _check_tokenizer(linker: "BioELLinker", encoder_dir: Path) -> None:
    """A tokenizer whose vocabulary does not cover the model's embedding table
    (e.g. tokenizer files missing, so transformers fell back to a bare one) would
    turn every mention into [UNK]: refuse it (E176)."""
    from ..encoders.thinc_biencoder import torch_module

    tokenizer = linker.model.attrs.get("tokenizer")
    config = getattr(torch_module(linker.model).mention_encoder, "config", None)
    vocab_size = getattr(config, "vocab_size", None)
    if tokenizer is None or not vocab_size:
        return
    size = len(tokenizer)
    if size < vocab_size // 2:
        raise _damaged(encoder_dir, "encoder", f"the tokenizer has {size} tokens for a model "
                       f"with {vocab_size}: its vocabulary files are missing or damaged")


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
