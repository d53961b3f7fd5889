"""The `runtime` stage of the linker: how mentions are encoded at prediction time.

- `TorchRuntime` (`spacy-bioel.TorchRuntime.v1`, the default): the component's
  PyTorch bi-encoder, in eval mode under `torch.inference_mode`.
- `OnnxRuntime` (`spacy-bioel.OnnxRuntime.v1`): the mention tower exported to
  ONNX (float32, or int8 with `quantize = "int8"` / `"int8-all"`) and run by ONNX Runtime. A
  pipeline saved with it keeps `runtime/mention.onnx` and its weights beside it,
  `runtime/mention.onnx.data` (mapped, not copied, when loaded); loading reads those
  files and the tokenizer (`tokenizers` alone), and builds the PyTorch module
  only when training, a refresh or saving needs it, so it loads in a fraction
  of the time, and in an environment without PyTorch (docs/results/speed.md).

Training, the concept tower (the name index) and the kNN datastore always use
PyTorch. `threads` (> 0) caps the threads of PyTorch, ONNX Runtime, the BLAS
that scores the name index, and FAISS; 0 leaves each library's default.

Example:
    >>> runtime = OnnxRuntime(quantize="int8")
    >>> runtime.encode(model, ["colon cancer"], batch_size=64)
"""
from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

import numpy as np

from ..errors import BioELError, Errors, Warnings, warn
from ..files import PinnedFile, replace_file
from ..progress import progress_bar
from ..validation import MAX_BATCH, MAX_THREADS, as_int
from .allocator import freeze_loaded, static_thresholds
from .common import length_buckets
from .int8_exact import copy_unsigned, unsigned_files, write_unsigned
from .onnx_sessions import new_session, track
from .threads import limit_threads

# tokens per text of a full ONNX Runtime call (see `OnnxRuntime`): 32 texts of up to
# 12 tokens run at once; longer texts run fewer at a time, which keeps ONNX Runtime's
# arena smaller
TOKENS_PER_TEXT = 12
QUANTISED_GROUP = 8  # an int8 graph: texts tokenized together, batch_size times this, then called by length

if TYPE_CHECKING:
    from .tokenize import BatchTokenizer

logger = logging.getLogger(__name__)
ONNX_FILE, ONNX_META = "mention.onnx", "runtime.json"
# the graph's weights beside it (format 2): mapped by ONNX Runtime, not parsed and copied
ONNX_DATA = "mention.onnx.data"
# its unsigned companion (format 2): the graph a CPU that saturates uint8 x int8 opens (`int8_exact`)
ONNX_UNSIGNED = tuple(path.name for path in unsigned_files(ONNX_FILE))


class TorchRuntime:
    """Mentions encoded by the component's PyTorch module.

    threads (int): Threads for inference (0: the libraries' defaults).
    batch_size (int): Texts per forward pass (on a CPU, 64 short mentions run
        faster than 256: less padding and cache pressure).
    """

    name = "torch"
    has_files = False

    def __init__(self, threads: int = 0, batch_size: int = 64) -> None:
        self.threads = as_int("runtime.threads", threads, 0, MAX_THREADS)
        self.batch_size = as_int("runtime.batch_size", batch_size, 1, MAX_BATCH)
        self._threads_set = False

    def needs_model(self) -> bool:
        return True

    def _apply_threads(self) -> None:
        if self.threads and not self._threads_set:
            limit_threads(self.threads)
            self._threads_set = True

    def encode(self, model, texts: Sequence[str], batch_size: int,
               progress: Optional[str] = None) -> np.ndarray:
        """RETURNS (np.ndarray): (len(texts), dim) float32 mention embeddings.
        `progress`: show a progress bar (the encoder's own description) when set."""
        from .thinc_biencoder import embed_texts

        self._apply_threads()
        return embed_texts(model, texts, "mention", min(batch_size, self.batch_size),
                           progress=progress is not None)

    def cache_keys(self, model, texts: Sequence[str]) -> List[str]:
        """The texts after the tokenizer's normaliser (see `encoders.tokenize`)."""
        from .thinc_biencoder import batch_tokenizer, is_built

        tokenizer = batch_tokenizer(model) if is_built(model) else None
        return tokenizer.cache_keys(texts) if tokenizer is not None else list(texts)

    def invalidate(self) -> None:
        """The weights changed (nothing to redo for PyTorch)."""

    def get_params(self) -> Dict[str, Any]:
        return {"threads": self.threads, "batch_size": self.batch_size}


