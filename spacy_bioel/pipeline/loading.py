"""Finding and loading bioel_linker pipelines (used by the CLI and the evaluation)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Union

from spacy.language import Language
from spacy.tokens import Doc

from ..errors import BioELError, Errors
from ..kb.knowledge_base import KnowledgeBase
from .linker import BioELLinker
from .serialize import REBUILD_PARTS


def find_linker(nlp: Language, name: Optional[str] = None) -> BioELLinker:
    """The pipeline's `bioel_linker` named `name` (default: the first). E163 if none."""
    linkers = [n for n, pipe in nlp.pipeline if isinstance(pipe, BioELLinker)]
    if not linkers or (name is not None and name not in linkers):
        raise BioELError(Errors.E163.format(names=nlp.pipe_names))
    return nlp.get_pipe(name or linkers[0])



def untrained_pipeline(kb: KnowledgeBase, encoder: str, embedding_cache: Optional[str] = None,
                       config: Optional[Dict[str, Any]] = None) -> Language:
    """A blank English pipeline whose untrained bioel_linker on `encoder` links
    against `kb`, initialized (every name encoded; through `embedding_cache`, a
    folder, when given). `config`: the linker's stage blocks and settings that
    replace the factory's (the one default, `defaults.py`)."""
    import spacy

    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config={
        "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": encoder},
        **(config or {})})
    if embedding_cache is not None:
        linker.index.embedding_cache = embedding_cache
    linker.set_kb(kb)
    nlp.initialize(lambda: [])
    return nlp


def locate_pipeline(name: Union[str, Path]) -> str:
    """`name` when it is a pipeline folder or an installed pipeline package; E247
    otherwise (a path that does not exist, or a file): a typo never falls back to
    another pipeline. RETURNS (str): the name, unchanged."""
    import spacy

    if Path(name).is_dir() or (not Path(name).exists() and spacy.util.is_package(str(name))):
        return str(name)
    raise BioELError(Errors.E247.format(name=name))


def load_pipeline(path: Union[str, Path], vocab: Any = None) -> Language:
    """spacy.load (with `vocab` to share, e.g. another pipeline's), with E247 for a path that is neither a pipeline folder nor an
    installed package, E240 for a config.cfg, meta.json or vocab/strings.json that
    does not parse and E231 for a folder holding a link out of it or a special file.

    A saved pipeline's config.cfg can name any function registered in spaCy's
    registries by the packages installed in the environment, as spaCy's own
    `spacy.load` allows: it cannot import a module or run code that no installed
    package registered. The linker's manifest covers the config (E233 when it
    changed after saving)."""
    import spacy
    from spacy.util import load_config

    from ..files import check_tree

    locate_pipeline(path)
    if Path(path).is_dir():
        check_tree(path)  # before spaCy reads config.cfg: no link out, no FIFO (E231)
        _read_checked(Path(path) / "meta.json", _read_meta)
    config_path = Path(path) / "config.cfg"
    if config_path.exists():
        _read_checked(config_path, lambda p: load_config(p, interpolate=False))
    try:
        return spacy.load(path, **({"vocab": vocab} if vocab is not None else {}))
    except (TypeError, AttributeError):  # spaCy reads vocab/strings.json unchecked
        strings = Path(path) / "vocab" / "strings.json"
        if Path(path).is_dir():
            _read_checked(strings, _read_strings)  # E240 when it is what failed
        raise


def _read_meta(path: Path) -> dict:
    import srsly

    meta = srsly.read_json(path)
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("lang", "version")):
        raise ValueError("not a JSON object with 'lang' and 'version' strings")
    return meta


def _read_strings(path: Path) -> None:
    import srsly

    strings = srsly.read_json(path)
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        raise ValueError("not a JSON list of strings")


def _read_checked(path: Path, read):
    """`read(path)`, any failure to parse it as E240 (a missing file is spaCy's to report)."""
    if not path.exists():
        return None
    try:
        return read(path)
    except BioELError:
        raise
    except Exception as err:  # configparser, confection, JSON and decoding errors alike
        raise BioELError(Errors.E240.format(path=path, problem=" ".join(
            f"{type(err).__name__}: {err}".split())[:200]))


def repair_pipeline(path: Union[str, Path], kb: Optional[KnowledgeBase] = None) -> Language:
    """Load a saved pipeline without its derived parts (the name index, the kNN
    datastore and an exported ONNX encoder; and the KB when `kb` replaces it),
    then re-create them from the weights, the KB and the training mentions (E176
    names this remedy; the ONNX graph is exported again when the pipeline is saved)."""
    parts = {"index", "datastore", "runtime"} | ({"kb"} if kb is not None else set())
    token = REBUILD_PARTS.set(frozenset(parts))
    try:
        nlp = load_pipeline(path)
    finally:
        REBUILD_PARTS.reset(token)
    for _, pipe in nlp.pipeline:
        if isinstance(pipe, BioELLinker):
            if kb is not None:
                pipe.set_kb(kb)
            pipe.refresh(force=True)
    return nlp


