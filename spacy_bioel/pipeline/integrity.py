"""Integrity of a saved linker directory: `manifest.json` lists the size and
SHA-256 of every file the component wrote, and loading checks it first. A
missing file is E156; a changed one E176, which names the file and says how to
re-create that part (re-save or retrain; copy the tokenizer files;
`repair-pipeline` for the derived index and datastore).

When the component is saved as part of a pipeline (its parent folder has a
meta.json that lists it), the manifest also covers the files spaCy wrote
before it: `../config.cfg`, the tokenizer and the folders of the components
before it byte for byte, and `../meta.json` by the keys that shape the
pipeline (`META_KEYS`: its language and components; `spacy package` rewrites
the descriptive rest, name, version and requirements, when it builds a wheel).
The vocab and the components after it are written later and are not covered.
A changed one of these is E233, but for `config.cfg`: editing it works as in
spaCy. The manifest keeps the config as it was saved, and a changed one loads
with W018, which names each setting that changed (`config_edits`); the
component applies the edited values over its saved ones (`EDITED`). A pipeline
whose cfg says a manifest was written and which has none is E232: deleting the
manifest does not turn verification off."""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import srsly

from ..errors import BioELError, Errors, Warnings, warn
from ..files import check_tree, member, replace_file, sha256_of

logger = logging.getLogger(__name__)
MANIFEST = "manifest.json"
# the key of `read_saved_cfg`'s result that holds the settings edited in config.cfg
# since the pipeline was saved ({dotted key: (saved value, value now)}; never saved)
EDITED = "_edited_config"

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
    "runtime": ("It is derived from the weights: `python -m spacy_bioel repair-pipeline "
                "{pipeline} NEW_DIR` exports the ONNX mention encoder again."),
    "encoder": ("Copy the tokenizer files and config.json of the encoder the pipeline was "
                "trained from (paths.encoder) into {component}/encoder, or re-save the "
                "pipeline from its training output, or retrain.")}


def damaged(path: Path, part: str, problem: str) -> BioELError:
    """E176 for `path`, a file of the component directory's `part` (its first path
    component: 'encoder' for encoder/tokenizer.json), with that part's remedy."""
    component = path.parent.parent if path.parent.name == part else path.parent
    remedy = REMEDIES.get(part, RESAVE).format(component=component, pipeline=component.parent)
    return BioELError(Errors.E176.format(path=path, problem=problem, remedy=remedy))


def pipeline_entries(path: Path) -> List[str]:
    """The entries of the pipeline folder around component folder `path` that spaCy
    wrote before the component (config.cfg, meta.json, tokenizer, the folders of
    earlier components), or [] when `path` is not a component of a saved pipeline."""
    meta_path = path.parent / "meta.json"
    if not meta_path.is_file() or not (path.parent / "config.cfg").is_file():
        return []
    try:
        meta = srsly.read_json(meta_path)
        order = list(meta.get("components") or meta.get("pipeline") or [])
    except (ValueError, TypeError, AttributeError):
        return []
    if path.name not in order:
        return []
    return ["config.cfg", "meta.json", "tokenizer"] + order[:order.index(path.name)]


# the meta.json keys the manifest covers (see the module docstring)
META_KEYS = ("lang", "pipeline", "components", "disabled")


def _meta_digest(path: Path) -> str:
    meta = srsly.read_json(path)
    if not isinstance(meta, dict):
        raise ValueError("meta.json is not a JSON object")
    shaping = {key: meta.get(key) for key in META_KEYS}
    return hashlib.sha256(srsly.json_dumps(shaping, sort_keys=True).encode("utf-8")).hexdigest()


def _listing(root: Path, prefix: str = "") -> Dict[str, Dict[str, object]]:
    if root.is_file():
        return {prefix.rstrip("/"): {"size": root.stat().st_size, "sha256": sha256_of(root)}}
    return {prefix + p.relative_to(root).as_posix(): {"size": p.stat().st_size, "sha256": sha256_of(p)}
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()
            and not (prefix == "" and p.relative_to(root).as_posix() == MANIFEST)}


def write_manifest(path: Path) -> None:
    """`manifest.json`: size and SHA-256 of every file the component saved, and of
    the pipeline's files written before it (`pipeline_entries`, as '../NAME')."""
    files = _listing(path)
    for entry in pipeline_entries(path):
        if entry == "meta.json":
            files["../meta.json"] = {"keys": list(META_KEYS), "sha256": _meta_digest(path.parent / entry)}
        elif (path.parent / entry).exists():
            files.update(_listing(path.parent / entry, f"../{entry}/"))
    if "../config.cfg" in files:  # kept to name the settings a user edits (W018)
        files["../config.cfg"]["text"] = (path.parent / "config.cfg").read_bytes().decode("utf-8")
    replace_file(path / MANIFEST, lambda p: srsly.write_json(p, {"version": 2, "files": files}))


