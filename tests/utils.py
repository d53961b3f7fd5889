"""Small helpers shared by the tests (fixtures themselves are built inline)."""
import gzip
from pathlib import Path
from typing import List


def write_lines(path: Path, lines: List[str]) -> Path:
    """Write `lines` (newline-terminated) as UTF-8, gzipped when the name ends in .gz."""
    text = "".join(line + "\n" for line in lines)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


TOY_DOCS = [("colon cancer and heart attack", [(0, 12, "D1"), (17, 29, "D2")]),
            ("asthma in a child", [(0, 6, "D3")])]
TOY_NIL_DOC = ("an unknown syndrome", [(3, 19, "NIL")])


def write_toy_linking_data(folder: Path, *, nil: bool = True, repeat: int = 1) -> None:
    """folder/data.spacy (gold spans with kb ids; one NIL mention per repeat when
    `nil`) and folder/kb.bioelkb (D1-D3) for end-to-end component tests."""
    import spacy
    from spacy.tokens import DocBin

    from spacy_bioel import Concept, KnowledgeBase

    nlp = spacy.blank("en")
    docs = []
    for text, spans in (TOY_DOCS + ([TOY_NIL_DOC] if nil else [])) * repeat:
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(s, e, label="Disease", kb_id=c) for s, e, c in spans]
        docs.append(doc)
    DocBin(docs=docs, store_user_data=True).to_disk(folder / "data.spacy")
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colon cancer",)))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D3", "asthma"))
    kb.to_disk(folder / "kb.bioelkb")


# What `nlp.add_pipe("bioel_linker")` built before issue 72 made the one default the fast one
# (`spacy_bioel.pipeline.defaults`): the mention tower on PyTorch, one tower shared by mentions
# and names and trained, an exact float32 index, 64 candidates, no exact-name shortcut. The
# tests of those mechanisms (training both towers, the PyTorch runtime, exact scores) name it;
# tests/pipeline/test_defaults.py and the default pipeline's tests hold the default itself.
TORCH_STAGES = {
    "runtime": {"@misc": "spacy-bioel.TorchRuntime.v1", "threads": 0, "batch_size": 64},
    "index": {"@misc": "spacy-bioel.NameIndex.v1", "index_type": "flat", "backend": "auto",
              "embedding_cache": "auto"},
    "shortcut": None, "top_k": 64, "retrieve_k": 64,
}
TORCH_MODEL = {"shared_towers": True, "train_concept_tower": True}


def torch_linker(config: dict) -> dict:
    """`config` on the pre-issue-72 factory defaults (`TORCH_STAGES`, `TORCH_MODEL`)
    where it does not say otherwise."""
    out = {**TORCH_STAGES, **config}
    if isinstance(out.get("model"), dict) and \
            out["model"].get("@architectures") == "spacy-bioel.BiEncoder.v1":
        out["model"] = {**TORCH_MODEL, **out["model"]}
    return out


def tiny_linker_config(tiny_bert_dir, **extra) -> dict:
    """A bioel_linker config on the tests' tiny random BERT (mean pooling, 16 tokens),
    on the PyTorch defaults (`torch_linker`) where `extra` does not say otherwise."""
    return torch_linker({"model": {"@architectures": "spacy-bioel.BiEncoder.v1",
                                   "encoder": str(tiny_bert_dir), "pooling": "mean",
                                   "max_length": 16}, **extra})


def spy_encoder(linker, monkeypatch) -> list:
    """Record every text the linker's runtime encodes (the list is returned)."""
    encoded: list = []
    encode = linker.runtime.encode
    monkeypatch.setattr(linker.runtime, "encode", lambda model, texts, batch_size:
                        (encoded.extend(texts), encode(model, texts, batch_size))[1])
    return encoded


def gold_examples(nlp, rows):
    """Examples of (text, [(start, end, kb_id), ...]) rows: gold spans as the
    predicted side (as `spacy train` reads a GoldEntsCorpus), gold ids as the reference."""
    from spacy.training import Example

    from spacy_bioel.training.readers import gold_spans_doc

    def doc(text, spans):
        d = nlp.make_doc(text)
        d.ents = [d.char_span(s, e, label="Disease", kb_id=c) for s, e, c in spans]
        return d

    return [Example(gold_spans_doc(nlp, doc(t, s)), doc(t, s)) for t, s in rows]


