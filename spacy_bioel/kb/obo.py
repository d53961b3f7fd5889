"""OBO ontology loader (HP, DOID, MONDO, GO, ...), built on the maintained
`fastobo` parser.

Terms keep their synonyms with scope (EXACT / RELATED / BROAD / NARROW), their
definition, alt ids, namespace (as type: the term's own `namespace:`, else the
header's `default-namespace:`, so a KB merging DOID and HP tells a
'disease_ontology' term from a 'human_phenotype' one), ``is_a`` edges and every other
``relationship:`` (``part_of``, ...). Obsolete terms are dropped by default,
self-loops and the is_a edges that close a cycle always (all counted).
Clauses the OBO grammar rejects are repaired or skipped (`obo_text`), counted
by tag and listed by line in `kb.meta['load_report']`.
An ontology file often imports terms of other ontologies (HP mentions UBERON
terms, DOID mentions...): `prefixes` keeps only the ontology's own terms.
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..errors import Errors, KBFormatError
from .concept import Concept
from .graph import cycle_edges
from ..validation import as_choice
from .io import read_text
from .knowledge_base import KnowledgeBase
from .obo_text import Repair, read_obo_frames

logger = logging.getLogger(__name__)

DEFAULT_SCOPES = ("EXACT", "RELATED", "BROAD", "NARROW")
MAX_LISTED = 100  # rejected clauses listed by line in the load report


def load_obo(path: Union[str, Path], *, prefixes: Optional[Sequence[str]] = None,
             synonym_scopes: Sequence[str] = DEFAULT_SCOPES, name: Optional[str] = None,
             progress: bool = True, encoding: Optional[str] = None,
             include_obsolete: bool = False) -> KnowledgeBase:
    """Load an OBO 1.2/1.4 ontology (plain or .gz) into a KB, tolerating the
    clauses real releases contain that the OBO grammar rejects (`obo_text`).

    path (Union[str, Path]): The .obo or .obo.gz file.
    prefixes (Optional[Sequence[str]]): Keep only terms whose id starts with one of
        these (e.g. ['HP:']). None keeps every term.
    synonym_scopes (Sequence[str]): Synonym scopes to keep as synonyms (of EXACT,
        RELATED, BROAD, NARROW, in any case; another is E175).
    name (Optional[str]): Label for the KB.
    progress (bool): Show a progress bar over stanzas.
    encoding (Optional[str]): The file's encoding (default: detected).
    include_obsolete (bool): Keep terms marked `is_obsolete: true`.
    RETURNS (KnowledgeBase): The terms. `kb.meta['load_report']` counts terms,
        synonyms, relations by type and everything skipped: clauses repaired or
        skipped by tag (with their lines in `rejected_clauses`), obsolete and
        nameless terms, self-loops and the is_a edges dropped to break cycles.
    """
    import fastobo

    path = Path(path)
    text = read_text(path, encoding)  # E008, E016-E020: missing, compressed, encoded
    if not text.strip():
        raise KBFormatError(Errors.E021.format(path=path, what="OBO stanza"))
    header, frames, repairs = read_obo_frames(text, path, progress)
    default_namespace = [str(clause.namespace) for clause in header
                         if isinstance(clause, fastobo.header.DefaultNamespaceClause)][:1]
    keep_scopes = {as_choice("synonym_scopes", str(s).upper(), DEFAULT_SCOPES) for s in synonym_scopes}
    report: Counter = Counter({"obsolete_terms": 0, "self_loops_dropped": 0,
                               "cycle_edges_dropped": 0, "terms_without_name": 0})
    terms: List[dict] = []
    for line, frame in frames:
        if not isinstance(frame, fastobo.term.TermFrame):
            report["non_term_stanzas"] += 1
            continue
        concept_id = str(frame.id)
        if prefixes is not None and not any(concept_id.startswith(p) for p in prefixes):
            report["other_prefix_terms"] += 1
            continue
        term = _read_term(frame, concept_id, keep_scopes, report)
        if term["obsolete"] and not include_obsolete:
            report["obsolete_terms"] += 1
            continue
        if not term["canonical_name"]:
            report["terms_without_name"] += 1
            logger.warning("%s, line %d: term '%s' has no name: skipped", path, line, concept_id)
            continue
        term["line"] = line
        term["types"] = term["types"] or tuple(default_namespace)
        terms.append(term)
    kb = KnowledgeBase(name=name or path.name)
    _drop_cycles(terms, report, path)
    first_seen: Dict[str, int] = {}
    for term in terms:
        line, obsolete = term.pop("line"), term.pop("obsolete")
        report["obsolete_terms_kept"] += obsolete
        kb.add(Concept(**term), path=path, line=line, first_line=first_seen.get(term["concept_id"]))
        first_seen[term["concept_id"]] = line
        report["terms"] += 1
        report["synonyms"] += len(term["synonyms"])
    relations = Counter(r for c in kb for r, _ in c.relations)
    kb.finish_loading(path, "obo", filters=f"prefixes={prefixes}")
    load_report: Dict[str, object] = dict(report)
    load_report.update(_repair_report(repairs, path))
    load_report["relations"] = dict(sorted(relations.items()))
    kb.meta.update({"load_report": load_report,
                    "prefixes": list(prefixes) if prefixes else None})
    logger.info("Loaded %d OBO terms from %s (%s)", len(kb), path, load_report)
    return kb


def _read_term(frame, concept_id: str, keep_scopes: set, report: Counter) -> dict:
    """The Concept fields of one [Term] frame (plus its obsolete flag)."""
    import fastobo

    term_name, definition = "", None
    namespace: List[str] = []
    synonyms: List[Tuple[str, str]] = []
    alt_ids: List[str] = []
    xrefs: List[str] = []
    relations: List[Tuple[str, str]] = []
    obsolete = False
    for clause in frame:
        if isinstance(clause, fastobo.term.NameClause):
            term_name = str(clause.name).strip()
        elif isinstance(clause, fastobo.term.DefClause):
            definition = str(clause.definition)
        elif isinstance(clause, fastobo.term.NamespaceClause):
            namespace.append(str(clause.namespace))
        elif isinstance(clause, fastobo.term.SynonymClause):
            scope = str(clause.synonym.scope).upper()
            if scope in keep_scopes:
                synonyms.append((str(clause.synonym.desc).strip(), scope))
            else:
                report["synonyms_out_of_scope"] += 1
        elif isinstance(clause, fastobo.term.AltIdClause):
            alt_ids.append(str(clause.alt_id))
        elif isinstance(clause, fastobo.term.XrefClause):
            xref = str(clause.xref.id).strip()
            if ":" in xref and xref not in xrefs:
                xrefs.append(xref)
            else:
                report["xrefs_skipped"] += 1  # no prefix, or a repeat
        elif isinstance(clause, fastobo.term.IsAClause):
            relations.append(("is_a", str(clause.term)))
        elif isinstance(clause, fastobo.term.RelationshipClause):
            relations.append((str(clause.typedef), str(clause.term)))
        elif isinstance(clause, fastobo.term.IsObsoleteClause):
            obsolete = bool(clause.obsolete)
    kept = [(r, target) for r, target in relations if target != concept_id]
    report["self_loops_dropped"] += len(relations) - len(kept)
    kept_syn: List[str] = []
    kept_scopes: List[str] = []
    seen = {term_name}
    for synonym, scope in synonyms:
        if synonym and synonym not in seen:
            seen.add(synonym)
            kept_syn.append(synonym)
            kept_scopes.append(scope)
        else:
            report["duplicate_synonyms"] += 1
    return {"concept_id": concept_id, "canonical_name": term_name, "synonyms": tuple(kept_syn),
            "synonym_scopes": tuple(kept_scopes), "types": tuple(namespace),
            "definition": definition, "alt_ids": tuple(alt_ids), "relations": tuple(kept),
            "xrefs": tuple(xrefs), "obsolete": obsolete}


def _drop_cycles(terms: List[dict], report: Counter, path: Path) -> None:
    """Drop the is_a edges that close a cycle (in place), counted and logged."""
    parents = {t["concept_id"]: [p for r, p in t["relations"] if r == "is_a"] for t in terms}
    back = set(cycle_edges([t["concept_id"] for t in terms], parents))
    if not back:
        return
    for term in terms:
        term["relations"] = tuple(e for e in term["relations"]
                                  if not (e[0] == "is_a" and (term["concept_id"], e[1]) in back))
    report["cycle_edges_dropped"] = len(back)
    logger.warning("%s: dropped %d is_a edge(s) that close a cycle: %s", path, len(back),
                   ", ".join(f"{c} is_a {p}" for c, p in sorted(back)[:5]))


def _repair_report(repairs: List[Repair], path: Path) -> Dict[str, object]:
    """Counts by tag of the clauses the OBO grammar rejects, their first lines, and a warning."""
    by_action = {action: dict(Counter(r.tag for r in repairs if r.action == action))
                 for action in ("repaired", "skipped")}
    if repairs:
        logger.warning("%s: %d clause(s) the OBO grammar rejects: repaired %s, skipped %s; lines %s",
                       path, len(repairs), by_action["repaired"] or "none",
                       by_action["skipped"] or "none",
                       ", ".join(str(r.line) for r in repairs[:10]) + (" ..." if len(repairs) > 10 else ""))
    return {"clauses_repaired": by_action["repaired"], "clauses_skipped": by_action["skipped"],
            "rejected_clauses": [{"line": r.line, "tag": r.tag, "action": r.action,
                                  "problem": r.problem} for r in repairs[:MAX_LISTED]]}


__all__ = ["load_obo", "DEFAULT_SCOPES"]