def verify_manifest(path: Path, skip: Iterable[str] = (), required: bool = False,
                    later: Iterable[str] = ()) -> Dict[str, Tuple[Any, Any]]:
    """Check every file listed in `manifest.json` (E156 missing, E176 changed, E233
    a changed pipeline file around the component, W018 an edited config.cfg); a
    directory saved before manifests is not checked (logged), unless `required`
    (its cfg says it had one: E232). The files named in `later` are checked by size
    only: their reader compares the SHA-256 of the bytes it reads
    (`manifest_digest`, `check_digest`).
    RETURNS (Dict[str, Tuple[Any, Any]]): the settings edited in config.cfg since it
        was saved, {dotted key: (saved value, value now)} (`config_edits`)."""
    edits: Dict[str, Tuple[Any, Any]] = {}
    if not (path / MANIFEST).exists():
        if required:
            raise BioELError(Errors.E232.format(path=path, manifest=MANIFEST, pipeline=path.parent))
        logger.info("%s has no %s (saved by an older version): files not verified", path, MANIFEST)
        return edits
    try:
        files = srsly.read_json(path / MANIFEST)["files"]
        entries = [(name, _size(entry), str(entry["sha256"])) for name, entry in files.items()]
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as err:
        raise damaged(path / MANIFEST, MANIFEST, f"unreadable: {type(err).__name__}: {err}")
    if not entries:  # every saved component writes files: an empty list would verify nothing
        raise BioELError(Errors.E232.format(path=path, manifest=f"{MANIFEST} entry (its file "
                                            "list is empty)", pipeline=path.parent))
    saved_config = files.get("../config.cfg")
    if isinstance(saved_config, dict) and "text" in saved_config and (
            not isinstance(saved_config["text"], str) or hashlib.sha256(
                saved_config["text"].encode("utf-8")).hexdigest() != saved_config.get("sha256")):
        raise damaged(path / MANIFEST, MANIFEST, "its copy of config.cfg does not match the "
                      "config's checksum")
    skip, later = set(skip), set(later)
    in_pipeline = (path.parent / "meta.json").is_file()  # not a component folder copied alone
    for name, size, digest in entries:
        outside = name.startswith("../")
        part = name.split("/")[0]
        if part in skip or (outside and not in_pipeline):
            continue
        # a pipeline file around the component must still lie in the pipeline's folder
        target = member(path.parent, name[3:], str(path / MANIFEST)) if outside else \
            member(path, name, str(path / MANIFEST))
        if not target.is_file():
            raise BioELError(Errors.E156.format(path=target))
        if name == "../meta.json":
            problem = _meta_problem(target, digest)
        else:
            problem = (f"{target.stat().st_size} bytes, the manifest says {size}"
                       if target.stat().st_size != size else None if name in later else
                       "its SHA-256 differs from the manifest's" if sha256_of(target) != digest else None)
        if problem and name == "../config.cfg":  # edited, as spaCy users do
            text = files[name].get("text")
            edits = config_edits(text, target)
            if edits or text is None:
                _warn_edited(target, edits)
            else:  # comments or layout: nothing a setting reads
                logger.debug("%s was edited after saving; no setting changed", target)
        elif problem and outside:
            raise BioELError(Errors.E233.format(path=target, problem=problem, pipeline=path.parent))
        elif problem:
            raise damaged(target, part, problem)
    return edits


def config_edits(saved_text: Optional[str], current: Path) -> Dict[str, Tuple[Any, Any]]:
    """{dotted key: (saved value, value now)} of every setting that differs between
    the config saved with the pipeline (`saved_text`, kept in the manifest) and the
    config.cfg at `current` (uninterpolated, as written; a key only one has pairs
    with None). {} when `saved_text` is None (a manifest written before it was
    kept). E233 when `current` does not parse: spaCy would not load it either."""
    from spacy.util import dict_to_dot, load_config, load_config_from_str

    if saved_text is None:
        return {}
    try:
        now = dict_to_dot(dict(load_config(current, interpolate=False)))
    except Exception as err:  # confection raises its own error types
        raise BioELError(Errors.E233.format(path=current, problem=f"it does not parse: "
                                            f"{type(err).__name__}: {str(err)[:200]}",
                                            pipeline=current.parent))
    before = dict_to_dot(dict(load_config_from_str(saved_text, interpolate=False)))
    return {key: (before.get(key), now.get(key)) for key in sorted(set(before) | set(now))
            if before.get(key) != now.get(key)}