def spacy_train_toy(config: Path, folder: Path, encoder: Path, *extra: str):
    """`python -m spacy train CONFIG` on the toy data of `write_toy_linking_data`
    (2 epochs, dev passes every 2 steps, the tiny encoder); RETURNS the finished process."""
    import subprocess
    import sys

    write_toy_linking_data(folder, nil=False, repeat=3)
    return subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(config), "--output", str(folder / "out"),
         "--paths.train", str(folder / "data.spacy"), "--paths.dev", str(folder / "data.spacy"),
         "--paths.kb", str(folder / "kb.bioelkb"), "--paths.encoder", str(encoder),
         "--training.max_epochs", "2", "--training.eval_frequency", "2",
         "--components.bioel_linker.model.max_length", "16", *extra],
        capture_output=True, text=True)


def save_linker_pipeline(path: Path, encoder, concepts, patterns=None, **config) -> Path:
    """A blank pipeline with an untrained bioel_linker (the one default, `config`
    changing it) on `encoder` over a KB of `concepts` ((id, name) pairs),
    initialized and saved at `path`; with `patterns` (phrases), an entity ruler
    before it labels them 'Disease'."""
    import spacy

    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase(name="toy")
    for cid, name in concepts:
        kb.add(Concept(cid, name))
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler") if patterns else None
    linker = nlp.add_pipe("bioel_linker", config={
        "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(encoder)}, **config})
    linker.set_kb(kb)
    nlp.initialize(lambda: [])
    if ruler is not None:  # after initialize, which clears a ruler's patterns
        ruler.add_patterns([{"label": "Disease", "pattern": p} for p in patterns])
    nlp.to_disk(path)
    return path


def drop_manifest(component: Path) -> None:
    """Make a saved component folder look as saved before manifests: no
    manifest.json, and no cfg flag saying it had one (else E232)."""
    import srsly

    (component / "manifest.json").unlink()
    cfg = srsly.read_json(component / "cfg")
    cfg.pop("manifest", None)
    srsly.write_json(component / "cfg", cfg)


def needs(module: str, extra: str):
    """A skip marker for a test of an optional extra: it skips, with the extra to
    install, where `module` cannot be imported (the core tests never need it)."""
    import importlib.util

    import pytest

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return pytest.mark.skipif(not found, reason=f"{module} is not installed (pip install "
                                                f"'spacy-bioel[{extra}]')")


def starts_ray():
    """The `pytestmark` of a test file that starts a local Ray cluster: `make test`
    (pytest-xdist, `--dist loadgroup`) runs all such files on one worker, so no two
    clusters, each sized to the whole machine, start side by side."""
    import pytest

    return pytest.mark.xdist_group("ray")


def trained_context_ner(tiny_bert_dir, window: int = 16, stride: int = 8, steps: int = 30):
    """A blank pipeline whose `ner` (label Disease) reads `spacy-bioel.TransformerTokens.v1`
    on the tiny BERT, trained `steps` updates on two sentences."""
    import spacy
    from spacy.training import Example

    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {"@architectures": "spacy-bioel.TransformerTokens.v1",
                  "encoder": str(tiny_bert_dir), "window": window, "stride": stride},
        "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": 32, "depth": 1,
                   "window_size": 1, "maxout_pieces": 2}}})
    nlp.add_pipe("ner")
    train = []
    for text, spans in [("Patients with colon cancer .", [(14, 26)]),
                        ("Asthma was frequent .", [(0, 6)])]:
        doc = nlp.make_doc(text)
        train.append(Example.from_dict(doc, {"entities": [(s, e, "Disease") for s, e in spans]}))
    optimizer = nlp.initialize(lambda: train)
    for _ in range(steps):
        nlp.update(train, sgd=optimizer, drop=0.0)
    return nlp
