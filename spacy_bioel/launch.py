"""The command line's first module (`python -m spacy_bioel`, the `spacy-bioel`
script): before spaCy is imported it decides whether the process needs PyTorch.

thinc imports PyTorch whenever it is installed, in every spaCy process: a second
and more, and memory, before the first line of work (docs/results/speed.md). The
default pipeline's linker and NER are served by ONNX graphs, so `link` on the default
pipeline uses none of it (nor do `link-corpus bioel` and `visualize bioel --html`). For those thinc is imported with PyTorch
hidden from it; PyTorch itself stays importable, so anything that does need it
later (a deferred module built from the base model) still imports it.
"""
from __future__ import annotations

import logging
import sys
from typing import List, Optional, Sequence

logger = logging.getLogger(__name__)

DEFAULT_ENCODER = "embedded:all-MiniLM-L6-v2"


def option(args: Sequence[str], name: str) -> Optional[str]:
    """The value of `--name VALUE` or `--name=VALUE` in `args` (the last one
    given), None when absent."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


def serves_without_torch(args: Sequence[str]) -> bool:
    """Whether the command `args` runs the default pipeline's served linker and
    nothing else that needs PyTorch: `link` with the bioel linker on the embedded
    encoder (any KB); `link-corpus bioel` on the local engine and `visualize bioel
    --html` (the default pipeline named as the first argument; any KB)."""
    if not args or "--help" in args:
        return False
    if args[0] == "link":
        return ((option(args, "--linker") or "bioel") == "bioel"
                and (option(args, "--encoder") or DEFAULT_ENCODER) == DEFAULT_ENCODER)
    if args[0] == "link-corpus":
        return len(args) > 1 and args[1] == "bioel" and (option(args, "--engine") or "local") == "local"
    if args[0] == "visualize":
        return len(args) > 1 and args[1] == "bioel" and option(args, "--html") is not None
    return False


def hide_torch_from_thinc() -> bool:
    """Import thinc while PyTorch cannot be imported (its `has_torch` is then
    False for this process); PyTorch is importable again afterwards. False, doing
    nothing, when thinc or PyTorch is imported already."""
    if "thinc.compat" in sys.modules or "torch" in sys.modules:
        return False
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        import thinc.compat  # noqa: F401
    finally:
        del sys.modules["torch"]
    return True


def main(argv: Optional[List[str]] = None) -> None:
    """Run the CLI, keeping PyTorch out of a process that serves without it."""
    args = sys.argv[1:] if argv is None else list(argv)
    hidden = serves_without_torch(args) and hide_torch_from_thinc()
    from .cli import main as cli_main

    if hidden:
        logger.debug("PyTorch is kept out of this process: the default pipeline serves without it")
    cli_main(argv)


__all__ = ["main", "serves_without_torch", "hide_torch_from_thinc", "option"]
