"""Round two of the hostile-user runs: the edges of the product, each case a
crafted payload, file, folder, corpus shard, cache entry or setting, run as a
user would meet it (through `python -m spacy_bioel ...`, `spacy.load`,
`from_bytes`), and classified:

- `coded`: refused with one coded line (a BioELError; on the command line
  `Error: [Exxx] ...`), and nothing was written or run that should not be;
- `clean`: accepted, with the right result (nothing lost, duplicated or escaped);
- `escape`: a file deleted, overwritten or written outside what the command
  owns, or code run from a file, whether the command then failed or not;
- `silent_wrong`: accepted with a wrong result, or a valid input refused;
- `crash`: any other exception (a traceback);
- `hang`: still running after the case's time limit.

`python -m bench reliability` runs them on a small pipeline over the
embedded encoder (or the one it is given) and writes the counts per group; the
tests run the same cases on a tiny random encoder. Round three's cases (output
folders, packaging, span groups, paths, offsets, tracebacks, KB ids, the caches)
are in `bench.hostile3`; `cases()` returns both rounds.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy_bioel.errors import BioELError

CONCEPTS = [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"), ("D3", "asthma")]
TEXT = "colon cancer and heart attack"


@dataclass
class Case:
    group: str
    name: str
    expect: str  # 'coded' | 'clean'
    run: Callable[["Workspace"], Any]  # raises, or returns None (clean) / a problem string
    code: Optional[str] = None  # the code a 'coded' case must give
    timeout: float = 120.0


class Workspace:
    """A scratch folder with a saved tiny pipeline (`pipeline`) to copy per case.

    root (Path): The scratch folder.
    encoder (str): The linker's encoder (a local model folder).
    main (Callable[[List[str]], None]): The command line's entry point
        (`spacy_bioel.cli.main`; passed in: the CLI is a layer above this one).
    """

    def __init__(self, root: Path, encoder: str, main: Callable[[List[str]], None]) -> None:
        self.root, self.encoder, self.main = Path(root), encoder, main
        self.pipeline = self.root / "pipeline"
        self._counter = 0
        if not self.pipeline.exists():
            self.nlp().to_disk(self.pipeline)

    def nlp(self, **linker: Any):
        import spacy

        from spacy_bioel.kb.concept import Concept
        from spacy_bioel.kb.knowledge_base import KnowledgeBase

        kb = KnowledgeBase(name="hostile")
        for cid, name in CONCEPTS:
            kb.add(Concept(cid, name))
        nlp = spacy.blank("en")
        pipe = nlp.add_pipe("bioel_linker", config={
            "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": self.encoder,
                      "max_length": 16}, **linker})
        pipe.set_kb(kb)
        nlp.initialize(lambda: [])
        return nlp

    def folder(self, name: str) -> Path:
        self._counter += 1
        path = self.root / f"{self._counter:03d}-{name}"
        path.mkdir(parents=True)
        return path

    def copy(self) -> Path:
        target = self.folder("copy") / "pipeline"
        shutil.copytree(self.pipeline, target)
        return target


def cli(main: Callable[[List[str]], None], *args: Any) -> Tuple[int, str, str]:
    """Run `python -m spacy_bioel ARGS` in this process as a user's shell would
    (`main`): RETURNS (exit code, stdout, stderr). An exception that `main` lets
    through (a traceback for the user) propagates."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, out.getvalue(), err.getvalue()


class Coded(Exception):
    """A command that printed one coded error line."""

    def __init__(self, code: str, line: str) -> None:
        super().__init__(line)
        self.code = code


def cli_expect(ws: Workspace, *args: Any) -> str:
    """Run the command; raise `Coded` when it printed 'Error: [Exxx] ...' and
    exited 1, else RETURNS its stdout (a non-zero exit without a coded line is a crash)."""
    code, out, err = cli(ws.main, *args)
    lines = [line for line in err.splitlines() if line.startswith("Error: [E")]
    if code == 1 and lines:
        raise Coded(lines[0][8:12], lines[0])
    if code != 0:
        raise RuntimeError(f"exit {code} without a coded error: {err.strip()[-300:]}")
    return out


