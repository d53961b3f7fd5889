"""Registered stages of the name index and the candidates (entry points in
`spacy_misc`). One version of each stage; an older name that saved pipelines
and configs still carry resolves to the same function, said in one line."""
from __future__ import annotations

from typing import Dict, List, Optional

from spacy.util import registry

from ..validation import as_bool, as_float, as_int


@registry.misc("spacy-bioel.NameIndex.v2")
def create_name_index(index_type: str = "flat", backend: str = "auto",
                         embedding_cache: Optional[str] = None, vectors_dtype: str = "float32",
                         device: str = "auto", nprobe: Optional[int] = None,
                         ef_search: Optional[int] = None, hnsw_m: int = 32, ivf_lists: int = 0):
    """The linker's concept-name index, with the settings of large KBs.

    index_type: 'flat' (exact), 'int8' (every name scored in int8 by ONNX Runtime: no
    FAISS, the float vectors not read to search), 'flat_int8' (the same, the best
    names re-scored exactly from the float vectors), 'hnsw', 'hnsw_sq8', 'ivf_sq8' or 'ivfpq' (the
    8-bit types hold a UMLS-size KB in memory); vectors_dtype: 'float32'
    or 'float16' (the stored embeddings; scores in float32); device: 'auto'
    (the encoder's), 'cpu' or 'cuda:N'; nprobe (IVF, default 32), ef_search
    (HNSW, default 128), hnsw_m (graph degree), ivf_lists (0: about 4 sqrt(n)).
    """
    from ..errors import BioELError, Errors
    from .dense import BACKENDS, INDEX_TYPES, VECTOR_DTYPES
    from .name_index import NameIndex

    if index_type not in INDEX_TYPES or backend not in BACKENDS:
        raise BioELError(Errors.E152.format(index_type=index_type, backend=backend))
    if vectors_dtype not in VECTOR_DTYPES:
        raise BioELError(Errors.E175.format(name="index.vectors_dtype", value=repr(vectors_dtype),
                                            expected=" or ".join(VECTOR_DTYPES)))
    if device != "auto" and device != "cpu" and not str(device).startswith("cuda"):
        raise BioELError(Errors.E175.format(name="index.device", value=repr(device),
                                            expected="'auto', 'cpu' or 'cuda:N'"))
    return NameIndex(index_type, backend, embedding_cache, vectors_dtype, device,
                     None if nprobe is None else as_int("index.nprobe", nprobe, 1),
                     None if ef_search is None else as_int("index.ef_search", ef_search, 1),
                     as_int("index.hnsw_m", hnsw_m, 2), as_int("index.ivf_lists", ivf_lists, 0))


# the same stage under the name of pipelines saved before float16 vectors and int8 scans
registry.misc("spacy-bioel.NameIndex.v1")(create_name_index)


@registry.misc("spacy-bioel.DenseCandidates.v1")
def create_dense_candidates():
    """Candidates stage: the top-k concepts by bi-encoder similarity (FAISS or torch)."""
    from .candidates import DenseCandidates
    return DenseCandidates()


@registry.misc("spacy-bioel.SparseCandidates.v1")
def create_sparse_candidates(ngram_range: List[int] = [2, 5], analyzer: str = "char_wb",
                             word_weight: float = 0.25, batch_size: int = 256):
    """Candidates stage: the top-k concepts by char n-gram + word TF-IDF."""
    from .candidates import SparseCandidates
    return SparseCandidates(ngram_range, analyzer, as_float("candidates.word_weight", word_weight, 0),
                            as_int("candidates.batch_size", batch_size, 1))


@registry.misc("spacy-bioel.ExactCandidates.v1")
def create_exact_candidates():
    """Candidates stage: concepts with a name equal to the mention (normalised)."""
    from .candidates import ExactCandidates
    return ExactCandidates()


@registry.misc("spacy-bioel.ExactShortcut.v1")
def create_exact_shortcut(defer_to_training: bool = True, min_training_count: int = 0):
    """Shortcut stage: a mention that is a KB name of exactly one concept links
    to it without the encoder; with defer_to_training, not the names that
    training mentions link elsewhere; with min_training_count > 0, also a text
    training annotated that often, always with one concept (see `ExactShortcut`)."""
    from .candidates import ExactShortcut
    return ExactShortcut(as_bool("shortcut.defer_to_training", defer_to_training), min_training_count)


@registry.misc("spacy-bioel.ExactShortcut.v2")
def create_exact_shortcut_v2(defer_to_training: bool = True, min_training_count: int = 2):
    """The same stage under the name saved pipelines and configs carry, whose default remembers."""
    return create_exact_shortcut(defer_to_training, min_training_count)


@registry.misc("spacy-bioel.HybridCandidates.v1")
def create_hybrid_candidates(fusion: str = "weighted", sparse_weight: float = 0.2,
                             rrf_k: int = 60, ngram_range: List[int] = [2, 5],
                             analyzer: str = "char_wb", word_weight: float = 0.25,
                             batch_size: int = 256):
    """Candidates stage: dense + sparse, fused by weight (tuned on dev) or by RRF."""
    from .candidates import HybridCandidates
    return HybridCandidates(fusion, sparse_weight, as_int("candidates.rrf_k", rrf_k, 1), ngram_range,
                            analyzer, as_float("candidates.word_weight", word_weight, 0),
                            as_int("candidates.batch_size", batch_size, 1))


@registry.misc("spacy-bioel.TypeFilter.v1")
def create_type_filter(allowed: Dict[str, List[str]]):
    """Semantic-type filter: entity label -> the concept types it may link to."""
    from .type_filter import TypeFilter
    return TypeFilter(allowed)
