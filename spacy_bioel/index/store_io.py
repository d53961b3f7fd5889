"""How a dense candidate store is saved and read back (the persistence of
`dense.DenseCandidateStore`): a folder with `store.json`, `vectors.npy` (read
by memory map), `owners.npy`, for an 'int8' or 'flat_int8' store its int8 names and scales
(`names_int8.npy` by memory map, `names_scale.npy`: quantised once, when saved;
a store saved without them quantises on its first search) and, for approximate
types, `faiss.index`; or one
msgpack for `to_bytes`. Nothing is encoded or rebuilt when a store loads; a
file that does not read back is E154 naming it.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Sequence, Union

import numpy as np

from ..errors import BioELError, Errors
from ..files import replace_file as _replace_file
from .dense import BACKENDS, FAISS_TYPES, INT8_TYPES, STORE_FORMAT, DenseCandidateStore, faiss_available


INT8_NAMES = "names_int8.npy"  # an int8 store's scanned names (int8_scan.quantize_names)
INT8_SCALES = "names_scale.npy"


def save_store(store: DenseCandidateStore, folder: Union[str, Path]) -> None:
    """Write `store.json`, `vectors.npy` (the embeddings), `owners.npy`, the
    int8 names of an int8 store (in blocks, `int8_scan.BLOCK_NAMES`) and, for approximate types,
    `faiss.index`, each through a temporary file."""
    folder = Path(folder)
    if folder.is_file():  # a store saved by an older version (one msgpack file)
        folder.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"format": STORE_FORMAT, "dim": store.dim, "n_names": len(store),
            "index_type": store.index_type, "params": store.params,
            "dtype": str(store.vectors().dtype)}
    _replace_file(folder / "vectors.npy", lambda p: _save_npy(p, store.vectors()))
    _replace_file(folder / "owners.npy", lambda p: _save_npy(p, store.owners))
    if store.index_type in INT8_TYPES and len(store):
        from .int8_scan import reblock

        weights, scales, block = store.int8_names()
        weights, block = reblock(weights, scales, store.dim, block)  # e.g. loaded as one (dim, n) matrix
        meta["int8_block"] = block
        _replace_file(folder / INT8_NAMES, lambda p: _save_npy(p, weights))
        _replace_file(folder / INT8_SCALES, lambda p: _save_npy(p, scales))
    else:
        for name in (INT8_NAMES, INT8_SCALES):
            if (folder / name).exists():
                (folder / name).unlink()
    if store._index is not None:
        import faiss
        index = store._index
        if hasattr(faiss, "index_gpu_to_cpu") and "Gpu" in type(index).__name__:
            index = faiss.index_gpu_to_cpu(index)
        _replace_file(folder / "faiss.index", lambda p: faiss.write_index(index, str(p)))
    elif (folder / "faiss.index").exists():
        (folder / "faiss.index").unlink()
    _replace_file(folder / "store.json", lambda p: p.write_text(json.dumps(meta), encoding="utf-8"))


def load_store(folder: Union[str, Path], concept_ids: Sequence[str], *,
               device: str = "cpu", backend: str = "auto", mmap: bool = True
               ) -> DenseCandidateStore:
    """Load what `to_disk` wrote: the embeddings by memory map (nothing is
    re-encoded or rebuilt); a FAISS index is read from its file into memory.
    A store saved by an older version as one file is read with `from_bytes`."""
    folder = Path(folder)
    if folder.is_file():
        return store_from_bytes(folder.read_bytes(), device=device, path=str(folder))
    try:
        meta = json.loads((folder / "store.json").read_text(encoding="utf-8"))
        if meta.get("format", 0) > STORE_FORMAT:
            raise ValueError(f"format {meta.get('format')} is newer than {STORE_FORMAT}")
        params = {k: v for k, v in meta.get("params", {}).items()
                  if k in ("hnsw_m", "ivf_lists", "pq_m", "nprobe", "ef_search")}
        needs_faiss = meta["index_type"] in FAISS_TYPES
        if needs_faiss and not faiss_available():
            raise BioELError(Errors.E177.format(index_type=meta["index_type"]))
        store = DenseCandidateStore(concept_ids, int(meta["dim"]), index_type=meta["index_type"],
                    backend=backend, device="cpu", **params)
        vectors = np.load(folder / "vectors.npy", mmap_mode="r" if mmap else None,
                          allow_pickle=False)
        owners = np.load(folder / "owners.npy", allow_pickle=False)
        if vectors.ndim != 2 or vectors.shape != (int(meta["n_names"]), store.dim) or \
                len(owners) != len(vectors) or vectors.dtype not in (np.float32, np.float16):
            raise ValueError(f"vectors of shape {vectors.shape} ({vectors.dtype}) and "
                             f"{len(owners)} owners, not ({meta['n_names']}, {store.dim})")
        if len(owners) and (owners.min() < 0 or owners.max() >= len(store.concept_ids)):
            raise ValueError("owners point outside the concepts")
        store._set_owners(owners)
        store.embeddings = vectors
        if meta["index_type"] in INT8_TYPES and (folder / INT8_NAMES).exists():
            store.set_int8_names(np.load(folder / INT8_NAMES, mmap_mode="r" if mmap else None,
                                         allow_pickle=False),
                                 np.load(folder / INT8_SCALES, allow_pickle=False),
                                 meta.get("int8_block"))
        if needs_faiss:
            import faiss
            # read into memory: FAISS's IO_FLAG_MMAP turns inverted lists into on-disk
            # lists that name the file, which saving over the folder would break
            store._index = faiss.read_index(str(folder / "faiss.index"))
            if store._index.ntotal != len(owners) or store._index.d != store.dim:
                raise ValueError("the FAISS index does not match the vectors")
            store._apply_search_params(store._index)
    except READ_ERRORS as err:
        raise _corrupted(folder, err)
    store.to_device(device)
    return store


def store_to_bytes(store: DenseCandidateStore) -> bytes:
    """One msgpack with the .npy vectors (flat) or FAISS's serialisation (for
    `from_bytes`; `to_disk` is the format pipelines use)."""
    import srsly

    if store._index is not None:
        import faiss
        index_bytes = faiss.serialize_index(store._index).tobytes()
    else:
        index_bytes = _npy_bytes(store.vectors())
    return srsly.msgpack_dumps({"format": "faiss" if store._index is not None else "npy",
        "concept_ids": store.concept_ids, "dim": store.dim, "index_type": store.index_type,
        "backend": store.backend, "params": store.params, "owners": store.owners.tolist(),
        "index": index_bytes, "vectors": _npy_bytes(store.vectors()) if store._index is not None else b""})


def store_from_bytes(data: bytes, *, device: str = "cpu", path: str = "<bytes>"
                     ) -> DenseCandidateStore:
    """Read `to_bytes` output, also as written by earlier versions (a flat
    FAISS index, or HNSW / IVF-PQ without separate vectors)."""
    import srsly

    try:
        msg = srsly.msgpack_loads(data)
        fmt = msg.get("format", "faiss" if msg["backend"] == "faiss" else "npy")
        index_type = msg["index_type"]
        if fmt == "faiss" and not faiss_available():
            raise BioELError(Errors.E177.format(index_type=index_type))
        params = {k: v for k, v in msg["params"].items()
                  if k in ("hnsw_m", "ivf_lists", "pq_m", "nprobe", "ef_search")}
        saved_backend = msg["backend"] if msg["backend"] in BACKENDS else "auto"
        store = DenseCandidateStore(msg["concept_ids"], msg["dim"], index_type=index_type,
                    backend=saved_backend, device="cpu", **params)
        owners = np.asarray(msg["owners"], dtype=np.int64)
        if not msg["index"]:
            store._set_owners(owners)
            return store
        index = None
        if fmt == "faiss":
            import faiss
            index = faiss.deserialize_index(np.frombuffer(msg["index"], dtype=np.uint8))
            if index.d != store.dim:
                raise ValueError(f"vectors of dimension {index.d}, not {store.dim}")
            if index.ntotal != len(owners):
                raise BioELError(Errors.E154.format(
                    path=path, problem="index size differs from the name table"))
            matrix = np.load(io.BytesIO(msg["vectors"]), allow_pickle=False) if msg.get("vectors") \
                else _reconstruct(index)
        else:
            matrix = np.load(io.BytesIO(msg["index"]), allow_pickle=False)
        if matrix.ndim != 2 or matrix.shape != (len(owners), store.dim):
            raise ValueError(f"vectors of shape {matrix.shape}, not ({len(owners)}, {store.dim})")
        store._set_owners(owners)
        store.embeddings = matrix
        if index_type in FAISS_TYPES:
            store._index = index if index is not None else store._build_faiss(matrix)
            store._apply_search_params(store._index)
    except READ_ERRORS as err:
        raise _corrupted(path, err)
    store.to_device(device)
    return store


READ_ERRORS = (OSError, KeyError, ValueError, TypeError, RuntimeError, AttributeError, EOFError)


def _corrupted(path, err: Exception) -> BioELError:
    """E154 for a store that does not read back (a coded error passes through)."""
    if isinstance(err, BioELError):
        return err
    return BioELError(Errors.E154.format(path=path, problem=f"{type(err).__name__}: {err}"))


def _reconstruct(index) -> np.ndarray:
    import faiss

    if isinstance(index, faiss.IndexIVF) or "IVF" in type(index).__name__:
        faiss.extract_index_ivf(index).make_direct_map()
    return index.reconstruct_n(0, index.ntotal)


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def _save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.asarray(array), allow_pickle=False)


__all__ = ["save_store", "load_store", "store_to_bytes", "store_from_bytes", "READ_ERRORS"]