class Escaped(str):
    """A case's result that is an escape: what was deleted, overwritten or written
    where the command must not, or code that ran from a file."""


def _harm_after(run: Callable[[], Any], harm: Callable[[], Optional[str]]) -> Optional[str]:
    """Run `run`; whether it raises or not, the harm `harm()` finds afterwards (a file
    written outside, code run, an input deleted) is the case's result, an escape.
    Without harm, what `run` raised propagates (the classification reads it)."""
    try:
        run()
    except BaseException:
        found = harm()
        if found:
            return Escaped(found)
        raise
    found = harm()
    return Escaped(found) if found else None


# -- payloads and weights ---------------------------------------------------------------
def _payload(ws: Workspace, name: str) -> Optional[str]:
    import spacy
    import srsly

    nlp = spacy.load(ws.pipeline)
    linker = nlp.get_pipe("bioel_linker")
    files = srsly.msgpack_loads(linker.to_bytes())
    target = ws.folder("outside") / "written.txt"
    files[name.format(target=target)] = b"attacker's bytes"
    return _harm_after(lambda: linker.from_bytes(srsly.msgpack_dumps(files)),
                       lambda: "the payload wrote a file outside its folder"
                       if target.exists() or Path("written.txt").exists() else None)


def _poisoned_weights(ws: Workspace, force_env: bool) -> Optional[str]:
    import pickle

    import spacy
    import srsly
    import torch

    from spacy_bioel.pipeline.integrity import write_manifest

    path = ws.copy()
    marker = path.parent / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    buffer = io.BytesIO()
    torch.save({"weights": Evil()}, buffer, pickle_module=pickle)

    def poison(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: poison(v) for k, v in value.items()}
        if isinstance(value, list):
            return [poison(v) for v in value]
        if isinstance(value, bytes) and len(value) > 1000:
            inner = srsly.msgpack_loads(value)
            inner["state"] = buffer.getvalue()
            return srsly.msgpack_dumps(inner)
        return value

    model = path / "bioel_linker" / "model"
    model.write_bytes(srsly.msgpack_dumps(poison(srsly.msgpack_loads(model.read_bytes()))))
    write_manifest(path / "bioel_linker")  # a matching manifest: only the loader stands between
    env = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"} if force_env else {}
    def load_and_build():
        # a pipeline served by ONNX (the default) reads its weights when it needs the module
        # (training, a refresh, another runtime): build it, so the weights are read here
        from spacy_bioel.pipeline.loading import find_linker

        find_linker(spacy.load(path)).require_model("the hostile weights case")

    with _environ(env):
        return _harm_after(load_and_build,
                           lambda: "loading ran the pickle's code" if marker.exists() else None)


def _poisoned_checkpoint(ws: Workspace) -> Optional[str]:
    import pickle

    import torch

    from spacy_bioel.pretraining.trainer import resume

    folder = ws.folder("checkpoint")
    marker = folder.parent / "pwned-checkpoint"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    identity = {"data": "x", "settings": {}}
    (folder / "meta.json").write_text(json.dumps({"identity": identity, "step": 1, "seconds": 0,
                                                  "losses": []}))
    torch.save({"model": Evil()}, folder / "state.pt", pickle_module=pickle)
    model = torch.nn.Linear(2, 2)
    return _harm_after(
        lambda: resume(folder, identity, model, torch.optim.SGD(model.parameters(), lr=0.1),
                        restart=False),
        lambda: "resuming ran the checkpoint's code" if marker.exists() else None)


