"""`ner-onnx TRAINED OUTPUT`: an NER trained with an encoder in context, served by ONNX Runtime."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._app import app, setup_logging


@app.command("ner-onnx")
def ner_onnx(
    pipeline: Path = typer.Argument(..., help="A trained pipeline whose tok2vec embeds spacy-bioel.TransformerTokens.v1 (e.g. from configs/ner_minilm.cfg)"),
    output: Path = typer.Argument(..., help="Where to save the converted pipeline (another folder)"),
    quantize: str = typer.Option("int8", "--quantize", help="int8 (the MatMul weights), int8-all (the embedding tables too) or none (float32)"),
    threads: int = typer.Option(0, "--threads", help="ONNX Runtime's intra-op threads, saved in the config (0: every core)"),
    stride: int = typer.Option(0, "--stride", help="Word pieces between windows at prediction, at most the window (0: the trained stride)"),
    dev: Optional[Path] = typer.Option(None, "--dev", help="A DocBin with gold entities: report both pipelines' NER scores on it"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Convert a trained NER whose token features are a transformer read in
    context (spacy-bioel.TransformerTokens.v1) to spacy-bioel.OnnxTransformerTokens.v1:
    the encoder and its layer mix exported to ONNX (int8 by default), saved inside
    the pipeline with its tokenizer. The converted pipeline loads and predicts
    without PyTorch or transformers, and no longer trains its encoder."""
    from spacy.util import load_config

    from ..errors import BioELError, Errors
    from ..ner.onnx_tokens import convert_pipeline, onnx_config
    from ..pipeline.loading import load_pipeline

    setup_logging(verbose)
    if output.resolve() == pipeline.resolve():
        raise BioELError(Errors.E258.format(output=output, pipeline=pipeline))
    nlp = load_pipeline(pipeline)
    before = _scores(nlp, dev) if dev else None
    blocks = convert_pipeline(nlp, None if quantize.lower() in ("none", "float32") else quantize,
                              threads, source=str(pipeline), stride=stride or None)
    output.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output)
    config = load_config(output / "config.cfg", interpolate=False)
    onnx_config(config, blocks)
    config.to_disk(output / "config.cfg")
    typer.echo(f"Converted {', '.join(blocks)} of {pipeline} to ONNX ({quantize}); saved to {output}")
    if dev:
        after = _scores(load_pipeline(output), dev)
        for name, scores in (("PyTorch", before), ("ONNX", after)):
            typer.echo(f"{name}: NER F1 {scores['ents_f'] * 100:.2f} (P {scores['ents_p'] * 100:.2f}, "
                       f"R {scores['ents_r'] * 100:.2f}) on {dev}")


def _scores(nlp, path: Path):
    """spaCy's NER scores on the DocBin at `path`; an NER of one label (the
    shipped disease NER's) is read against the gold mentions under that label."""
    from spacy.tokens import DocBin
    from spacy.training import Example

    from ..training.augmenters import relabel_example

    labels = {label for _, pipe in nlp.pipeline for label in getattr(pipe, "labels", ())
              if getattr(pipe, "moves", None) is not None}
    examples = [Example(nlp.make_doc(doc.text), doc)
                for doc in DocBin().from_disk(path).get_docs(nlp.vocab)]
    if len(labels) == 1:
        examples = [relabel_example(example, next(iter(labels))) for example in examples]
    return nlp.evaluate(examples)
