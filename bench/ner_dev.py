"""An NER's mentions on dev, as it finds them and after document consistency
(issue 73): each corpus's dev text is read raw by the NER once, then each variant
of `spacy_bioel.pipeline.consistency` runs over copies of its output, and strict P/R/F1
(spans only: one label) is scored against the gold mentions (`e2e`, with the
overlapping ones). Dev only: the variant kept is chosen here."""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import e2e
from .machine import where, where_line
from .e2e import NIL

VARIANTS: Dict[str, Tuple[bool, bool]] = {  # name -> (abbreviations, repeats)
    "as found": (False, False), "abbreviations": (True, False), "repeats": (False, True),
    "abbreviations + repeats": (True, True)}
LABEL = "Disease"
KEPT = "abbreviations"  # bioel_mention_consistency's defaults


def ner_only(nlp) -> List[str]:
    """The components of `nlp` up to and including its last `ner` (a linker or a
    consistency component after it does not run)."""
    names = nlp.pipe_names
    if "ner" not in names:
        from spacy_bioel.errors import BioELError, Errors

        raise BioELError(Errors.E198.format(text=str(names), why="the pipeline has no `ner`"))
    return names[:len(names) - names[::-1].index("ner")]


def default_linker(id_space: str):
    """The default pipeline's linker alone, writing ids in `id_space`."""
    from spacy_bioel.pipeline.embedded_default import default_pipeline
    from spacy_bioel.pipeline.loading import find_linker

    nlp = default_pipeline(ner=False)
    find_linker(nlp).set_option("id_space", id_space)
    return nlp


def evaluate(model: Path, corpora: Dict[str, Path], n_bootstrap: int = 1000,
             id_space: Optional[str] = None) -> Dict[str, Any]:
    """With `id_space`, the default pipeline's linker links each variant's mentions
    and document-level concept F1 in that vocabulary is scored too."""
    import spacy
    from spacy.tokens import Doc

    from spacy_bioel.cli import read_docs
    from spacy_bioel.pipeline.consistency import MentionConsistency

    nlp = spacy.load(model)
    keep = ner_only(nlp)
    linking = default_linker(id_space) if id_space else None
    report: Dict[str, Any] = {"model": str(model), "components": keep, "corpora": {},
                              "bootstrap": n_bootstrap, "id_space": id_space,
                              "where": where(f"spacy.load({model})")}
    with nlp.select_pipes(enable=keep):
        for name, path in corpora.items():
            gold_docs = read_docs([path])
            started = time.perf_counter()
            found = list(nlp.pipe([d.text for d in gold_docs], batch_size=32))
            seconds = time.perf_counter() - started
            row: Dict[str, Any] = {"data": str(path), "documents": len(gold_docs),
                                   "docs_per_s": len(gold_docs) / seconds if seconds else None,
                                   "variants": {}}
            made_consistent = {}
            for variant, (abbreviations, repeats) in VARIANTS.items():
                component = MentionConsistency(nlp, abbreviations=abbreviations, repeats=repeats)
                copies = made_consistent[variant] = [
                    component(Doc(doc.vocab).from_bytes(doc.to_bytes())) for doc in found]
                if linking is not None:
                    copies = list(linking.pipe(Doc(linking.vocab).from_bytes(d.to_bytes())
                                               for d in copies))
                results = [e2e.gold_result(gold, e2e.predicted_mentions(doc, None, LABEL), LABEL)
                           for gold, doc in zip(gold_docs, copies)]
                scored = e2e.scores(results, n_bootstrap)
                row["variants"][variant] = {**scored["ner"], "counts": dict(sorted(component.counts.items()))}
                if linking is not None:
                    row["variants"][variant]["documents"] = scored["documents"]
            if linking is not None:  # after the variant the shipped pipeline keeps
                row["linker_gate"] = linker_gate(made_consistent[KEPT], gold_docs, linking,
                                                 n_bootstrap)
            report["corpora"][name] = row
    return report


# the linker's probability a KB-name match needs to be added (`linker_gate`)
GATES = (0.0, 0.5, 0.9)


def linker_gate(found: List, gold_docs: List, linking, n_bootstrap: int) -> Dict[str, Any]:
    """What the linker's score adds to the NER's decision (issue 73, part 3): the
    KB-name matcher's longest matches that overlap no mention are linked with the
    mentions; each is kept when the linker gives it a concept with probability >=
    each of GATES; apart, the mentions the linker calls NIL are dropped. NER and
    document-level scores of each rule."""
    from spacy.tokens import Doc, Span

    from spacy_bioel.ner.kb_names import NameMatcher
    from spacy_bioel.pipeline.loading import find_linker

    linker = find_linker(linking)
    matcher = NameMatcher([name for _, name in linker.kb.names()])
    docs, own = [], []
    for doc in found:
        copy = Doc(linking.vocab).from_bytes(doc.to_bytes())
        taken = {i for ent in copy.ents for i in range(ent.start, ent.end)}
        extra = [Span(copy, s, e, LABEL) for s, e in matcher.longest(matcher.matches(copy), len(copy))
                 if not taken & set(range(s, e))]
        own.append({(ent.start_char, ent.end_char) for ent in copy.ents})
        copy.ents = sorted(list(copy.ents) + extra, key=lambda span: span.start)
        docs.append(copy)
    linked = list(linking.pipe(docs))
    rules = {f"+ KB-name matches linked with probability >= {gate}":
             (lambda mine, span, gate=gate: mine or (span.kb_id_ not in ("", NIL) and
                                                     float(span._.kb_prob or 0.0) >= gate))
             for gate in GATES}
    rules["- mentions linked to NIL"] = lambda mine, span: mine and span.kb_id_ not in ("", NIL)
    out: Dict[str, Any] = edge_rules(found, gold_docs, linker.kb, n_bootstrap)
    for rule, keep in rules.items():
        results = []
        for gold, doc, mine in zip(gold_docs, linked, own):
            predicted = {(s.start_char, s.end_char, LABEL): s.kb_id_ or NIL for s in doc.ents
                         if keep((s.start_char, s.end_char) in mine, s)}
            results.append(e2e.gold_result(gold, predicted, LABEL))
        scored = e2e.scores(results, n_bootstrap)
        out[rule] = {"ner": scored["ner"], "documents": scored["documents"]}
    return out


