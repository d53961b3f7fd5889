"""Serialisation and settings of the `bioel_linker` component (integrity checks:
`integrity`; the Span extensions: `extensions`).

The component saves, with spaCy's `util.to_disk` / `to_bytes` (so `exclude`
works for each key): `cfg` (settings, the tuned stage parameters and a format
version), `kb`, `index` (the dense store with the name embeddings),
`datastore`, `train_mentions`, `encoder` (tokenizer + transformer config, so
the module is built before its weights load) and `model` (weights). Nothing is
encoded while saving. A format this version does not read (1, the flat cfg
before linking stages, or one newer than FORMAT_VERSION) is E173.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import tempfile
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Optional, Protocol, Sequence

import srsly
from spacy import util

from ..datastore.knn import DatastoreKNN
from ..encoders.runtime import ONNX_DATA, ONNX_FILE, ONNX_META, ONNX_UNSIGNED
from ..encoders.thinc_biencoder import is_built
from ..encoders.tokenize import BatchTokenizer
from ..errors import BioELError, Errors, Warnings, warn
from ..index.names import TABLE_FILE, NameTable, joined_utf8
from ..kb.knowledge_base import KnowledgeBase
from ..files import member, replace_file, sha256_of, unlink_links
from .integrity import EDITED, MANIFEST, damaged, manifest_digest, read_saved_cfg, write_manifest
from .settings import CHECKS
from .state import LinkerState
from .weights import DeferredModel, check_vocabulary, checked_weights, load_model

logger = logging.getLogger(__name__)
FORMAT_VERSION = 2
STAGES = ("ranker", "nil", "candidates", "shortcut")


class Saved(Protocol):
    """What serialisation reads and restores of a linker (its public attributes
    and methods; `linker.BioELLinker` has them, and is never imported here)."""

    name: str
    cfg: Any  # settings.LinkerSettings
    model: Any  # the thinc bi-encoder
    runtime: Any
    state: LinkerState
    deferred_model: Any
    ranker: Any
    nil: Any
    candidates: Any
    shortcut: Any
    train_mentions: Any  # (mention, concept id[, document key]) rows

    def set_kb(self, kb: KnowledgeBase, names: Optional[NameTable] = None) -> None: ...

    def defer_model(self, deferred: DeferredModel) -> None: ...

    def model_changed(self) -> None: ...


def name_cache_key(linker: Saved, names: Optional[Sequence[str]] = None) -> str:
    """A digest of the names (default: the index's), the encoder settings and the
    concept tower's weights."""
    from ..encoders.thinc_biencoder import torch_module

    digest = hashlib.sha1()
    digest.update(joined_utf8(linker.state.index.names.names if names is None else names))
    attrs = linker.model.attrs
    digest.update(repr([attrs.get(k) for k in ("pooling", "similarity", "max_length")]).encode())
    for name, tensor in torch_module(linker.model).tower("concept").state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:20]


def refresh_cache_key(linker: Saved) -> Optional[str]:
    """`name_cache_key` while the concept tower is one the key digests for good:
    frozen, or not yet trained (the base model of an untrained pipeline, e.g.
    the embedded default); None while training changes it."""
    from ..encoders.thinc_biencoder import concept_tower_trained

    if linker.steps.steps and concept_tower_trained(linker.model):
        return None
    return name_cache_key(linker)


def set_option(linker: Saved, key: str, value: Any) -> None:
    """A checked setting (`settings.CHECKS`) or a stage parameter ('nil.threshold',
    ...): E172 for an unknown name, E175 for a bad value, E261 for an `id_space`
    the KB has no id in."""
    if key in CHECKS:
        if key == "id_space":  # E261 before the setting changes
            linker.state.check_space(CHECKS[key](key, value))
        linker.cfg.set(key, value)
        return
    stage, _, param = key.partition(".")
    target = getattr(linker, stage, None) if stage in STAGES else None
    if not param or not hasattr(target, "set_params") or param not in target.get_params():
        raise BioELError(Errors.E172.format(key=key, options=sorted(CHECKS)))
    target.set_params(**{param: value})


def _stage_params(linker: Saved) -> Dict[str, Any]:
    return {stage: getattr(linker, stage).get_params() for stage in STAGES
            if hasattr(getattr(linker, stage), "get_params")}


