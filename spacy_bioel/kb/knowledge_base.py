"""The knowledge base: concepts, alternate-id resolution, the alias map, and a
compact versioned binary serialisation."""
from __future__ import annotations

import logging
import re
import zlib
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ..errors import BioELError, Errors, KBFormatError, Warnings
from .concept import Concept
from .normalize import normalize_text
from .store import ConceptStore, read_payload

logger = logging.getLogger(__name__)

KB_MAGIC = b"BIOELKB\x00"
KB_FORMAT_VERSION = 1
MAX_INFLATION = 50
NIL = "NIL"


# characters a concept id cannot hold: a gold id field reads '|' and '+' as composite
# separators (`ids.parse_gold_ids`), and white space or control characters split the
# columns of every text format ids are written to
_ID_SEPARATORS = "|+"
_BAD_ID_CHARACTER = re.compile(r"[\s|+\x00-\x1f\x7f-\x9f]")


def checked_id(concept_id: str, path: Optional[Union[str, Path]] = None,
               line: Optional[int] = None) -> str:
    """A concept or alternate id as the KB keeps it: white space around it stripped
    (`MESH: D001` in a MEDIC file is 'D001'); E250 for one that holds white space,
    a control character or a composite separator ('|', '+'). The one place every
    loader's ids pass through (`KnowledgeBase.add`)."""
    value = concept_id.strip()
    found = _BAD_ID_CHARACTER.search(value)
    if found is not None:
        bad = found.group()
        what = ("white space" if bad.isspace() else f"the composite separator {bad!r}"
                if bad in _ID_SEPARATORS else f"the control character {bad!r}")
        raise KBFormatError(Errors.E250.format(path=path or "<input>", line=line or "?",
                                               concept_id=concept_id, problem=f"holds {what}"))
    return value


