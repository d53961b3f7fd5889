"""Loading a linker's PyTorch module from a saved component folder: at once
(`load_model`), or on demand for a linker served by ONNX (`DeferredModel`),
which predicts from `runtime/mention.onnx` and needs the module only to train,
refresh its index or datastore, or export again. The deferred weights file is
held open from loading on (`files.PinnedFile`), so saving the pipeline over its
own folder, or moving it, loses nothing. Its SHA-256 is compared with the
manifest's when its bytes are used (built or saved again), not at loading: a
pipeline served by ONNX never reads them to predict."""
from __future__ import annotations

import hashlib
import pickle
import tempfile
from pathlib import Path
from typing import Callable, Dict, Optional, Union

import srsly
from thinc.api import Model

from ..errors import BioELError, Errors
from ..files import PinnedFile, replace_file
from .integrity import check_digest, damaged


def load_model(model: Model, path: Path, dim: Optional[int],
               weights: Optional[bytes] = None, encoder_dir: Optional[Path] = None,
               concept_tower: Optional[Dict[str, str]] = None) -> None:
    """Rebuild the module from the saved encoder config, then load the weights
    (torch>=2.6 reads them with weights_only: no pickle code runs). A weights file
    that does not parse is E176; weights of another shape are E157.

    path (Path): The component folder (its `encoder` and `model` are read unless
        `encoder_dir` / `weights` are given).
    dim (Optional[int]): The saved output dimension, checked (E157).
    concept_tower (Optional[Dict[str, str]]): The cfg's reference to the base model
        a frozen concept tower was saved as (`encoders.base_tower`; E241).
    """
    from ..encoders.thinc_biencoder import build_from_saved, is_contextual, torch_module

    data = weights if weights is not None else (path / "model").read_bytes()
    reference = base_reference(path / "model", data)
    if reference is not None:  # weights by reference to the base model (`served`)
        build_from_base(model, reference, str(path / "model"))
        return
    build_module(build_from_saved, model, path, encoder_dir or path / "encoder")
    if not is_contextual(model):
        torch_module(model).concept_base = concept_tower or None
    check_tokenizer(model, path / "encoder")
    load_weights(model, path, weights)
    if dim is not None and model.get_dim("nO") != dim:
        raise BioELError(Errors.E157.format(path=path, key="dim", saved=dim,
                                            config=model.get_dim("nO")))


def build_from_base(model, reference: Dict[str, str], where: str) -> None:
    """Build the thinc bi-encoder `model` from its base model (`model.initialize`
    loads the pretrained weights of its `encoder`) and check that its mention
    tower is the one `reference` names (E241)."""
    from ..encoders.base_tower import reference_for, tower_digest
    from ..encoders.thinc_biencoder import torch_module

    if str(model.attrs.get("encoder")) != str(reference["encoder"]):
        raise BioELError(Errors.E241.format(path=where, encoder=reference["encoder"], problem=(
            f"the pipeline's model is configured with {model.attrs.get('encoder')!r}")))
    try:
        model.initialize(X=([" "], "mention"))
    except (OSError, ValueError, KeyError) as err:
        raise BioELError(Errors.E241.format(path=where, encoder=reference["encoder"],
                                            problem=f"it cannot be loaded ({type(err).__name__}: "
                                                    f"{str(err)[:160]})"))
    module = torch_module(model)
    if tower_digest(module.mention_encoder) != reference["sha256"]:
        raise BioELError(Errors.E241.format(path=where, encoder=reference["encoder"],
                                            problem="its weights differ from those the pipeline "
                                                    "was built with"))
    if getattr(module, "concept_encoder", None) is not None:
        module.concept_base = reference_for(module, reference["encoder"])


def base_reference(path: Path, data: bytes) -> Optional[Dict[str, str]]:
    """The base-model reference a weights file holds (`encoders.base_tower`), or
    None; E176 for a reference that does not parse."""
    from ..encoders.base_tower import read_reference

    try:
        return read_reference(data)
    except ValueError as err:
        raise damaged(path, "model", str(err))


def checked_weights(path: Path, digest: Optional[str], data: bytes) -> bytes:
    """`data`, the bytes read from the weights file `path`, once their SHA-256 is
    the manifest's `digest` (E176 otherwise; None: nothing to compare)."""
    check_digest(path, "model", digest, hashlib.sha256(data).hexdigest())
    return data