def _cfg(linker: Saved, concept_tower: Optional[Dict[str, str]]) -> Dict[str, Any]:
    return {"version": FORMAT_VERSION, "initialized": linker.state.kb is not None, "manifest": True,
            "dim": linker.model.get_dim("nO") if linker.model.has_dim("nO") else None,
            "encoder_attrs": {k: v for k, v in linker.model.attrs.items() if k != "tokenizer"},
            "settings": dict(linker.cfg), "stages": _stage_params(linker),
            "concept_tower": concept_tower}


def concept_reference(linker: Saved) -> Optional[Dict[str, str]]:
    """The base model the frozen concept tower is saved as (`encoders.base_tower`),
    or None when the weights file holds it: checked against the tower first."""
    from ..encoders.base_tower import adopted_reference, current_reference
    from ..encoders.thinc_biencoder import is_contextual, torch_module

    if linker.deferred_model is not None:
        return linker.deferred_model.concept_tower
    if not is_built(linker.model) or is_contextual(linker.model):
        return None
    module = torch_module(linker.model)
    if module.concept_base is None and not getattr(module, "base_checked", False):
        module.base_checked = True  # once per module: it loads the base model
        module.concept_base = adopted_reference(module, linker.model.attrs["encoder"])
    return current_reference(module)


def _writers(linker: Saved) -> Dict[str, Callable[[Path], Any]]:
    from ..encoders.thinc_biencoder import save_encoder_config

    reference = concept_reference(linker)  # before the weights are written: they follow it
    writers: Dict[str, Callable[[Path], Any]] = {
        "cfg": lambda p: srsly.write_json(p, _cfg(linker, reference))}
    deferred = linker.deferred_model
    if linker.state.kb is not None and (is_built(linker.model) or deferred is not None):
        if linker.state.index.stale or linker.state.datastore_stale:
            warn(Warnings.W006.format(name=linker.name))
        kb_bytes = functools.lru_cache(maxsize=1)(linker.state.kb.to_bytes)  # once: its file and the table

        writers.update({
            "kb": lambda p: replace_file(p, lambda t: t.write_bytes(kb_bytes())),
            "index": lambda p: _save_index(linker, p, hashlib.sha256(kb_bytes()).hexdigest()),
            "datastore": lambda p: replace_file(p, lambda t: t.write_bytes(linker.state.datastore.to_bytes())),
            "train_mentions": lambda p: srsly.write_msgpack(p, linker.state.mention_rows()),
            "encoder": (deferred.save_encoder if deferred is not None else
                        lambda p: save_encoder_config(linker.model, p)),
            "model": (deferred.save_weights if deferred is not None else
                      lambda p: replace_file(p, lambda t: linker.model.to_disk(t)))})
        if linker.runtime.has_files:
            writers["runtime"] = lambda p: linker.runtime.to_disk(p, linker.model)
    return writers


def _save_index(linker: Saved, folder: Path, kb_digest: str) -> None:
    """The name index's store, and its name table for the KB whose file's
    SHA-256 is `kb_digest` (`NameTable.save`: loading reads it instead of
    building it, where the pipeline's KB file is that one)."""
    linker.state.index.to_disk(folder)
    linker.state.index.names.save(folder / TABLE_FILE, kb_digest)


def _saved_table(path: Path, kb: KnowledgeBase) -> Optional[NameTable]:
    """The name table saved with the index for the pipeline's KB file (None:
    none, or not for this KB: `set_kb` builds it)."""
    table_file = path / "index" / TABLE_FILE
    if not table_file.is_file():
        return None
    return NameTable.load(table_file, kb, sha256_of(path / "kb"))


def to_disk(linker: Saved, path, exclude: Iterable[str]) -> None:
    path = util.ensure_path(path)
    unlink_links(path)  # saving over a folder never writes through a link out of it
    util.to_disk(path, _writers(linker), exclude)
    if not linker.runtime.has_files and "runtime" not in exclude:
        remove_runtime_files(path / "runtime")  # saved over a pipeline that was served by ONNX
    write_manifest(path)


def remove_runtime_files(folder: Path) -> None:
    """Delete the files the ONNX runtime writes in `folder` (its graph, weights and
    record), only where its record is there, then `folder` if nothing else is
    left in it: anything else found there is not ours and stays."""
    if folder.is_symlink() or not (folder / ONNX_META).is_file():
        return
    for name in (ONNX_FILE, ONNX_DATA, ONNX_META) + ONNX_UNSIGNED:
        if (folder / name).is_file() or (folder / name).is_symlink():
            (folder / name).unlink()
    if not any(folder.iterdir()):
        folder.rmdir()