@contextlib.contextmanager
def _environ(values: Dict[str, str]):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# -- saved folders ------------------------------------------------------------------------
def _save_over_link(ws: Workspace, name: str) -> Optional[str]:
    import spacy

    path = ws.copy()
    outside = ws.folder("outside") / "victim.txt"
    outside.write_text("keep me")
    target = path / "bioel_linker" / name
    target.unlink()
    target.symlink_to(outside)
    spacy.load(ws.pipeline).to_disk(path)
    if outside.read_text() != "keep me":
        return f"saving wrote through the {name} link"
    if target.is_symlink():
        return f"{name} is still a link"
    spacy.load(path)
    return None


def _load_damaged(ws: Workspace, damage: Callable[[Path], None]) -> Optional[str]:
    import spacy

    from spacy_bioel.pipeline.loading import load_pipeline

    path = ws.copy()
    damage(path)
    load_pipeline(path)
    spacy.load(path)
    return "a damaged pipeline loaded"


def _edit_nil_threshold(path: Path) -> None:
    from spacy.util import load_config

    config = load_config(path / "config.cfg", interpolate=False)
    config["components"]["bioel_linker"]["nil"]["threshold"] = 0.123
    config.to_disk(path / "config.cfg")


def _load_edited(ws: Workspace, edit: Callable[[Path], None], setting: Optional[str]) -> Optional[str]:
    """An edited config.cfg loads as in spaCy: W018 names the edited `setting` (none
    for a comment) and its value is used."""
    import warnings

    import spacy

    path = ws.copy()
    edit(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp = spacy.load(path)
    named = [str(w.message) for w in caught if "[W018]" in str(w.message)]
    if setting is None:
        return f"a comment warned: {named[0][:200]}" if named else None
    if len(named) != 1 or setting not in named[0]:
        return f"W018 naming {setting} expected once, got {named!r}"[:300]
    if nlp.get_pipe("bioel_linker").nil.threshold != 0.123:
        return "the edited nil.threshold was not used"
    return None


def _fifo(path: Path) -> None:
    target = path / "bioel_linker" / "kb"
    target.unlink()
    os.mkfifo(target)


def _link_out(path: Path) -> None:
    target = path / "bioel_linker" / "kb"
    outside = path.parent / "kb-elsewhere"
    shutil.copy(target, outside)
    target.unlink()
    target.symlink_to(outside)


def _append(name: str, text: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with open(path / name, "a", encoding="utf-8") as handle:
            handle.write(text)
    return damage


def _replace(name: str, data: bytes, reseal: bool = False) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        (path / name).write_bytes(data)
        if reseal:  # copied together with a matching manifest
            from spacy_bioel.pipeline.integrity import write_manifest

            write_manifest(path / "bioel_linker")
    return damage


def _unlink(name: str) -> Callable[[Path], None]:
    return lambda path: (path / name).unlink()


# -- embedding cache -----------------------------------------------------------------------
def _cache_case(ws: Workspace, damage: str) -> Optional[str]:
    import warnings

    import numpy as np

    from spacy_bioel.index.embedding_cache import EmbeddingCache, cached_embeddings

    folder = ws.folder("cache")
    rows, dim, size = 25, 6, 10

    def encode(start: int, stop: int, width: int = dim) -> np.ndarray:
        return np.arange(start * width, stop * width, dtype=np.float32).reshape(-1, width) / 7

    cache = EmbeddingCache(folder, "k", rows, "float32")
    if damage == "two writers":
        results: List[Any] = []
        threads = [threading.Thread(target=lambda: results.append(
            cached_embeddings(EmbeddingCache(folder, "k", rows, "float32"), dim, size, encode)[0]))
            for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        ok = len(results) == 2 and all(np.array_equal(r, encode(0, rows)) for r in results)
        return None if ok else "two writers did not both get the whole result"
    for start in (0, 10):
        cache.write_chunk(start, encode(start, start + size))
    first = sorted((folder / "names-k.chunks").iterdir())[0]
    if damage == "truncated chunk":
        first.write_bytes(first.read_bytes()[:60])
    elif damage == "zero-filled chunk":
        data = first.read_bytes()
        first.write_bytes(data[:128] + b"\0" * (len(data) - 128))
    elif damage == "cache of another width":
        first.unlink()
        cache.write_chunk(0, encode(0, size, dim + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        embeddings, _ = cached_embeddings(cache, dim, size, encode)
    return None if np.array_equal(embeddings, encode(0, rows)) else "the cache resumed wrong rows"


# -- settings ------------------------------------------------------------------------------
def _setting(ws: Workspace, block: str, key: str, value: Any) -> Optional[str]:
    """A linker built with [components.bioel_linker.BLOCK] KEY = VALUE must refuse it."""
    from spacy.util import registry

    if block == "model":
        config = {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": ws.encoder, key: value}
    else:
        defaults = {"runtime": "spacy-bioel.TorchRuntime.v1", "ranker": "spacy-bioel.KNNRanker.v1",
                    "nil": "spacy-bioel.ThresholdNIL.v1"}
        config = {"@misc": defaults[block], key: value}
        if block == "nil":
            config.setdefault("threshold", value)
    registry.resolve({"x": config})
    return f"{block}.{key} = {value!r} was accepted"


def _init_pipeline(ws: Workspace, overrides: Sequence[str]) -> Optional[str]:
    config = ws.folder("config") / "linker.cfg"
    config.write_text(f"""[nlp]
lang = "en"
pipeline = ["bioel_linker"]

[components]

[components.bioel_linker]
factory = "bioel_linker"

[components.bioel_linker.model]
@architectures = "spacy-bioel.BiEncoder.v1"
encoder = "{ws.encoder}"
""")
    cli_expect(ws, "init-pipeline", config, config.parent / "out", *overrides)
    return "init-pipeline accepted an invalid config"


# -- corpus linking ------------------------------------------------------------------------
def _rows(n: int, tag: str) -> List[Dict[str, Any]]:
    return [{"id": str(i), "text": f"{tag} {i}: colon cancer here.",
             "entities": [[len(f"{tag} {i}: "), len(f"{tag} {i}: colon cancer"), "Disease"]]}
            for i in range(n)]


def _write_jsonl(path: Path, rows: Sequence[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _link_corpus(ws: Workspace, inputs: Callable[[Path], Any], *options: str,
                 check: Optional[Callable[[Dict[str, Any], List[Dict[str, Any]], Path], Optional[str]]] = None
                 ) -> Optional[str]:
    import warnings

    from spacy_bioel.corpus_linking.records import read_outputs

    folder = ws.folder("corpus")
    source = inputs(folder)
    report = folder / "report.json"
    output = folder / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cli_expect(ws, "link-corpus", ws.pipeline, source, output, "--report", report, *options)
    result = json.loads(report.read_text())
    return check(result, read_outputs(output), folder) if check else None


def _skipped(count: int):
    def check(result, records, folder):
        verify = result.get("verify", {})
        if result["skipped_mentions"] != count or verify.get("mentions_unaccounted"):
            return f"{result['skipped_mentions']} skipped, {count} expected ({verify})"
        return None
    return check


def _file(name: str, content: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        (folder / name).write_text(content, encoding="utf-8")
        return folder / name
    return write


def _jsonl(*lines: str) -> Callable[[Path], Path]:
    return lambda folder: _write_jsonl(folder / "a.jsonl", list(lines))


def _one_doc(folder: Path) -> Path:
    return _write_jsonl(folder / "a.jsonl", _rows(1, "x"))


def _one_entity(ents: List[Any]) -> Callable[[Path], Path]:
    return lambda folder: _write_jsonl(folder / "a.jsonl", [
        {"id": "a", "text": TEXT, "entities": [[0, 12, "Disease"]] + ents}])


def _gz_truncated(folder: Path) -> Path:
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in _rows(300, "x")).encode())
    path = folder / "t.jsonl.gz"
    path.write_bytes(data[:len(data) // 2])
    return path


def _in_place(ws: Workspace) -> Optional[str]:
    folder = ws.folder("inplace")
    _write_jsonl(folder / "part-0.jsonl", _rows(3, "x"))
    return _harm_after(
        lambda: cli_expect(ws, "link-corpus", ws.pipeline, folder, folder, "--overwrite"),
        lambda: None if (folder / "part-0.jsonl").exists() else "the input was deleted",
    ) or "linking a folder into itself was accepted"


def _repeated_ids(folder: Path) -> Path:
    (folder / "in").mkdir()
    _write_jsonl(folder / "in" / "a.jsonl", _rows(8, "first"))
    _write_jsonl(folder / "in" / "b.jsonl", _rows(8, "second"))
    return folder / "in"


def _all_documents(n: int):
    def check(result, records, folder):
        texts = {r["text"] for r in records}
        return None if len(records) == n == len(texts) else f"{len(records)} of {n} documents out"
    return check


def _ray_coded(ws: Workspace) -> Optional[str]:
    try:
        import ray
    except ImportError:
        return None  # counted clean: nothing to check without the ray extra
    folder = ws.folder("ray")
    _write_jsonl(folder / "a.jsonl", [{"id": "a", "text": TEXT, "entities": [[0, 99, "D"]]}])
    try:
        cli_expect(ws, "link-corpus", ws.pipeline, folder / "a.jsonl", folder / "out", "--engine", "ray",
                   "--num-workers", "1", "--strict")
    finally:
        ray.shutdown()
    return "an unplaceable mention passed --strict on Ray"


# -- visualize and KBs -----------------------------------------------------------------------
def _xss(ws: Workspace) -> Optional[str]:
    import re

    import spacy

    from spacy_bioel.kb.concept import Concept
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.pipeline.extensions import DEFAULT_ATTRS, install_extensions
    from spacy_bioel.visualize.render import render_html

    install_extensions(DEFAULT_ATTRS)
    cid = 'MESH:"><script>alert(1)</script>'
    kb = KnowledgeBase(name="evil")
    kb.add(Concept(cid, "<b>x</b>"))
    doc = spacy.blank("en").make_doc(TEXT)
    doc.ents = [doc.char_span(0, 12, "<i>D</i>", kb_id=cid)]
    doc.ents[0]._.kb_ents = [(cid, 0.9)]
    body = render_html([doc], kb).split("<body", 1)[1]
    bad = [t for t in ("<script", "<b>", "<i>") if t in body]
    bad += [h for h in re.findall(r'href="([^"]*)"', body) if not h.startswith(("http", "#"))]
    return f"markup reached the page: {bad}" if bad else None


def _umls_empty_cui(ws: Workspace) -> Optional[str]:
    from spacy_bioel.kb.umls import load_umls

    folder = ws.folder("umls")
    (folder / "MRCONSO.RRF").write_text(
        "C0000001|ENG|P|L1|PF|S1|Y|A1||||MSH|PT|D1|Colon cancer|0|N||\n"
        "|ENG|P|L2|PF|S2|Y|A2||||MSH|PT|D2|Asthma|0|N||\n")
    kb = load_umls(folder, progress=False)
    return f"a concept with id '' was loaded ({len(kb)} concepts)"


# -- the cases ---------------------------------------------------------------------------------
def cases() -> List[Case]:
    """Round two's cases, then round three's (`bench.hostile3`)."""
    from .hostile3 import cases as round_three

    return round_two() + round_three()


def round_two() -> List[Case]:
    c = Case
    return [
        c("payloads and weights", "from_bytes: an absolute file name", "coded",
          lambda ws: _payload(ws, "{target}"), "E230"),
        c("payloads and weights", "from_bytes: '../' in a file name", "coded",
          lambda ws: _payload(ws, "../../../../../../../../../../{target}"), "E230"),
        c("payloads and weights", "from_bytes: a relative name that climbs out", "coded",
          lambda ws: _payload(ws, "kb/../../written.txt"), "E230"),
        c("payloads and weights", "a pickle in the weights, matching manifest", "coded",
          lambda ws: _poisoned_weights(ws, False), "E176"),
        c("payloads and weights", "the same with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1", "coded",
          lambda ws: _poisoned_weights(ws, True), "E176"),
        c("payloads and weights", "a pickle as the pre-training checkpoint", "coded",
          _poisoned_checkpoint, "E182"),
        c("saved folders", "save over a cfg that links outside", "clean",
          lambda ws: _save_over_link(ws, "cfg")),
        c("saved folders", "save over a manifest.json that links outside", "clean",
          lambda ws: _save_over_link(ws, "manifest.json")),
        c("saved folders", "a deleted manifest.json", "coded",
          lambda ws: _load_damaged(ws, _unlink("bioel_linker/manifest.json")), "E232"),
        c("saved folders", "a comment added to config.cfg after saving", "clean",
          lambda ws: _load_edited(ws, _append("config.cfg", "\n# edited\n"), None)),
        c("saved folders", "a setting edited in config.cfg after saving", "clean",
          lambda ws: _load_edited(ws, _edit_nil_threshold, "components.bioel_linker.nil.threshold")),
        c("saved folders", "meta.json changed after saving", "coded",
          lambda ws: _load_damaged(ws, _replace(
              "meta.json", b'{"lang": "en", "name": "x", "version": "9.9.9"}')), "E233"),
        c("saved folders", "meta.json without a version", "coded",
          lambda ws: _load_damaged(ws, _replace("meta.json", b'{"lang": "en", "name": "x"}')), "E240"),
        c("saved folders", "a FIFO as a file", "coded", lambda ws: _load_damaged(ws, _fifo), "E231",
          timeout=60),
        c("saved folders", "a file that links outside the folder", "coded",
          lambda ws: _load_damaged(ws, _link_out), "E231"),
        c("saved folders", "junk meta.json", "coded",
          lambda ws: _load_damaged(ws, _replace("meta.json", b"\x00junk")), "E240"),
        c("saved folders", "junk config.cfg", "coded",
          lambda ws: _load_damaged(ws, _replace("config.cfg", b"[nlp\x00 junk")), "E240"),
        c("saved folders", "a 0-byte .npy, matching manifest", "coded",
          lambda ws: _load_damaged(ws, _replace("bioel_linker/index/vectors.npy", b"", True)), "E154"),
        c("saved folders", "a damaged tokenizer.json, matching manifest", "coded",
          lambda ws: _load_damaged(ws, _replace("bioel_linker/encoder/tokenizer.json", b"{junk", True)),
          "E176"),
        c("embedding cache", "a truncated chunk", "clean", lambda ws: _cache_case(ws, "truncated chunk")),
        c("embedding cache", "a zero-filled chunk", "clean", lambda ws: _cache_case(ws, "zero-filled chunk")),
        c("embedding cache", "a chunk of another width", "clean",
          lambda ws: _cache_case(ws, "cache of another width")),
        c("embedding cache", "two writers on one entry", "clean", lambda ws: _cache_case(ws, "two writers")),
        c("settings", "runtime.threads = 1000000", "coded",
          lambda ws: _setting(ws, "runtime", "threads", 1000000), "E175"),
        c("settings", "ranker.beta1 = 1e-300", "coded",
          lambda ws: _setting(ws, "ranker", "beta1", 1e-300), "E175"),
        c("settings", "model.max_length = 0", "coded",
          lambda ws: _setting(ws, "model", "max_length", 0), "E175"),
        c("settings", "model.max_length = 1", "coded",
          lambda ws: _setting(ws, "model", "max_length", 1), "E175"),
        c("settings", "nil.threshold = 1.5", "coded",
          lambda ws: _setting(ws, "nil", "threshold", 1.5), "E175"),
        c("settings", "init-pipeline: top_k = 1.5", "coded",
          lambda ws: _init_pipeline(ws, ["--components.bioel_linker.top_k", "1.5"]), "E239"),
        c("settings", "init-pipeline: an unknown key in a stage block", "coded",
          lambda ws: _init_pipeline(ws, ["--components.bioel_linker.model.colour", "1"]), "E239"),
        c("corpus linking", "two shards with the same ids", "clean",
          lambda ws: _link_corpus(ws, _repeated_ids, "--no-verify", check=_all_documents(16))),
        c("corpus linking", "an entity past the end of the text", "clean",
          lambda ws: _link_corpus(ws, _one_entity([[17, 99, "D"]]), check=_skipped(1))),
        c("corpus linking", "a negative start", "clean",
          lambda ws: _link_corpus(ws, _one_entity([[-3, 5, "D"]]), check=_skipped(1))),
        c("corpus linking", "overlapping and nested entities", "clean",
          lambda ws: _link_corpus(ws, _one_entity([[0, 5, "D"], [6, 16, "D"]]), check=_skipped(2))),
        c("corpus linking", "an end of 10**30", "clean",
          lambda ws: _link_corpus(ws, _one_entity([[10 ** 30, 10 ** 30 + 1, "D"]]), check=_skipped(1))),
        c("corpus linking", "a PubTator offset past the text", "clean",
          lambda ws: _link_corpus(ws, _file("p.txt", "1|t|Colon cancer.\n1|a|x\n1\t0\t12\tColon "
                                                     "cancer\tDisease\tD1\n1\t40\t45\tfar\tDisease\tD1\n\n"),
                                  check=_skipped(1))),
        c("corpus linking", "an unplaceable mention with --strict", "coded",
          lambda ws: _link_corpus(ws, _one_entity([[17, 99, "D"]]), "--strict"), "E234"),
        c("corpus linking", "a folder linked into itself", "coded", _in_place, "E245"),
        c("corpus linking", "\"entities\": 5", "coded",
          lambda ws: _link_corpus(ws, _jsonl('{"text": "a", "entities": 5}')), "E202"),
        c("corpus linking", "a lone surrogate in the text", "coded",
          lambda ws: _link_corpus(ws, _jsonl('{"text": "a \\ud800"}')), "E202"),
        c("corpus linking", "deeply nested JSON", "coded",
          lambda ws: _link_corpus(ws, _jsonl('{"text": "a", "x": ' + "[" * 100000 + "]" * 100000 + "}")),
          "E202"),
        c("corpus linking", "a junk .spacy shard", "coded",
          lambda ws: _link_corpus(ws, _file("j.spacy", "\x00junk" * 9)), "E236"),
        c("corpus linking", "a truncated .jsonl.gz", "coded", lambda ws: _link_corpus(ws, _gz_truncated), "E236"),
        c("corpus linking", "an absolute glob", "clean",
          lambda ws: _link_corpus(ws, lambda f: f"{_write_jsonl(f / 'a.jsonl', _rows(2, 'x')).parent}/*.jsonl",
                                  check=_all_documents(2))),
        c("corpus linking", "--threads -1", "coded",
          lambda ws: _link_corpus(ws, _one_doc, "--threads", "-1"),
          "E175"),
        c("corpus linking", "--num-workers 0", "coded",
          lambda ws: _link_corpus(ws, _one_doc,
                                  "--num-workers", "0"), "E175"),
        c("corpus linking", "--top -1", "coded",
          lambda ws: _link_corpus(ws, _one_doc, "--top", "-1"),
          "E175"),
        c("corpus linking", "Ray: an error inside a worker", "coded", _ray_coded, "E234", timeout=300),
        c("visualize and KBs", "markup in a concept id and label (--html)", "clean", _xss),
        c("visualize and KBs", "a UMLS row with an empty CUI", "coded", _umls_empty_cui, "E001"),
    ]


def classify(case: Case, ws: Workspace) -> Tuple[str, str]:
    """Run one case (in a thread, so that a hang is reported rather than waited for).
    RETURNS (Tuple[str, str]): the outcome and a detail (the code, or what went wrong)."""
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = case.run(ws)
        except BaseException as err:  # noqa: BLE001 - every outcome is classified
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(case.timeout)
    if thread.is_alive():
        return "hang", f"still running after {case.timeout:.0f} s"
    error = box.get("error")
    if error is None:
        problem = box.get("result")
        if isinstance(problem, Escaped):
            return "escape", str(problem)
        if problem:
            return "silent_wrong", str(problem)
        return ("clean", "") if case.expect == "clean" else ("silent_wrong", "accepted")
    code = getattr(error, "code", None) if isinstance(error, (BioELError, Coded)) else None
    if code and case.expect == "coded" and (case.code is None or code == case.code):
        return "coded", code
    if code:
        return "silent_wrong", f"{code} where {case.expect} {case.code or ''} was expected: {error}"[:300]
    return "crash", f"{type(error).__name__}: {str(error)[:300]}"


def run_cases(root: Path, encoder: str, main: Callable[[List[str]], None],
              only: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """Every case (or those whose name holds one of `only`) in a workspace under `root`
    (`main`: the command line's entry point, see `Workspace`).
    RETURNS (List[Dict[str, Any]]): a row per case: group, name, expect, outcome, detail."""
    import logging

    from spacy_bioel.progress import progress_bar

    ws = Workspace(root, encoder, main)
    rows = []
    selected = [c for c in cases() if not only or any(o in c.name for o in only)]
    quiet = logging.getLogger("spacy_bioel")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the cases' own INFO lines are not the report
    try:
        for case in progress_bar(selected, desc="hostile cases", unit=" cases"):
            outcome, detail = classify(case, ws)
            rows.append({"group": case.group, "name": case.name, "expect": case.expect,
                         "outcome": outcome, "detail": detail})
    finally:
        quiet.setLevel(level)
    return rows


OUTCOMES = ("coded", "clean", "crash", "silent_wrong", "hang", "escape")


def summarize(rows: Sequence[Dict[str, Any]]) -> Dict[str, Dict[str, int]]:
    """Counts per group (and 'all') of each outcome."""
    out: Dict[str, Dict[str, int]] = {}
    for row in rows:
        for group in (row["group"], "all"):
            counts = out.setdefault(group, {"cases": 0, **{o: 0 for o in OUTCOMES}})
            counts["cases"] += 1
            counts[row["outcome"]] += 1
    if "all" in out:
        out["all"] = out.pop("all")  # the total last
    return out


def table(rows: Sequence[Dict[str, Any]]) -> str:
    """The markdown table: cases, coded, clean, crashes, silent wrong, hangs and
    escapes per group."""
    lines = ["| edge | cases | coded | clean | crashes | silent wrong | hangs | escapes |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for group, c in summarize(rows).items():
        label = "**all**" if group == "all" else group
        lines.append(f"| {label} | {c['cases']} | {c['coded']} | {c['clean']} | {c['crash']} | "
                     f"{c['silent_wrong']} | {c['hang']} | {c['escape']} |")
    bad = [r for r in rows if r["outcome"] not in ("coded", "clean")]
    if bad:
        lines += ["", "Not yet right:"] + [f"- {r['group']}: {r['name']}: {r['outcome']} ({r['detail']})"
                                           for r in bad]
    return "\n".join(lines) + "\n"


__all__ = ["Case", "Escaped", "Workspace", "cases", "classify", "run_cases", "summarize", "table", "cli"]