class KnowledgeBase:
    """A biomedical knowledge base of `Concept` records.

    Concept ids are unique; alternate ids resolve to their primary id
    (`resolve`). Names (canonical + synonyms) are indexed by their normalised
    form (`normalize_text`) in an alias map that returns every concept a name
    can denote (ambiguous names map to several concepts).

    A KB read from a file keeps its concepts packed (`kb.store`): reading one
    decodes it, and returns a new, equal `Concept` each time.

    strip_prefixes (Sequence[str]): Prefixes that `resolve` may strip from a
        query id ("MESH:" lets 'MESH:D009203' resolve to 'D009203').
    name (str): A label for reports (e.g. 'MEDIC 2012').

    Example:
        >>> kb = KnowledgeBase(name="toy")
        >>> kb.add(Concept("D1", "Colorectal cancer", synonyms=("CRC",)))
        >>> kb.lookup_alias("crc")
        ['D1']
    """

    def __init__(self, *, strip_prefixes: Sequence[str] = (), name: str = "") -> None:
        self.name = name
        self.strip_prefixes: Tuple[str, ...] = tuple(strip_prefixes)
        self.meta: Dict[str, object] = {}
        self._concepts = ConceptStore()  # concept id -> Concept (a loaded KB's kept packed: `store`)
        self._alt_to_primary: Dict[str, str] = {}
        self._alias_index: Optional[Dict[str, List[str]]] = None

    # -- building ---------------------------------------------------------
    def add(self, concept: Concept, *, path: Optional[Union[str, Path]] = None,
            line: Optional[int] = None, first_line: Optional[int] = None) -> None:
        """Add a concept. Raises E002 on a duplicate id, E003 on an empty name and
        E022 on an empty, blank or NIL id.

        concept (Concept): The record to add.
        path, line: Where the record came from, for error messages.
        """
        if not isinstance(concept.concept_id, str) or not concept.concept_id.strip() or \
                concept.concept_id.strip() == NIL:
            raise KBFormatError(Errors.E022.format(path=path or "<input>", line=line or "?",
                                                   concept_id=concept.concept_id,
                                                   name=concept.canonical_name))
        concept_id = checked_id(concept.concept_id, path, line)
        alt_ids = tuple(dict.fromkeys(checked_id(a, path, line) for a in concept.alt_ids
                                      if isinstance(a, str) and a.strip()))
        if concept_id != concept.concept_id or alt_ids != concept.alt_ids:
            concept = replace(concept, concept_id=concept_id, alt_ids=alt_ids)
        if not concept.canonical_name or not concept.canonical_name.strip():
            raise KBFormatError(Errors.E003.format(path=path or "<input>", line=line or "?",
                                                   concept_id=concept.concept_id))
        if concept.concept_id in self._concepts:
            raise KBFormatError(Errors.E002.format(
                path=path or "<input>", line=line or "?", concept_id=concept.concept_id,
                first_line=first_line or "?"))
        self._concepts[concept.concept_id] = concept
        self._alias_index = None

    def add_alt_id(self, alt_id: str, concept_id: str) -> bool:
        """Map `alt_id` to `concept_id`. Returns False (and keeps the first
        mapping) if `alt_id` already maps to another concept; callers count these."""
        if alt_id == concept_id:
            return True
        owner = self._alt_to_primary.get(alt_id)
        if owner is not None and owner != concept_id:
            return False
        self._alt_to_primary[alt_id] = concept_id
        return True

    def finalize_alt_ids(self, path: Optional[Union[str, Path]] = None) -> Dict[str, int]:
        """Register every concept's alt ids; conflicts are counted and reported.

        An alt id that is another concept's primary id, or already an alt id of
        another concept, keeps its first meaning (primary ids win).
        RETURNS (Dict[str, int]): counts of 'alt_ids', 'conflicts_with_primary'
            and 'ambiguous_alt_ids'.
        """
        counts = Counter()
        examples: List[str] = []
        for concept in self._concepts.values():
            for alt in concept.alt_ids:
                counts["alt_ids"] += 1
                if alt in self._concepts and alt != concept.concept_id:
                    counts["conflicts_with_primary"] += 1
                    examples.append(f"{alt}->{concept.concept_id}")
                elif not self.add_alt_id(alt, concept.concept_id):
                    counts["ambiguous_alt_ids"] += 1
                    examples.append(f"{alt}->{concept.concept_id}")
        skipped = counts["conflicts_with_primary"] + counts["ambiguous_alt_ids"]
        if skipped:
            logger.warning(Warnings.W001.format(
                count=skipped, what="alternate id mapping(s)", path=path or "<input>",
                reason=("the alternate id already names another concept, so it keeps "
                        f"its first meaning; e.g. {', '.join(examples[:3])}")))
        self.meta["alt_id_report"] = dict(counts)
        return dict(counts)

    def finish_loading(self, path: Union[str, Path], fmt: str, filters: str = "none") -> None:
        """End of a loader: E012 if nothing was loaded, register alt ids (conflicts
        counted), record the source and format in `meta`, log the count."""
        if not len(self):
            raise BioELError(Errors.E012.format(path=path, filters=filters))
        self.finalize_alt_ids(path)
        self.meta.update({"source": str(path), "format": fmt})
        logger.info("Loaded %d concepts (%s) from %s", len(self), fmt, path)

    # -- lookup -----------------------------------------------------------
    def __len__(self) -> int:
        return len(self._concepts)

    def __contains__(self, concept_id: object) -> bool:
        return isinstance(concept_id, str) and self.resolve(concept_id) is not None

    def __iter__(self) -> Iterator[Concept]:
        return iter(self._concepts.values())

    def __getitem__(self, concept_id: str) -> Concept:
        primary = self.resolve(concept_id)
        if primary is None:
            raise KeyError(Errors.E006.format(concept_id=concept_id))
        return self._concepts[primary]

    def get(self, concept_id: str, default: Optional[Concept] = None) -> Optional[Concept]:
        primary = self.resolve(concept_id)
        return default if primary is None else self._concepts[primary]

    def field_values(self, field: str, concept_ids: Iterable[str]) -> List:
        """RETURNS (List): each concept's value of one field, by its column name in a
        KB file ("types", "xrefs", "synonyms", ...: `store.FIELDS`), decoding no
        other field (the linker reads each linked concept's "xrefs" so). Raises
        KeyError (E006) for an id that is not a primary one."""
        try:
            return self._concepts.field_values(field, concept_ids)
        except KeyError as err:
            raise KeyError(Errors.E006.format(concept_id=err.args[0])) from None

    @property
    def concept_ids(self) -> List[str]:
        return list(self._concepts)

    @property
    def alt_ids(self) -> Dict[str, str]:
        """RETURNS (Dict[str, str]): alternate id -> primary id."""
        return dict(self._alt_to_primary)

    def resolve(self, concept_id: str) -> Optional[str]:
        """Map a primary or alternate id to the primary id, or None if unknown.

        Whitespace is stripped and the KB's `strip_prefixes` are tried, so
        ' MESH:C535662' resolves to 'C535662' in a MEDIC KB.
        """
        query = concept_id.strip()
        candidates = [query]
        for prefix in self.strip_prefixes:
            if query.startswith(prefix):
                candidates.append(query[len(prefix):].strip())
        for candidate in candidates:
            if candidate in self._concepts:
                return candidate
            primary = self._alt_to_primary.get(candidate)
            if primary is not None:
                return primary
        return None

    def names(self) -> Iterator[Tuple[str, str]]:
        """Yield (concept_id, name) for every distinct normalised name of every
        concept, canonical name first. Names that normalise to "" are skipped."""
        for concept_id, name, _ in self.keyed_names():
            yield concept_id, name

    def keyed_names(self) -> Iterator[Tuple[str, str, str]]:
        """`names()` with each name's `normalize_text` key (normalised once)."""
        for concept_id, canonical, synonyms in self._concepts.names():  # decodes only names
            seen = set()
            for name in (canonical, *synonyms):
                key = normalize_text(name)
                if key and key not in seen:
                    seen.add(key)
                    yield concept_id, name, key

    @property
    def alias_index(self) -> Dict[str, List[str]]:
        """RETURNS (Dict[str, List[str]]): normalised name -> concept ids (KB order)."""
        if self._alias_index is None:
            index: Dict[str, List[str]] = {}
            for concept_id, name in self.names():
                ids = index.setdefault(normalize_text(name), [])
                if concept_id not in ids:
                    ids.append(concept_id)
            self._alias_index = index
        return self._alias_index

    def lookup_alias(self, text: str) -> List[str]:
        """RETURNS (List[str]): concepts having a name equal to `text` after normalisation."""
        return list(self.alias_index.get(normalize_text(text), []))

    # -- derived KBs ------------------------------------------------------
    def filtered(self, keep: Iterable[str], *, name: Optional[str] = None) -> "KnowledgeBase":
        """RETURNS (KnowledgeBase): a KB with only the concepts whose ids are in `keep`."""
        keep_set = set(keep)
        out = KnowledgeBase(strip_prefixes=self.strip_prefixes, name=name or self.name)
        out.meta = dict(self.meta)
        for concept_id in self._concepts:
            if concept_id in keep_set:
                out._concepts.copy_from(self._concepts, concept_id)
        for alt, primary in self._alt_to_primary.items():
            if primary in out._concepts:
                out._alt_to_primary[alt] = primary
        return out

    def without_synonyms(self, *, name: Optional[str] = None) -> "KnowledgeBase":
        """RETURNS (KnowledgeBase): the same concepts with canonical names only
        (the OBO-syn protocol: synonyms are the queries, the KB keeps names)."""
        out = KnowledgeBase(strip_prefixes=self.strip_prefixes, name=name or self.name)
        out.meta = dict(self.meta)
        for concept in self._concepts.values():
            out._concepts[concept.concept_id] = replace(concept, synonyms=(), synonym_scopes=())
        out._alt_to_primary = dict(self._alt_to_primary)
        return out

    @classmethod
    def merge(cls, kbs: Sequence["KnowledgeBase"], *, name: str = "",
              label_untyped: bool = True) -> "KnowledgeBase":
        """Merge KBs with disjoint concept ids (e.g. DOID + HP) into one.

        kbs (Sequence[KnowledgeBase]): The KBs, in order; concept order is kept.
        name (str): The merged KB's label (default: the names joined by ' + ').
        label_untyped (bool): Give a concept without types its source KB's name
            as type, so a semantic-type filter can still tell the sources apart.
        RETURNS (KnowledgeBase): Raises E015 when a concept id (or an alternate id)
            is in two of them.
        """
        out = cls(strip_prefixes=tuple(dict.fromkeys(p for kb in kbs for p in kb.strip_prefixes)),
                  name=name or " + ".join(kb.name for kb in kbs))
        source: Dict[str, str] = {}
        for kb in kbs:
            for concept in kb:
                if concept.concept_id in out._concepts:
                    raise BioELError(Errors.E015.format(
                        concept_id=concept.concept_id, first=source[concept.concept_id],
                        second=kb.name))
                if label_untyped and not concept.types:
                    concept = replace(concept, types=(kb.name,))
                out._concepts[concept.concept_id] = concept
                source[concept.concept_id] = kb.name
        for kb in kbs:
            for alt, primary in kb._alt_to_primary.items():
                if alt in out._concepts or out._alt_to_primary.get(alt, primary) != primary:
                    raise BioELError(Errors.E015.format(concept_id=alt, first=source.get(alt, "?"),
                                                        second=kb.name))
                out._alt_to_primary[alt] = primary
        out.meta = {"merged": [{"name": kb.name, "concepts": len(kb), **{
            k: v for k, v in kb.meta.items() if k in ("source", "format")}} for kb in kbs]}
        return out

    def stats(self) -> Dict[str, int]:
        """RETURNS (Dict[str, int]): counts of concepts, names, synonyms, alt ids, relations."""
        n_syn = sum(len(c.synonyms) for c in self._concepts.values())
        return {
            "concepts": len(self._concepts),
            "synonyms": n_syn,
            "names": len(self._concepts) + n_syn,
            "distinct_normalised_names": len(self.alias_index),
            "alt_ids": len(self._alt_to_primary),
            "relations": sum(len(c.relations) for c in self._concepts.values()),
            "with_definition": sum(1 for c in self._concepts.values() if c.definition),
            "xrefs": sum(len(c.xrefs) for c in self._concepts.values()),
            "with_xrefs": sum(1 for c in self._concepts.values() if c.xrefs),
        }

    # -- serialisation ----------------------------------------------------
    def to_bytes(self) -> bytes:
        """Serialise to the compact binary KB format (magic, version, zlib(msgpack))."""
        body = zlib.compress(self._packed(), 6)
        return KB_MAGIC + KB_FORMAT_VERSION.to_bytes(2, "little") + body

    def digest(self) -> str:
        """SHA-256 of everything `to_bytes` writes, without its compression (a cache
        key: equal for equal KBs, whatever file they were read from)."""
        import hashlib

        return hashlib.sha256(self._packed()).hexdigest()

    @staticmethod
    def file_digest(path: Union[str, Path]) -> str:
        """`digest()` of the KB in a file (or an embedded KB's handle) without building
        it: the SHA-256 of its inflated payload, which `to_bytes` wrote from `_packed`,
        so equal to the loaded KB's digest (a file written otherwise only gives another
        key). Raises E004, E005 and E013 as `from_disk` does for the header and body."""
        import hashlib

        from .handles import resolve_kb_path
        from .io import check_file

        path = check_file(resolve_kb_path(path))
        body = _body(path.read_bytes(), path)
        try:
            return hashlib.sha256(_inflate(body)).hexdigest()
        except (zlib.error, ValueError) as err:
            raise BioELError(Errors.E013.format(path=path, problem=f"{type(err).__name__}: {err}"))

    def _packed(self) -> bytes:
        """The msgpack payload of `to_bytes`."""
        concepts = list(self._concepts.values())
        payload = {
            "name": self.name,
            "strip_prefixes": list(self.strip_prefixes),
            "meta": self.meta,
            "ids": [c.concept_id for c in concepts],
            "names": [c.canonical_name for c in concepts],
            "synonyms": [list(c.synonyms) for c in concepts],
            "scopes": [list(c.synonym_scopes) for c in concepts],
            "types": [list(c.types) for c in concepts],
            "definitions": [c.definition for c in concepts],
            "alt_ids": [list(c.alt_ids) for c in concepts],
            "relations": [[list(r) for r in c.relations] for c in concepts],
            "alt_map": self._alt_to_primary,
        }
        if any(c.xrefs for c in concepts):  # only then: the digest of a KB without any stays
            payload["xrefs"] = [list(c.xrefs) for c in concepts]
        import srsly

        return srsly.msgpack_dumps(payload)

    @classmethod
    def from_bytes(cls, data: bytes, *, path: Union[str, Path] = "<bytes>") -> "KnowledgeBase":
        """Load a KB written by `to_bytes`. Raises E004 (not a KB), E005 (format
        version) or E013 (truncated / corrupted)."""
        body = _body(data, path)
        try:
            header, ids, columns = read_payload(_inflate(body))
            kb = cls(strip_prefixes=header["strip_prefixes"], name=header["name"])
            kb.meta = dict(header["meta"])
            if len(set(ids)) != len(ids):
                raise ValueError("duplicate concept ids")
            kb._concepts = ConceptStore(columns, ids)
            kb._alt_to_primary = dict(header["alt_map"])
            if any(target not in kb._concepts for target in kb._alt_to_primary.values()):
                raise ValueError("an alternate id points to no concept")
        except (zlib.error, KeyError, ValueError, TypeError, IndexError, AttributeError) as err:
            raise BioELError(Errors.E013.format(path=path, problem=f"{type(err).__name__}: {err}"))
        return kb

    def to_disk(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.to_bytes())

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "KnowledgeBase":
        """Load a KB file, or a KB shipped with the package by handle
        (`embedded:doid`; see `kb.handles`)."""
        from .handles import resolve_kb_path
        from .io import check_file

        path = check_file(resolve_kb_path(path))  # E008 missing, E016 not a file
        return cls.from_bytes(path.read_bytes(), path=path)

    def __repr__(self) -> str:
        return f"<KnowledgeBase {self.name!r}: {len(self)} concepts>"


