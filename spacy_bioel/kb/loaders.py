"""One entry point over every KB format, used by the CLI and the registry."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Sequence, Union

from ..errors import BioELError, Errors
from .knowledge_base import KnowledgeBase

PathLike = Union[str, Path]


def _medic(inputs: Sequence[PathLike], **kwargs: Any) -> KnowledgeBase:
    from .medic import load_medic_dictionary
    return load_medic_dictionary(inputs[0], **kwargs)


def _ctd(inputs: Sequence[PathLike], **kwargs: Any) -> KnowledgeBase:
    from .medic import load_ctd_diseases
    return load_ctd_diseases(inputs[0], **kwargs)


def _obo(inputs: Sequence[PathLike], **kwargs: Any) -> KnowledgeBase:
    from .obo import load_obo
    return load_obo(inputs[0], **kwargs)


def _jsonl(inputs: Sequence[PathLike], **kwargs: Any) -> KnowledgeBase:
    from .scispacy_jsonl import load_scispacy_jsonl
    return load_scispacy_jsonl(inputs[0], **kwargs)


def _umls(inputs: Sequence[PathLike], **kwargs: Any) -> KnowledgeBase:
    from .umls import load_umls
    return load_umls(inputs[0], **kwargs)


def _askapatient(inputs: Sequence[PathLike], **kwargs: Any) -> KnowledgeBase:
    from .askapatient import load_askapatient_kb
    kwargs.pop("progress", None)
    return load_askapatient_kb(list(inputs), **kwargs)


def _binary(inputs: Sequence[PathLike], **kwargs: Any) -> KnowledgeBase:
    return KnowledgeBase.from_disk(inputs[0])


KB_FORMATS: Dict[str, Callable[..., KnowledgeBase]] = {
    "medic": _medic,
    "ctd": _ctd,
    "obo": _obo,
    "scispacy": _jsonl,
    "umls": _umls,
    "askapatient": _askapatient,
    "bioel": _binary,
}


def load_kb(fmt: str, inputs: Union[PathLike, Sequence[PathLike]], **kwargs: Any) -> KnowledgeBase:
    """Load a KB of any supported format.

    fmt (str): One of KB_FORMATS: medic (DNorm/BioSyn dictionary), ctd
        (CTD_diseases.tsv), obo, scispacy (JSONL), umls (RRF directory),
        askapatient (fold files), bioel (our binary file).
    inputs: One path, or several (askapatient).
    RETURNS (KnowledgeBase): The loaded KB.
    """
    if fmt not in KB_FORMATS:
        raise BioELError(Errors.E007.format(fmt=fmt, options=", ".join(KB_FORMATS)))
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    return KB_FORMATS[fmt](list(inputs), **kwargs)


__all__ = ["KB_FORMATS", "load_kb"]