def build_module(build: Callable[[Model, Path], None], model: Model, path: Path,
                 encoder_dir: Path) -> None:
    """`build(model, encoder_dir)` (an architecture's `build_from_saved`), a
    config or tokenizer that does not load reported as E176 on path/encoder."""
    try:
        build(model, encoder_dir)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise damaged(path / "encoder", "encoder", f"{type(err).__name__}: {str(err)[:200]}")


def load_weights(model: Model, path: Path, weights: Optional[bytes] = None) -> None:
    """`model.from_bytes` of `weights` (default: the file path/model); weights of
    another shape are E157, a file that does not parse is E176."""
    try:
        model.from_bytes(weights if weights is not None else (path / "model").read_bytes())
    except BioELError:  # E241: a concept tower saved by reference to a missing or other base
        raise
    except RuntimeError as err:
        if "size mismatch" in str(err) or "key(s) in state_dict" in str(err):
            raise BioELError(Errors.E157.format(path=path, key="weights", saved=type(err).__name__,
                                                config=str(err)[:200]))
        raise damaged(path / "model", "model", f"{type(err).__name__}: {str(err)[:200]}")
    except (ValueError, KeyError, TypeError, EOFError, IndexError, AttributeError,
            pickle.UnpicklingError) as err:
        raise damaged(path / "model", "model", f"{type(err).__name__}: {str(err)[:200]}")


def check_tokenizer(model: Model, encoder_dir: Path) -> None:
    """A tokenizer whose vocabulary does not cover the model's embedding table
    (e.g. tokenizer files missing, so transformers fell back to a bare one) would
    turn every mention into [UNK]: refuse it (E176)."""
    from ..encoders.thinc_biencoder import torch_module

    tokenizer = model.attrs.get("tokenizer")
    config = getattr(torch_module(model).mention_encoder, "config", None)
    check_vocabulary(len(tokenizer) if tokenizer is not None else None,
                     getattr(config, "vocab_size", None), encoder_dir)


def check_vocabulary(size: Optional[int], vocab_size: Optional[int], encoder_dir: Path) -> None:
    """E176 when a tokenizer of `size` tokens cannot serve a model of `vocab_size`."""
    if size is not None and vocab_size and size < vocab_size // 2:
        raise damaged(encoder_dir, "encoder", f"the tokenizer has {size} tokens for a model "
                      f"with {vocab_size}: its vocabulary files are missing or damaged")


class DeferredModel:
    """The saved module of a linker that predicts with ONNX: the encoder config
    and tokenizer files are read, the weights file is pinned; `build` loads them
    into the thinc model when PyTorch is needed (E180 when it cannot).

    path (Path): The component folder.
    dim (Optional[int]): The saved output dimension.
    concept_tower (Optional[Dict[str, str]]): The cfg's base-model reference, if any.
    digest (Optional[str]): The manifest's SHA-256 of the weights file (E176 when
        the pinned bytes differ, checked before they are used).
    """

    def __init__(self, path: Path, dim: Optional[int],
                 concept_tower: Optional[Dict[str, str]] = None,
                 digest: Optional[str] = None) -> None:
        self.path, self.dim, self.concept_tower = Path(path), dim, concept_tower
        self.weights = PinnedFile(self.path / "model")
        self.digest = digest
        self.encoder_files: Dict[str, bytes] = {
            p.name: p.read_bytes() for p in sorted((self.path / "encoder").iterdir()) if p.is_file()}
        config = srsly.json_loads(self.encoder_files.get("config.json", b"{}"))
        self.vocab_size = config.get("vocab_size") if isinstance(config, dict) else None

    def build(self, model: Model, why: str) -> None:
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as err:
            raise BioELError(Errors.E180.format(why=why, problem=f"{err.name} is not installed"))
        weights = checked_weights(self.path / "model", self.digest, self.weights.read_bytes())
        with tempfile.TemporaryDirectory() as tmp:
            self.save_encoder(Path(tmp))
            load_model(model, self.path, self.dim, weights=weights,
                       encoder_dir=Path(tmp), concept_tower=self.concept_tower)

    def save_weights(self, target: Union[str, Path]) -> None:
        if self.digest is not None:  # a damaged file is not copied into a new, valid manifest
            check_digest(self.path / "model", "model", self.digest, self.weights.sha256())
            self.digest = None  # checked once: the pinned bytes cannot change
        self.weights.copy_to(target)

    def save_encoder(self, folder: Union[str, Path]) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in self.encoder_files.items():
            replace_file(folder / name, lambda p, c=content: p.write_bytes(c))


__all__ = ["base_reference", "build_from_base", "load_model", "build_module", "load_weights", "check_tokenizer", "check_vocabulary", "DeferredModel",
           "checked_weights"]