class OnnxRuntime:
    """Mentions encoded by ONNX Runtime from the exported mention tower.

    quantize (Optional[str]): None (float32), 'int8' (dynamic quantisation of the
        MatMul weights) or 'int8-all' (the embedding table too: smallest).
    threads (int): Threads for inference (0: the libraries' defaults).
    batch_size (int): Texts per ONNX Runtime call (small batches pad less, and
        ONNX Runtime's activation arena grows with them: 32 is as fast as 64 for
        less memory). A call holds at most
        `batch_size * TOKENS_PER_TEXT` tokens, padding included: a batch of
        long mentions is split, so the arena is sized for short ones. A
        quantised graph quantises each token row with its own scale
        (`onnx_export.scale_rows`), so a call holds texts of one token length
        only (no padding rows) and a text's embedding does not depend on the
        texts beside it. A quantised graph saved before (one scale a call: the
        same AskAPatient mention sat at cosine 0.979 with itself in a shuffled
        batch, and 1% of its links changed) is called once per text.
    tower (str): The tower exported: "mention" (prediction) or "concept"
        (`benchmark-index --encode-with`: a KB's names); not a config setting.

    A distilled student (`python -m spacy_bioel distill`, `use_student`) is served
    in place of the exported tower: saved with the pipeline (`runtime.json` says
    which layers, on what), and dropped with a warning when the weights change.
    """

    name = "onnx"
    has_files = True

    def __init__(self, quantize: Optional[str] = None, threads: int = 0, batch_size: int = 32,
                 tower: str = "mention") -> None:
        from .onnx_export import QUANTIZATIONS

        if quantize not in QUANTIZATIONS:
            raise BioELError(Errors.E175.format(name="runtime.quantize", value=repr(quantize),
                                                expected="null, 'int8' or 'int8-all'"))
        self.quantize = quantize
        self.threads = as_int("runtime.threads", threads, 0, MAX_THREADS)
        self.batch_size = as_int("runtime.batch_size", batch_size, 1, MAX_BATCH)
        self.tower = tower
        self._session = None
        self._tokenizer = None
        self._onnx: Optional[bytes] = None  # exported in this process
        self._file: Optional[PinnedFile] = None  # loaded from a saved pipeline
        self._data: Optional[PinnedFile] = None  # its weights file (format 2), if split
        self._stale = True
        self._row_scaled = False  # the graph quantises its activations per row (`scale_rows`)
        self.student: Optional[Dict[str, Any]] = None  # what the served student is, if one is
        self.timings: Optional[Counter] = None  # seconds spent tokenizing, once the lab sets a Counter
        track(self)  # its session is dropped in a forked worker

    def needs_model(self) -> bool:
        """Whether encoding needs the PyTorch module (no current ONNX graph yet)."""
        return self._stale or (self._onnx is None and self._file is None)

    def invalidate(self) -> None:
        """The mention tower changed: export again before the next encoding (a
        distilled student is dropped: it was taught by the old weights)."""
        if self.student is not None:
            warn(Warnings.W015.format(layers=self.student.get("layers")))
            self.student = None
        self._stale = True
        self._session = None

    def use_student(self, graph: bytes, student: Dict[str, Any]) -> None:
        """Serve `graph` (the ONNX export of a distilled mention tower, quantised as
        this runtime is) in place of the teacher's; `student` describes it
        (layers, texts, epochs, final loss) and is saved in runtime.json."""
        self._onnx, self._file, self._data = graph, None, None
        self._session, self._stale = None, False
        self.student = dict(student)

    def _ready(self, model) -> None:
        if self.needs_model():
            from .onnx_export import export_mention_encoder
            from .thinc_biencoder import batch_tokenizer, is_built

            if not is_built(model):
                raise BioELError(Errors.E168)
            self._onnx = export_mention_encoder(model, self.quantize, self.tower)
            self._file, self._data, self._session, self._stale = None, None, None, False
            self._tokenizer = batch_tokenizer(model)
            logger.info("Exported the %s tower to ONNX (%s, %.1f MB)", self.tower,
                        self.quantize or "float32", len(self._onnx) / 1e6)
        if self._session is None:  # (again, e.g. in a forked worker): the pinned graph
            self._session = self._open_session()
        if self._tokenizer is None:
            from .thinc_biencoder import batch_tokenizer

            self._tokenizer = batch_tokenizer(model)

    def _open_session(self):
        """A session of the current graph; notes whether it quantises per row."""
        from .onnx_export import scales_rows

        session = self._graph_session()
        self._row_scaled = scales_rows(session)
        return session

    def _graph_session(self):
        """A session of the exported graph, or of the pinned saved one: from its path
        while the files there are still the pinned ones, else from the pinned bytes
        (a split graph through a temporary folder: its weights are a second file)."""
        if self._onnx is not None:
            return new_session(self._onnx, self.threads)
        if self._file.intact() and (self._data is None or self._data.intact()):
            return new_session(str(self._file.path), self.threads)
        if self._data is None:
            return new_session(self._file.read_bytes(), self.threads)
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:  # the session maps the weights: kept
            self._file.copy_to(Path(tmp) / ONNX_FILE)
            self._data.copy_to(Path(tmp) / ONNX_DATA)
            return new_session(str(Path(tmp) / ONNX_FILE), self.threads)

    def encode(self, model, texts: Sequence[str], batch_size: int,
               progress: Optional[str] = None) -> np.ndarray:
        """RETURNS (np.ndarray): (len(texts), dim) float32 mention embeddings.
        `progress`: a progress bar with this description, counting distinct texts
        (the first `link` encodes every name of the embedded KB); the calls, and
        so the embeddings, are the same with or without it."""
        self._ready(model)
        unique: Dict[str, int] = {}
        inverse = np.fromiter((unique.setdefault(t, len(unique)) for t in texts), dtype=np.int64,
                              count=len(texts))
        keys = list(unique)
        out: Optional[np.ndarray] = None
        tokenizing = 0.0
        size = min(batch_size, self.batch_size)
        # int8 calls hold texts of one token length: tokenized in larger groups to fill them
        groups = length_buckets(keys, size * (QUANTISED_GROUP if self.quantize else 1))
        bar = None if progress is None or len(groups) < 2 else \
            progress_bar(total=len(keys), desc=progress, unit=" texts", leave=False)
        for indices in groups:
            start = time.perf_counter()
            indices = np.asarray(indices)
            ids, mask = self._tokenizer([keys[i] for i in indices])
            tokenizing += time.perf_counter() - start
            lengths = mask.sum(axis=1)
            for part in self._calls(lengths, size, ids.shape[1]):
                width = max(1, int(lengths[part].max()))  # its own padding only
                embeddings = self._session.run(None, {
                    "input_ids": np.ascontiguousarray(ids[part, :width]),
                    "attention_mask": np.ascontiguousarray(mask[part, :width])})[0]
                if out is None:
                    out = np.empty((len(keys), embeddings.shape[1]), dtype=np.float32)
                out[indices[part]] = embeddings
            if bar is not None:
                bar.update(len(indices))
        if bar is not None:
            bar.close()
        if self.timings is not None:
            self.timings["tokenize"] += tokenizing
        return out[inverse] if out is not None else np.zeros((0, 0), dtype=np.float32)

    def _calls(self, lengths: np.ndarray, size: int, width: int) -> List[np.ndarray]:
        """The rows of a tokenized group that each ONNX Runtime call encodes, at most
        `size * TOKENS_PER_TEXT` tokens a call: float32 keeps the group in order
        (padded to the call's longest); a graph quantised per row takes texts of
        one token length a call (a padded row would change nothing but costs
        time, and its float noise could move a rounding); a graph quantised with
        one scale a call (saved before `scale_rows`) one text a call."""
        if self.quantize and not self._row_scaled:
            return [np.array([row]) for row in range(len(lengths))]
        if not self.quantize:
            rows = max(1, size * TOKENS_PER_TEXT // max(1, width))
            return [np.arange(first, min(first + rows, len(lengths)))
                    for first in range(0, len(lengths), rows)]
        calls = []
        for length in np.unique(lengths):
            same = np.flatnonzero(lengths == length)
            rows = max(1, size * TOKENS_PER_TEXT // max(1, int(length)))
            calls.extend(same[first:first + rows] for first in range(0, len(same), rows))
        return calls

    def cache_keys(self, model, texts: Sequence[str]) -> List[str]:
        if self._tokenizer is None:
            self._ready(model)
        return self._tokenizer.cache_keys(texts)

    def to_disk(self, folder: Union[str, Path], model) -> None:
        """Write runtime/mention.onnx, its weights runtime/mention.onnx.data
        (exporting first if the weights changed) and runtime.json; needs the
        PyTorch module only to export. A graph loaded from a pipeline saved in one
        file (format 1, before the split) is copied as it is."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self.needs_model():
            self._ready(model)
        if self._onnx is not None:
            from .onnx_export import save_split

            save_split(self._onnx, folder / ONNX_FILE, folder / ONNX_DATA)
        else:
            self._file.copy_to(folder / ONNX_FILE)
            if self._data is not None:
                self._data.copy_to(folder / ONNX_DATA)
        split = self._onnx is not None or self._data is not None
        if not split and (folder / ONNX_DATA).exists():
            (folder / ONNX_DATA).unlink()  # saved over a split graph
        self._save_unsigned(folder, split)
        meta = {"format": 2 if split else 1, "quantize": self.quantize, "student": self.student}
        replace_file(folder / ONNX_META, lambda p: p.write_text(json.dumps(meta), encoding="utf-8"))

    def _save_unsigned(self, folder: Path, split: bool) -> None:
        """Write the graph's unsigned companion (`int8_exact.write_unsigned`: what
        a CPU that saturates uint8 x int8 opens without `onnx`) beside the split
        graph saved in `folder`, on every CPU (a pipeline moves); copied from the
        loaded pipeline where it was written for the same graph. A graph in one
        file (format 1), or saved without `onnx`, has none: one saved there
        before is removed (a CPU that saturates rewrites the graph as it opens it)."""
        graph = folder / ONNX_FILE
        if split:
            if self._onnx is None and self._file is not None and \
                    copy_unsigned(self._file.path, self._file.read_bytes(), graph):
                return
            try:
                write_unsigned(graph)
                return
            except ImportError:
                pass
        for path in unsigned_files(graph):
            if path.is_file() or path.is_symlink():
                path.unlink()

    def from_disk(self, folder: Union[str, Path], tokenizer: BatchTokenizer) -> OnnxRuntime:
        """Use the graph saved in `folder` (E176 names a damaged file) and
        `tokenizer` (the pipeline's, read once by its loader). A graph of another
        quantisation than configured is exported again on first use."""
        folder = Path(folder)
        try:
            meta = json.loads((folder / ONNX_META).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise BioELError(Errors.E154.format(path=folder / ONNX_META, problem=str(err)))
        self._file, self._onnx = PinnedFile(folder / ONNX_FILE), None
        self._data = PinnedFile(folder / ONNX_DATA) if meta.get("format", 1) >= 2 else None
        self._session = None
        self._stale = meta.get("quantize") != self.quantize
        self.student = meta.get("student") if not self._stale else None
        if self._stale and meta.get("student"):
            warn(Warnings.W015.format(layers=meta["student"].get("layers")))
        if not self._stale:
            static_thresholds()  # loaded to predict: large blocks returned when freed
            self._session = self._open_session()
            self._tokenizer = tokenizer
            freeze_loaded()  # the pipeline loaded so far: never traversed by the collector again
        return self

    def get_params(self) -> Dict[str, Any]:
        return {"quantize": self.quantize, "threads": self.threads, "batch_size": self.batch_size}


__all__ = ["TorchRuntime", "OnnxRuntime", "ONNX_FILE", "ONNX_DATA", "ONNX_META", "ONNX_UNSIGNED"]