# parts `repair-pipeline` re-creates instead of loading (see pipeline.loading)
REBUILD_PARTS: ContextVar[frozenset] = ContextVar("bioel_rebuild_parts", default=frozenset())


def from_disk(linker: Saved, path, exclude: Iterable[str]) -> Saved:
    path = util.ensure_path(path)
    exclude = set(exclude) | REBUILD_PARTS.get()
    saved = read_saved_cfg(path, skip=exclude, later=("model",))  # its reader checks its digest
    version = saved.get("version", 1)
    if not isinstance(version, int):
        raise damaged(path / "cfg", "cfg", f"version {version!r}")
    if version != FORMAT_VERSION:  # 1: the flat settings before linking stages; or newer
        raise BioELError(Errors.E173.format(path=path, found=version, expected=FORMAT_VERSION))
    _check_attrs(path, saved.get("encoder_attrs", {}), linker.model.attrs)
    edited = saved.get(EDITED, {})  # a setting edited in config.cfg keeps the edited value
    for stage, params in saved.get("stages", {}).items():
        if hasattr(getattr(linker, stage, None), "set_params"):
            getattr(linker, stage).set_params(**{
                key: value for key, value in params.items()
                if f"components.{linker.name}.{stage}.{key}" not in edited})
    if not saved.get("initialized", True):
        return linker
    parts = [p for p in ("kb", "index", "datastore", "train_mentions", "encoder", "model")
             if p not in exclude]
    for part in parts:
        if not (path / part).exists():
            raise BioELError(Errors.E156.format(path=path / part))
    state = linker.state
    if "kb" in parts:
        datastore_stale = state.datastore_stale
        kb = KnowledgeBase.from_disk(path / "kb")
        linker.set_kb(kb, _saved_table(path, kb) if "index" in parts else None)
        state.datastore_stale = datastore_stale if state.datastore is not None else True
    if "model" in parts:
        _load_weights(linker, path, saved.get("dim"), exclude, saved.get("concept_tower"))
    dim = linker.model.get_dim("nO") if linker.model.has_dim("nO") else saved.get("dim")
    if "index" in parts:
        state.index.from_disk(path / "index")
        if dim is not None and state.index.store.dim != dim:
            raise damaged(path / "index", "index", f"vectors of dimension "
                           f"{state.index.store.dim} for a model of dimension {dim}: it comes "
                           "from another pipeline")
    if "datastore" in parts:
        state.datastore = _read(path / "datastore", "datastore",
                                lambda p: DatastoreKNN.from_bytes(p.read_bytes()))
        if dim is not None and state.datastore.dim != dim:
            raise damaged(path / "datastore", "datastore", f"keys of dimension "
                           f"{state.datastore.dim} for a model of dimension {dim}")
        state.datastore_stale = False
    if "train_mentions" in parts:
        linker.train_mentions = _read(path / "train_mentions", "train_mentions", _read_mentions)
    return linker


def _load_weights(linker: Saved, path: Path, dim: Optional[int], exclude,
                  concept_tower: Optional[Dict[str, str]] = None) -> None:
    """Load the PyTorch module now, or, when the runtime stage has its saved
    ONNX graph (and tokenizer.json), only pin the weights (`DeferredModel`). A
    concept tower saved by reference comes from its base model (E241)."""
    runtime = linker.runtime
    tokenizer_file = path / "encoder" / "tokenizer.json"
    digest = manifest_digest(path, "model")  # loading checked its size only
    if runtime.has_files and "runtime" not in exclude and (path / "runtime").is_dir() \
            and tokenizer_file.exists():
        deferred = DeferredModel(path, dim, concept_tower, digest)
        tokenizer = _read_tokenizer(tokenizer_file, int(linker.model.attrs.get("max_length") or 25))
        check_vocabulary(tokenizer.backend.get_vocab_size(), deferred.vocab_size, path / "encoder")
        try:
            runtime.from_disk(path / "runtime", tokenizer)  # read once: the check and the runtime
        except BioELError:
            raise
        except Exception as err:  # onnxruntime's errors (InvalidProtobuf, ...) derive from Exception
            raise damaged(path / "runtime" / "mention.onnx", "runtime",
                          f"{type(err).__name__}: {str(err)[:200]}")
        if not runtime.needs_model():
            linker.defer_model(deferred)
            return
    weights = checked_weights(path / "model", digest, (path / "model").read_bytes())
    load_model(linker.model, path, dim, weights=weights, concept_tower=concept_tower)
    runtime.invalidate()
    linker.model_changed()