def seal(path: Path) -> Dict[str, Tuple[Any, Any]]:
    """Make the pipeline files around component folder `path` as they are now its
    own: the settings edited in config.cfg (`config_edits`) replace the saved ones
    in the component's `cfg` (its stage parameters, `stages.STAGE.KEY`, and its
    `settings.KEY`), then the manifest is written again (`seal-pipeline`).
    RETURNS (Dict[str, Tuple[Any, Any]]): the edits recorded."""
    from spacy.util import dict_to_dot, load_config

    entry = srsly.read_json(path / MANIFEST)["files"].get("../config.cfg") or {}
    config_path = path.parent / "config.cfg"
    edits = config_edits(entry.get("text"), config_path) if config_path.is_file() else {}
    if edits:
        resolved = dict_to_dot(dict(load_config(config_path, interpolate=True)))
        cfg = srsly.read_json(path / "cfg")
        prefix = f"components.{path.name}."
        for key in (k[len(prefix):] for k in edits if k.startswith(prefix)):
            parts = key.split(".")
            stage = cfg.get("stages", {}).get(parts[0]) if len(parts) == 2 else None
            if isinstance(stage, dict) and parts[1] in stage:
                stage[parts[1]] = resolved.get(prefix + key)
            elif len(parts) == 1 and key in (cfg.get("settings") or {}):
                cfg["settings"][key] = resolved.get(prefix + key)
        replace_file(path / "cfg", lambda p: srsly.write_json(p, cfg))
    write_manifest(path)
    return edits


def _warn_edited(path: Path, edits: Dict[str, Tuple[Any, Any]]) -> None:
    shown = "; ".join(f"{key}: {old!r} -> {new!r}" for key, (old, new) in list(edits.items())[:8])
    more = f"; and {len(edits) - 8} more" if len(edits) > 8 else ""
    warn(Warnings.W018.format(path=path, changes=(shown + more) if edits else
                              "which settings is not recorded: the pipeline was saved by an "
                              "older version", pipeline=path.parent))


def _size(entry: dict) -> int:
    """A manifest entry's size in bytes (-1 where it records none: '../meta.json')."""
    size = entry.get("size", -1)
    if isinstance(size, bool) or not isinstance(size, int) or size < -1:
        raise ValueError(f"size {size!r} is not a byte count")
    return size


def _meta_problem(path: Path, digest: str) -> Optional[str]:
    try:
        found = _meta_digest(path)
    except (ValueError, TypeError) as err:
        return f"not a JSON object: {type(err).__name__}"
    return None if found == digest else f"its {', '.join(META_KEYS)} differ from the saved ones"


def manifest_digest(path: Path, name: str) -> Optional[str]:
    """The SHA-256 that component folder `path`'s manifest lists for file `name`
    (None without a manifest or entry: a folder saved before manifests)."""
    try:
        entry = srsly.read_json(path / MANIFEST)["files"].get(name)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return str(entry["sha256"]) if isinstance(entry, dict) and "sha256" in entry else None


def check_digest(path: Path, part: str, digest: Optional[str], found: str) -> None:
    """E176 when the SHA-256 `found` of the bytes read from `path` is not the
    manifest's `digest` (None: nothing to compare)."""
    if digest is not None and found != digest:
        raise damaged(path, part, "its SHA-256 differs from the manifest's")


def read_saved_cfg(path: Path, skip: Iterable[str] = (), later: Iterable[str] = ()
                   ) -> Dict[str, object]:
    """The edge of loading a component folder: no link out of it and no special
    file (E231), its `cfg` (E156 missing, E176 not a JSON object), every file the
    manifest lists verified (E232 when the cfg says it had a manifest and it is gone;
    the files in `later` by size, see `verify_manifest`).
    RETURNS (Dict[str, object]): the saved cfg, with the settings edited in
        config.cfg since it was saved under `EDITED` when there are any."""
    check_tree(path)
    if not (path / "cfg").exists():
        raise BioELError(Errors.E156.format(path=path / "cfg"))
    try:
        saved = srsly.read_json(path / "cfg")
        if not isinstance(saved, dict):
            raise ValueError(f"a JSON {type(saved).__name__}")
    except ValueError as err:
        if (path / MANIFEST).exists():  # the manifest names the damaged file first
            verify_manifest(path, skip=skip)
        raise damaged(path / "cfg", "cfg", f"not a JSON object: {err}")
    edits = verify_manifest(path, skip=skip, required=saved.get("manifest") is True, later=later)
    if edits:
        saved[EDITED] = edits
    return saved


__all__ = ["MANIFEST", "EDITED", "config_edits", "seal", "write_manifest", "verify_manifest",
           "pipeline_entries", "read_saved_cfg", "damaged", "manifest_digest", "check_digest"]
