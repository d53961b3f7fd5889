"""`distill PIPELINE OUTPUT`: a shallower mention tower for the ONNX runtime."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ._app import app, setup_logging


@app.command("distill")
def distill(
    pipeline: Path = typer.Argument(..., help="A saved pipeline whose bioel_linker is served by the ONNX runtime"),
    output: Path = typer.Argument(..., help="Where to save it with the student served"),
    texts: List[Path] = typer.Option([], "--texts", help="DocBins whose entity texts join the KB's names and the pipeline's training mentions as distillation texts, repeatable"),
    layers: str = typer.Option("0,2,4", "--layers", help="The teacher's layers the student keeps, comma-separated"),
    epochs: float = typer.Option(3.0, "--epochs", help="Passes over the distillation texts"),
    learn_rate: float = typer.Option(1e-4, "--learn-rate"),
    batch_size: int = typer.Option(64, "--batch-size"),
    seed: int = typer.Option(0, "--seed"),
    name: Optional[str] = typer.Option(None, "--component"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Distil the linker's mention tower into a student of some of its layers
    (loss 1 - cosine to the trained tower's embedding, on the KB's names and the
    training mentions) and serve it through the ONNX runtime, quantised as the
    runtime is. The PyTorch module, the name index and the datastore are kept;
    training the pipeline again drops the student (W015). Tune the output on dev
    afterwards (`tune`): its NIL calibration was fitted to the full tower.

    Faster encoding at some accuracy: docs/results/speed.md measures both."""
    from spacy.tokens import DocBin

    from ..encoders.distill import distill_mention_tower, mention_tower
    from ..encoders.onnx_export import export_mention_encoder
    from ..encoders.runtime import OnnxRuntime
    from ..errors import BioELError, Errors
    from ..pipeline.loading import find_linker, load_pipeline

    setup_logging(verbose)
    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp, name)
    runtime = linker.runtime
    if not isinstance(runtime, OnnxRuntime):
        raise BioELError(Errors.E242.format(path=pipeline, runtime=type(runtime).__name__))
    wanted = [int(x) for x in layers.split(",") if x.strip()]
    corpus = {e.text for path in texts for doc in DocBin().from_disk(path).get_docs(nlp.vocab)
              for e in doc.ents}
    distilled = sorted(set(linker.index.names.names) |
                       {text for text, _ in linker.train_mentions} | corpus)
    linker.require_model("distilling the mention tower")
    student, curve = distill_mention_tower(linker.model, distilled, wanted, epochs, learn_rate,
                                           batch_size, seed)
    with mention_tower(linker.model, student):
        graph = export_mention_encoder(linker.model, runtime.quantize)
    runtime.use_student(graph, {"layers": wanted, "texts": len(distilled), "epochs": epochs,
                                "learn_rate": learn_rate, "seed": seed, "loss": curve[-1][1]})
    linker.model_changed()
    output.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output)
    typer.echo(f"Distilled layers {wanted} of the mention tower on {len(distilled):,} texts "
               f"(loss {curve[0][1]:.4f} -> {curve[-1][1]:.4f}); ONNX graph {len(graph) / 1e6:.1f} MB; "
               f"saved to {output}. Tune it on dev next: python -m spacy_bioel tune {output} DEV.spacy")