def edge_rules(found: List, gold_docs: List, kb, n_bootstrap: int) -> Dict[str, Any]:
    """A mention's edges moved to a name of the linker's KB: trimmed (its longest
    tail that is a name, when it is none) or extended (up to 2 words to its left,
    the longest stretch that is a name, never into the mention before it)."""
    from spacy_bioel.kb.normalize import normalize_text

    names = kb.alias_index

    def is_name(span) -> bool:
        return normalize_text(span.text) in names

    def moved(doc, rule: str) -> Dict:
        ents, out = list(doc.ents), {}
        for k, ent in enumerate(ents):
            best = ent
            if rule == "trim" and not is_name(ent):
                best = next((doc[i:ent.end] for i in range(ent.start + 1, ent.end)
                             if is_name(doc[i:ent.end])), ent)
            if rule == "extend":
                floor = max(ents[k - 1].end if k else 0, ent.start - 2)
                for i in range(ent.start - 1, floor - 1, -1):
                    if doc[i].is_alpha and is_name(doc[i:ent.end]):
                        best = doc[i:ent.end]
            out[(best.start_char, best.end_char, LABEL)] = NIL
        return out

    out: Dict[str, Any] = {}
    for rule, name in (("trim", "mentions trimmed to a KB name"),
                       ("extend", "mentions extended to a longer KB name")):
        results = [e2e.gold_result(gold, moved(doc, rule), LABEL) for gold, doc in zip(gold_docs, found)]
        out[name] = {"ner": e2e.scores(results, n_bootstrap)["ner"], "documents": None}
    return out


def _summed(report: Dict[str, Any]) -> Dict[str, Counter]:
    out: Dict[str, Counter] = {variant: Counter() for variant in VARIANTS}
    for row in report["corpora"].values():
        for variant, scored in row["variants"].items():
            out[variant].update(scored["counts"])
    return out


def markdown(report: Dict[str, Any], title: str) -> str:
    names = list(report["corpora"])
    lines = [f"# {title}", "", f"NER `{report['model']}` ({' + '.join(report['components'])}); "
             "strict F1 of its mentions on each dev set, spans only (one label), 95% intervals from "
             f"{report['bootstrap']} bootstrap resamples of the documents.", "",
             "| variant | " + " | ".join(f"{n} NER F1 (P / R)" + (
                 f" | {n} document F1 in {report['id_space']}" if report.get("id_space") else "")
                 for n in names) + " |",
             "|---|" + "---:|" * len(names) * (2 if report.get("id_space") else 1)]
    for variant in VARIANTS:
        cells = []
        for name in names:
            row = report["corpora"][name]["variants"][variant]
            cells.append(f"{100 * row['f']:.1f} ({100 * row['p']:.1f} / {100 * row['r']:.1f})")
            if report.get("id_space"):
                cells.append(f"{100 * row['documents']['f']:.1f}")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    lines += ["", "Added to the mentions found (all dev sets): " + "; ".join(
        f"{variant}: " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "nothing")
        for variant, counts in _summed(report).items() if variant != "as found") + ".",
              "", "NER speed: " + ", ".join(
        f"{n} {report['corpora'][n]['docs_per_s']:.1f} docs/s" for n in names) + "." + (
        f" Where: {where_line(report['where'])}." if report.get("where") else "")]
    if report.get("id_space"):
        lines += ["", "The linker's KB and score in the NER's decision (after the abbreviations):", "",
                  "| rule | " + " | ".join(f"{n} NER F1 (P / R) | {n} document F1" for n in names)
                  + " |", "|---|" + "---:|" * 2 * len(names)]
        for rule in report["corpora"][names[0]]["linker_gate"]:
            cells = []
            for name in names:
                row = report["corpora"][name]["linker_gate"][rule]
                documents = f"{100 * row['documents']['f']:.1f}" if row["documents"] else "not linked"
                cells += [f"{100 * row['ner']['f']:.1f} ({100 * row['ner']['p']:.1f} / "
                          f"{100 * row['ner']['r']:.1f})", documents]
            lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["VARIANTS", "evaluate", "markdown", "ner_only"]
