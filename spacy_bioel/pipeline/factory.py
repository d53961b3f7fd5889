"""The `bioel_linker` factory (entry point in `spacy_factories`)."""
from __future__ import annotations

from typing import Callable, Optional

from spacy.language import Language
from thinc.api import Model

from ..encoders.threads import install_fork_handler
from ..errors import Warnings, warn
from .defaults import linker_config
from .extensions import SCORE_WEIGHTS
from .linker import BioELLinker
from .settings import LinkerSettings

# the one default (`defaults.py`): configs/linker_cpu.cfg and the default pipeline are the same
DEFAULT_CONFIG = linker_config()


@Language.factory("bioel_linker", default_config=DEFAULT_CONFIG, requires=["doc.ents"],
                  assigns=["token.ent_kb_id"],
                  default_score_weights=SCORE_WEIGHTS)
def make_bioel_linker(nlp: Language, name: str, model: Model, loss: Callable, index,
                      candidates, type_filter, ranker, nil, negatives, fgsm, biofeg, shortcut,
                      runtime,
                      top_k: int, retrieve_k: int, context_window: int, abbreviations: bool,
                      nil_without_alnum: bool, encode_batch_size: int,
                      cache_size: int, spans_key: Optional[str],
                      id_space: Optional[str], xrefs_attr: str, kb_ents_attr: str,
                      is_nil_attr: str, nil_score_attr: str,
                      similarity_attr: str, probability_attr: str,
                      scorer: Optional[Callable], exact_shortcut: bool = False,
                      cache_across_calls: bool = False,
                      nil_undefined_abbreviations: bool = True) -> BioELLinker:
    """Create a `bioel_linker` (see `BioELLinker`). Every default is the one
    default of `defaults.py` (configs/linker_cpu.cfg writes it out).

    model: the bi-encoder (`spacy-bioel.BiEncoder.v1`).
    loss: `spacy-bioel.InfoNCELoss.v1`, `.ProxyLoss.v1`, `.TripletLoss.v1`,
        `.PrototypeTripletLoss.v1`.
    index: `spacy-bioel.NameIndex.v1` (index_type, backend, embedding_cache: 'auto',
        the user's cache folder, so an untrained pipeline encodes a KB's names once).
    candidates: `spacy-bioel.DenseCandidates.v1`, `.SparseCandidates.v1`,
        `.ExactCandidates.v1` or `.HybridCandidates.v1`.
    type_filter: None or `spacy-bioel.TypeFilter.v1` (label -> allowed types).
    ranker: `spacy-bioel.KNNRanker.v1` (kNN-BioEL eqs. 4-6).
    nil: `spacy-bioel.CalibratedNIL.v1` or `.v1` (1 - similarity).
    negatives: `spacy-bioel.HardNegatives.v1`, `.RandomNegatives.v1`, `.MixedNegatives.v1`.
    fgsm: None or `spacy-bioel.FGSM.v1` (Wiatrak et al. eqs. 6-8).
    biofeg: None or `spacy-bioel.BioFEG.v1` (Sui et al., BioFEG Secs. 3.4-3.5):
        after each of the first `iterations` epochs, a WGAN-GP generates mention
        features for concepts without training mentions and the concept tower
        alone is fine-tuned on them (needs separate, trained towers).
    shortcut: None or `spacy-bioel.ExactShortcut.v1`: a mention that is a KB name
        of exactly one concept links to it without the encoder (nor the kNN
        datastore); counted in `linker.counts['exact_shortcut']`.
    runtime: `spacy-bioel.OnnxRuntime.v1` (the default: quantize 'int8-all';
        null | 'int8' | 'int8-all', threads, batch_size) or `.TorchRuntime.v1`
        (threads): how mentions are encoded at prediction; a pipeline saved with
        ONNX loads without building PyTorch.
    top_k: candidates written to `Span._.<kb_ents_attr>`.
    retrieve_k: candidates retrieved from the name index and ranked per mention
        (the ranker's probabilities are over these).
    context_window: tokens of context each side of a mention (0: the span alone).
    abbreviations: also score a defined short form through its long form.
    nil_without_alnum: a mention with no letter or digit (punctuation, symbols,
        whitespace, NUL, zero-width characters) is NIL without being encoded;
        counted in `linker.counts['nil_without_alnum']`.
    nil_undefined_abbreviations: a linker without training mentions writes NIL for
        a mention that reads as an abbreviation (two capitals or more, one word),
        that its document does not define and that is no KB name (docs/results/
        out_of_the_box.md: on NCBI and BC5CDR dev it removes 11 wrong concepts
        from the documents and no right one); its candidates are still written. Counted in
        `linker.counts['nil_undefined_abbreviation']`.
    encode_batch_size: texts per encoder forward pass at prediction and refresh.
    cache_size: decisions remembered (0 turns caching off): a repeated mention is
        encoded and ranked once per `nlp.pipe` call.
    spans_key: null links `doc.ents`; a name links `doc.spans[name]` instead (e.g.
        a spancat's overlapping mentions), in training too (the gold spans of
        the same group).
    id_space: null writes the KB's own ids; a vocabulary of the KB's
        cross-references ('UMLS', 'MESH', 'OMIM', 'ICD10CM', ...) writes `kb_id_`
        there ('NIL' for a concept without one, counted in
        `linker.counts['id_space_unmapped']`).
    *_attr: the Span extensions written (several linkers can share a pipeline);
        `xrefs_attr` holds the linked concept's cross-references ('PREFIX:ID').
    exact_shortcut, cache_across_calls: read only so that saved configs load (W013, W019).
    """
    install_fork_handler()  # n_process workers: no inherited thread pool (encoders.threads)
    if exact_shortcut and shortcut is None:
        from ..index.candidates import ExactShortcut

        warn(Warnings.W013.format(name=name))
        shortcut = ExactShortcut()
    if cache_across_calls:
        warn(Warnings.W019.format(name=name))
    settings = LinkerSettings(
        top_k=top_k, retrieve_k=retrieve_k, context_window=context_window,
        abbreviations=abbreviations, nil_without_alnum=nil_without_alnum,
        nil_undefined_abbreviations=nil_undefined_abbreviations,
        encode_batch_size=encode_batch_size, cache_size=cache_size,
        spans_key=spans_key, id_space=id_space,
        xrefs_attr=xrefs_attr, kb_ents_attr=kb_ents_attr,
        is_nil_attr=is_nil_attr, nil_score_attr=nil_score_attr, similarity_attr=similarity_attr,
        probability_attr=probability_attr)
    return BioELLinker(nlp.vocab, model, name, loss=loss, index=index, candidates=candidates,
                       ranker=ranker, nil=nil, negatives=negatives, fgsm=fgsm, biofeg=biofeg,
                       shortcut=shortcut, runtime=runtime, type_filter=type_filter,
                       settings=settings, scorer=scorer)