def _body(data: bytes, path: Union[str, Path]) -> bytes:
    """The compressed body of a KB file's bytes: E004 without the magic, E005 for
    another format version."""
    if not data.startswith(KB_MAGIC):
        raise BioELError(Errors.E004.format(path=path))
    version = int.from_bytes(data[len(KB_MAGIC):len(KB_MAGIC) + 2], "little")
    if version != KB_FORMAT_VERSION:
        raise BioELError(Errors.E005.format(path=path, found=version, expected=KB_FORMAT_VERSION))
    return data[len(KB_MAGIC) + 2:]


def _inflate(body: bytes) -> bytes:
    """zlib-decompress a KB body, refusing one that inflates past MAX_INFLATION times
    its size (+ 64 MB): a real KB's msgpack compresses a few times, a crafted stream
    a thousand times (ValueError, reported as E013, before the memory is spent)."""
    limit = 64 * 2 ** 20 + MAX_INFLATION * len(body)
    inflater = zlib.decompressobj()
    out = inflater.decompress(body, limit + 1)
    if len(out) > limit:
        raise ValueError(f"the body inflates to more than {limit} bytes "
                         f"({MAX_INFLATION}x its size + 64 MB)")
    if not inflater.eof:
        raise ValueError("the compressed body is truncated")
    return out


__all__ = ["KnowledgeBase", "NIL", "KB_FORMAT_VERSION"]
