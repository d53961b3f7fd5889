"""OBO ontology loader (HP, DOID, MONDO, GO, ...), built on the maintained
`fastobo` parser.

Terms keep their synonyms with scope (EXACT / RELATED / BROAD / NARROW), their
definition, alt ids, namespace (as type: the term's own `namespace:`, else the
header's `default-namespace:`, so a KB merging DOID and HP tells a
'disease_ontology' term from a 'human_phenotype' one), ``is_a`` edges and every other
``relationship:`` (``part_of``, ...). Obsolete terms are dropped (and counted).
An ontology file often imports terms of other ontologies (HP mentions UBERON
terms, DOID mentions...): `prefixes` keeps only the ontology's own terms.
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from tqdm import tqdm

from ..errors import Errors, KBFormatError
from .concept import Concept
from .io import read_text
from .knowledge_base import KnowledgeBase

logger = logging.getLogger(__name__)

DEFAULT_SCOPES = ("EXACT", "RELATED", "BROAD", "NARROW")


def _read_obo(path: Path, encoding: Optional[str] = None):
    import fastobo

    text = read_text(path, encoding)  # E008, E016-E020: missing, compressed, encoded
    if not text.strip():
        raise KBFormatError(Errors.E021.format(path=path, what="OBO stanza"))
    try:
        return fastobo.loads(text)
    except SyntaxError as err:
        raise KBFormatError(Errors.E011.format(path=path, line=getattr(err, "lineno", "?"),
                                               problem=getattr(err, "msg", str(err))))


def load_obo(path: Union[str, Path], *, prefixes: Optional[Sequence[str]] = None,
             synonym_scopes: Sequence[str] = DEFAULT_SCOPES, name: Optional[str] = None,
             progress: bool = True, encoding: Optional[str] = None) -> KnowledgeBase:
    """Load an OBO 1.2/1.4 ontology (plain or .gz) into a KB.

    path (Union[str, Path]): The .obo or .obo.gz file.
    prefixes (Optional[Sequence[str]]): Keep only terms whose id starts with one of
        these (e.g. ['HP:']). None keeps every term.
    synonym_scopes (Sequence[str]): Synonym scopes to keep as synonyms.
    name (Optional[str]): Label for the KB.
    progress (bool): Show a progress bar over stanzas.
    RETURNS (KnowledgeBase): Live terms; counts of what was skipped are in
        kb.meta['load_report'].
    """
    import fastobo

    path = Path(path)
    document = _read_obo(path, encoding)
    kb = KnowledgeBase(name=name or path.name)
    default_namespace = [str(clause.namespace) for clause in document.header
                         if isinstance(clause, fastobo.header.DefaultNamespaceClause)][:1]
    keep_scopes = {s.upper() for s in synonym_scopes}
    report: Counter = Counter()
    first_seen: Dict[str, int] = {}
    for position, frame in enumerate(tqdm(document, desc=f"OBO {path.name}", unit=" stanzas",
                                          disable=not progress)):
        if not isinstance(frame, fastobo.term.TermFrame):
            report["non_term_stanzas"] += 1
            continue
        concept_id = str(frame.id)
        if prefixes is not None and not any(concept_id.startswith(p) for p in prefixes):
            report["other_prefix_terms"] += 1
            continue
        term_name: Optional[str] = None
        definition: Optional[str] = None
        namespace: List[str] = []
        synonyms: List[str] = []
        scopes: List[str] = []
        alt_ids: List[str] = []
        relations: List[Tuple[str, str]] = []
        obsolete = False
        for clause in frame:
            if isinstance(clause, fastobo.term.NameClause):
                term_name = str(clause.name)
            elif isinstance(clause, fastobo.term.DefClause):
                definition = str(clause.definition)
            elif isinstance(clause, fastobo.term.NamespaceClause):
                namespace.append(str(clause.namespace))
            elif isinstance(clause, fastobo.term.SynonymClause):
                scope = str(clause.synonym.scope).upper()
                if scope in keep_scopes:
                    synonyms.append(str(clause.synonym.desc))
                    scopes.append(scope)
                else:
                    report["synonyms_out_of_scope"] += 1
            elif isinstance(clause, fastobo.term.AltIdClause):
                alt_ids.append(str(clause.alt_id))
            elif isinstance(clause, fastobo.term.IsAClause):
                relations.append(("is_a", str(clause.term)))
            elif isinstance(clause, fastobo.term.RelationshipClause):
                relations.append((str(clause.typedef), str(clause.term)))
            elif isinstance(clause, fastobo.term.IsObsoleteClause):
                obsolete = bool(clause.obsolete)
        if obsolete:
            report["obsolete_terms"] += 1
            continue
        if term_name is None or not term_name.strip():
            raise KBFormatError(Errors.E003.format(path=path, line=f"stanza {position + 1}",
                                                   concept_id=concept_id))
        if any(target == concept_id for _, target in relations):
            raise KBFormatError(Errors.E014.format(path=path, line=f"stanza {position + 1}",
                                                   concept_id=concept_id, relation="is_a"))
        canonical = term_name.strip()
        kept_syn: List[str] = []
        kept_scopes: List[str] = []
        seen = {canonical}
        for synonym, scope in zip(synonyms, scopes):
            synonym = synonym.strip()
            if synonym and synonym not in seen:
                seen.add(synonym)
                kept_syn.append(synonym)
                kept_scopes.append(scope)
            else:
                report["duplicate_synonyms"] += 1
        kb.add(Concept(concept_id, canonical, tuple(kept_syn), tuple(kept_scopes),
                       tuple(namespace or default_namespace), definition, tuple(alt_ids), tuple(relations)),
               path=path, line=f"stanza {position + 1}", first_line=first_seen.get(concept_id))
        first_seen[concept_id] = position + 1
        report["terms"] += 1
    kb.finish_loading(path, "obo", filters=f"prefixes={prefixes}")
    kb.meta.update({"load_report": dict(report),
                    "prefixes": list(prefixes) if prefixes else None})
    logger.info("Loaded %d OBO terms from %s (%s)", len(kb), path, dict(report))
    return kb


__all__ = ["load_obo", "DEFAULT_SCOPES"]