def _read_tokenizer(tokenizer_file: Path, max_length: int) -> BatchTokenizer:
    """The batch tokenizer of `tokenizer_file` (E176 when it does not parse)."""
    try:
        return BatchTokenizer.from_file(tokenizer_file, max_length)
    except Exception as err:  # tokenizers raises its own Exception type
        raise damaged(tokenizer_file, "encoder", f"{type(err).__name__}: {str(err)[:200]}")


def _read(path: Path, part: str, reader: Callable[[Path], Any]) -> Any:
    """`reader(path)`, any failure to parse reported as E176 naming the file."""
    try:
        return reader(path)
    except BioELError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, EOFError) as err:
        raise damaged(path, part, f"{type(err).__name__}: {str(err)[:200]}")


def _read_mentions(path: Path) -> list:
    """(mention, concept id) pairs, or triples with the document key (saved since
    the datastore records each mention's document)."""
    mentions = [tuple(x) for x in srsly.read_msgpack(path)]
    if not all(len(m) in (2, 3) and isinstance(m[0], str) and isinstance(m[1], str) and
               (len(m) == 2 or isinstance(m[2], int)) for m in mentions) or \
            len({len(m) for m in mentions}) > 1:
        raise ValueError("entries are not (mention, concept id[, document key]) rows")
    return mentions


def _check_attrs(path, saved: Dict[str, Any], config: Dict[str, Any]) -> None:
    for key in ("pooling", "similarity", "shared_towers", "prompt"):
        if key in saved and saved[key] != config.get(key):
            raise BioELError(Errors.E157.format(path=path, key=key, saved=saved[key],
                                                config=config.get(key)))


def to_bytes(linker: Saved, exclude: Iterable[str]) -> bytes:
    """The files of `to_disk`, packed in one msgpack (the encoder config and the
    weights go through a temporary folder: transformers writes files)."""
    with tempfile.TemporaryDirectory() as tmp:
        to_disk(linker, tmp, exclude)
        return srsly.msgpack_dumps(pack_folder(Path(tmp)))


def from_bytes(linker: Saved, data: bytes, exclude: Iterable[str]) -> Saved:
    with tempfile.TemporaryDirectory() as tmp:
        unpack_folder(read_payload(data), Path(tmp))
        return from_disk(linker, tmp, exclude)


def read_payload(data: bytes, what: str = "bioel_linker bytes") -> Dict[str, bytes]:
    """`pack_folder`'s payload from `to_bytes` data: a map of file names to bytes (E176)."""
    try:
        files = srsly.msgpack_loads(data)
    except Exception as err:  # msgpack raises its own types (ExtraData, FormatError, ...)
        raise damaged(Path(f"<{what}>"), "cfg", f"not a msgpack payload: {type(err).__name__}")
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, bytes)
                                              for k, v in files.items()):
        raise damaged(Path(f"<{what}>"), "cfg", "not a map of file names to bytes")
    return files


def pack_folder(folder: Path) -> Dict[str, Any]:
    """Every regular file under `folder` by relative path (the `to_bytes` payload)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def unpack_folder(files: Dict[str, bytes], folder: Path) -> None:
    """Write `pack_folder`'s payload under `folder`; a name that leads outside it
    (absolute, '..', through a link) is E230 before anything is written."""
    targets = {name: member(folder, name) for name in files}  # every name checked first
    for name, content in files.items():
        targets[name].parent.mkdir(parents=True, exist_ok=True)
        with open(targets[name], "xb") as handle:  # a fresh file: never through an existing link
            handle.write(content)


__all__ = ["to_disk", "from_disk", "to_bytes",
           "from_bytes", "name_cache_key", "set_option", "FORMAT_VERSION",
           "MANIFEST", "write_manifest", "REBUILD_PARTS", "pack_folder", "unpack_folder",
           "read_payload"]