def load_with_config(path: Union[str, Path], config) -> Language:
    """A saved pipeline's files (vocab, components) under another config, e.g. an
    upgraded one or one with a stage swapped."""
    from spacy.util import load_model_from_config

    nlp = load_model_from_config(config, auto_fill=True)
    return nlp.from_disk(path, exclude=["config.cfg"])


# components that find entities: skipped when the linker reads gold spans
NER_COMPONENTS = ("ner", "entity_ruler", "span_ruler")
ANY_GROUP = "*"  # a component that writes doc.spans under a key it does not expose


def mention_targets(nlp: Language, name: str) -> Set[Optional[str]]:
    """Where component `name` writes the mentions it finds: None for `doc.ents`, a
    span group's key for `doc.spans[key]` (`ANY_GROUP` when it does not say which);
    empty for a component that finds none. Read from its factory's `assigns` (or its
    name: ner, entity_ruler, span_ruler) and its `key` / `annotate_ents` settings."""
    pipe = nlp.get_pipe(name)
    assigns = nlp.get_pipe_meta(name).assigns
    targets: Set[Optional[str]] = set()
    if name in ("ner", "entity_ruler") or "doc.ents" in assigns or getattr(pipe, "annotate_ents", False):
        targets.add(None)
    if name == "span_ruler" or any(a.startswith("doc.spans") for a in assigns):
        key = getattr(pipe, "key", None)
        targets.add(key if isinstance(key, str) else ANY_GROUP)
    return targets


def mention_finders(nlp: Language, linker: BioELLinker) -> List[str]:
    """The components before `linker` that find the mentions it links: an NER, ruler
    or span categoriser that writes `doc.ents` for a linker without `spans_key`, or
    its span group for one with (`mention_targets`). [] means the pipeline cannot read
    plain text (its mentions must be given)."""
    key = linker.cfg["spans_key"]
    names = nlp.pipe_names[:nlp.pipe_names.index(linker.name)]
    return [name for name in names if any(
        target == key or (key is not None and target == ANY_GROUP)
        for target in mention_targets(nlp, name))]


def check_mention_finders(nlp: Language, linker: BioELLinker) -> bool:
    """Whether the pipeline finds the mentions `linker` links; E249 when a component
    before it finds mentions but writes them where the linker does not read
    (`doc.ents` for a linker of a span group, or another group)."""
    if mention_finders(nlp, linker):
        return True
    key = linker.cfg["spans_key"]
    names = nlp.pipe_names[:nlp.pipe_names.index(linker.name)]
    elsewhere = {name: mention_targets(nlp, name) for name in names}
    elsewhere = {name: targets for name, targets in elsewhere.items() if targets}
    if not elsewhere:
        return False
    targets = {t for ts in elsewhere.values() for t in ts}
    where = sorted("doc.ents" if t is None else f"doc.spans[{t!r}]" for t in targets)
    keys = sorted(t for t in targets if t not in (None, ANY_GROUP))
    hint = ("spans_key = null, for doc.ents" if None in targets else
            f"spans_key = \"{keys[0]}\"" if keys else "the key of its span group")
    raise BioELError(Errors.E249.format(
        linker=linker.name, reads="doc.ents" if key is None else f"doc.spans[{key!r}]",
        finders=", ".join(f"'{n}'" for n in elsewhere),
        writes=("writes " if len(elsewhere) == 1 else "write ") + " and ".join(where),
        hint=hint))


def upstream_annotated(nlp: Language, linker: BioELLinker, docs: List[Doc]) -> List[Doc]:
    """`docs` (gold spans kept) through the components before `linker` that find
    no entities, e.g. the transformer a contextual mention tower listens to; the
    docs themselves when there are none."""
    names = nlp.pipe_names
    upstream = [n for n in names[:names.index(linker.name)] if not mention_targets(nlp, n)]
    if not upstream:
        return docs
    with nlp.select_pipes(enable=upstream):
        return list(nlp.pipe(docs))


__all__ = ["find_linker", "locate_pipeline", "load_pipeline", "untrained_pipeline", "load_with_config", "repair_pipeline",
           "upstream_annotated", "mention_finders", "mention_targets", "check_mention_finders",
           "NER_COMPONENTS"]
