"""`link`: find and link the mentions of a text (or its [bracketed] ones) and print
concept, name, score."""
from __future__ import annotations

import typer

from ..errors import BioELError, Errors
from ..kb.embedded import EMBEDDED_KBS
from ..pipeline.text import parse_bracketed, preview
from ._app import DEFAULT_PIPELINE, app, setup_logging

SAMPLE_TEXT = (
    "Germline mutations of the APC gene cause familial adenomatous polyposis (FAP), "
    "an autosomal dominant predisposition to colorectal carcinomas. Some carriers also "
    "develop desmoid tumours, and a few present with hepatoblastoma in childhood; "
    "type II diabetes and heart attack were recorded as comorbidities."
)
DEFAULT_KB = EMBEDDED_KBS["doid"]
DEFAULT_KB_HANDLE = "embedded:doid"  # shown in --help, resolved by KnowledgeBase.from_disk


# the --linker values that name no saved pipeline
BUILT_IN = (DEFAULT_PIPELINE, "exact", "tfidf")


@app.command("link")
def link(
    text: str = typer.Argument(SAMPLE_TEXT, help="Plain text (the pipeline's NER finds the mentions: the shipped disease NER by default) or text whose mentions are in [brackets] (then those are linked, and only those); - reads it from standard input"),
    kb_path: str = typer.Option(DEFAULT_KB_HANDLE, "--kb", help="KB file, or embedded:doid (the Disease Ontology KB shipped in the package)"),
    label: str = typer.Option("Disease", "--label", help="Entity label of the [bracketed] mentions (as in the corpora and the visualize page)"),
    linker: str = typer.Option("bioel", "--linker", help="bioel (bioel_linker, embedded MiniLM or --encoder) | a trained pipeline directory or installed package | tfidf | exact"),
    encoder: str = typer.Option("embedded:all-MiniLM-L6-v2", "--encoder", help="bioel: encoder directory or hub name"),
    top: int = typer.Option(3, "--top", help="Candidates shown per mention"),
    id_space: str = typer.Option("", "--id-space", help="Write ids in this vocabulary of the KB's cross-references (UMLS, MESH, OMIM, ICD10CM, NCI, ORDO, ...): NIL for a concept without one; bioel and saved pipelines"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Find the disease mentions of TEXT (or take its [bracketed] ones) and link
    them against a KB; print each one's concept id, canonical name and score
    (plus runner-up candidates). The default is the shipped disease NER before
    the bioel_linker with the embedded MiniLM encoder, untrained: the first call
    encodes the KB's names with the int8 mention tower shipped in the package
    (30-90 s for the embedded KB on 2 cores, with a progress bar) and saves that
    pipeline in the cache; later calls load it (seconds). Scores are the model's
    softmax over candidates (kNN-BioEL eq. 4)."""
    import spacy

    from ..kb.knowledge_base import KnowledgeBase
    from ..pipeline.loading import locate_pipeline
    from ..pipeline.mentions import mention_spans
    from ..pipeline.text import bracketed_doc, check_label

    setup_logging(verbose)
    check_label(label)
    if text == "-":  # e.g. `link - < abstract.txt`: a long text without the shell's quoting
        import sys

        text = sys.stdin.read()
    _, spans = parse_bracketed(text)
    saved = linker not in BUILT_IN
    if saved:  # a named pipeline must exist (E247): a typo never falls back to the untrained default
        locate_pipeline(linker)
    if not spans and linker in ("exact", "tfidf"):
        raise BioELError(Errors.E198.format(text=preview(text), why=(
            f"no [bracketed] mention, and the {linker} baseline has no NER to find them")))
    if linker in ("exact", "tfidf"):
        kb = KnowledgeBase.from_disk(kb_path)
        doc = bracketed_doc(spacy.blank("en"), text, label)
        if linker == "exact":
            from ..index.exact import ExactMatchCandidates
            generator = ExactMatchCandidates(kb)
        else:
            from ..index.sparse import TfidfCandidates
            generator = TfidfCandidates(kb, progress=False)
        mentions = list(doc.ents)
        candidates = generator([e.text for e in mentions], k=max(top, 1))
    else:
        from ..pipeline.loading import find_linker

        if saved:
            from ..pipeline.loading import load_pipeline

            pipeline = load_pipeline(linker)  # a folder or an installed package
        else:
            from ..pipeline.embedded_default import default_pipeline

            pipeline = default_pipeline(kb_path, encoder)  # the KB file is read whole only to build
        kb = find_linker(pipeline).kb
        from ..pipeline.text import link_text

        if id_space:
            find_linker(pipeline).set_option("id_space", id_space)
        doc = link_text(pipeline, text, label)  # brackets, or the pipeline's own NER
        mentions = mention_spans(doc, find_linker(pipeline).cfg["spans_key"])
        candidates = [ent._.kb_ents for ent in mentions]
        stage = find_linker(pipeline).nil
        if stage.threshold is not None and stage.nil_score_from == "probability":
            nil_rule = f"NIL when prob < {1 - stage.threshold:.2f}"
        elif stage.nil_score_from == "probability" and stage.calibration is None:
            nil_rule = "not calibrated since training: NIL only without a candidate; `tune` fits it"
        else:
            nil_rule = "NIL by the pipeline's own rule"
        if find_linker(pipeline).decider.nils_undefined_abbreviations():
            nil_rule += "; NIL for an abbreviation the text does not define and no KB name names"
    typer.echo(f"KB: {kb.name} ({len(kb)} concepts); linker: {linker}\n")
    bioel = linker not in ("exact", "tfidf")
    if bioel:
        typer.echo(f"prob: calibrated probability that the link is right ({nil_rule}); "
                   "sim: cosine to the concept's best name; p: ranking score\n")
        typer.echo(f"{'mention':32}  {'concept id':14}  {'prob':>5}  {'sim':>5}  {'p':>5}  canonical name")
    else:
        typer.echo(f"{'mention':32} {'concept id':14} {'score':>6}  canonical name")
    for ent, ranked in zip(mentions, candidates):
        if not ranked:
            typer.echo(f"{ent.text[:32]:32} {'NIL':14} {'-':>6}  (no candidate)")
            continue
        concept_id, score = ranked[0]
        if bioel:
            shown = ent.kb_id_
            prob = "-" if ent._.kb_prob is None else f"{ent._.kb_prob:.2f}"
            sim = "-" if ent._.kb_similarity is None else f"{ent._.kb_similarity:.2f}"
            note = f"(best candidate: {concept_id}) " if ent._.is_nil else \
                f"({concept_id}) " if shown != concept_id else ""
            typer.echo(f"{ent.text[:32]:32}  {shown:14}  {prob:>5}  {sim:>5}  {score:5.2f}  "
                       f"{note}{kb[concept_id].canonical_name}")
            for runner_id, runner_score in ranked[1:top]:
                typer.echo(f"{'':32}  {runner_id:14}  {'':>5}  {'':>5}  {runner_score:5.2f}  "
                           f"{kb[runner_id].canonical_name}")
            continue
        typer.echo(f"{ent.text[:32]:32} {concept_id:14} {score:6.3f}  {kb[concept_id].canonical_name}")
        for runner_id, runner_score in ranked[1:top]:
            typer.echo(f"{'':32} {runner_id:14} {runner_score:6.3f}  {kb[runner_id].canonical_name}")
