"""Round three of the hostile-user runs (issue 71): what a command may delete or
write over, packaging's view of a pipeline, span groups through every door,
paths that do not exist, offsets against their text, the tracebacks left, the
decision cache, the embedded default's cache and the smaller findings. Each
case is a finding reproduced as a user meets it; `bench.hostile.classify`
classifies it, and an `Escaped` result (a file deleted or written where the
command must not) is an escape.
"""
from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional

from bench.hostile import (CONCEPTS, Case, Coded, Escaped, Workspace, _harm_after, _rows,
                           _write_jsonl, cli, cli_expect)

TEXT = "colon cancer and heart attack"


def cli_quiet(ws: Workspace, *args: Any) -> str:
    """`cli_expect` with the warnings a run gives about what it counted (W012, W017) not
    raised (the case reads the counts)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cli_expect(ws, *args)


# -- output folders ------------------------------------------------------------------------
def _victim(ws: Workspace, name: str = "victim") -> Path:
    folder = ws.folder(name)
    (folder / "thesis.txt").write_text("three years of work")
    return folder


def _intact(*paths: Path) -> Callable[[], Optional[str]]:
    """A harm check: each path still holds what it held when this was called."""
    before = {path: _snapshot(path) for path in paths}

    def harm() -> Optional[str]:
        changed = [str(p) for p, snapshot in before.items() if _snapshot(p) != snapshot]
        return Escaped(f"changed or deleted: {', '.join(changed)}") if changed else None
    return harm


def _snapshot(path: Path) -> Any:
    if path.is_dir():
        return sorted((str(p.relative_to(path)), p.read_bytes() if p.is_file() else b"")
                      for p in path.rglob("*"))
    return path.read_bytes() if path.exists() else None


def _shard(ws: Workspace) -> Path:
    return _write_jsonl(ws.folder("shards") / "a.jsonl", _rows(2, "x"))


def _link_corpus_into(ws: Workspace, target: Callable[[Path, Path], Path],
                      pipeline: Optional[Path] = None) -> Optional[str]:
    """link-corpus of a shard with a copy of the pipeline (`pipeline`: another path)
    into `target(pipeline, shard)`: refused, and nothing it names changed."""
    shard = _shard(ws)
    copy = ws.copy()
    output = target(copy, shard)
    return _harm_after(lambda: cli_expect(ws, "link-corpus", pipeline or copy, shard, output),
                       _intact(output, shard, copy)) or "accepted"


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _into_working_directory(ws: Workspace) -> Optional[str]:
    home = _victim(ws, "cwd")
    shard = _shard(ws)
    with _working_directory(home):
        return _harm_after(lambda: cli_expect(ws, "link-corpus", ws.pipeline, shard, "."),
                           _intact(home, shard)) or "accepted"


def _report_onto(ws: Workspace, which: str) -> Optional[str]:
    shard = _shard(ws)
    pipeline = ws.copy()
    target = shard if which == "shard" else pipeline / "config.cfg"
    return _harm_after(
        lambda: cli_expect(ws, "link-corpus", pipeline, shard, ws.folder("out") / "o",
                           "--report", target),
        _intact(shard, pipeline)) or "accepted"


def _overwrite_keeps_user_files(ws: Workspace) -> Optional[str]:
    from spacy_bioel.corpus_linking.records import read_outputs

    shard = _shard(ws)
    output = ws.folder("out") / "o"
    cli_expect(ws, "link-corpus", ws.pipeline, shard, output)
    (output / "notes.txt").write_text("mine")
    cli_expect(ws, "link-corpus", ws.pipeline, shard, output, "--overwrite")
    if (output / "notes.txt").read_text() != "mine":
        return Escaped("--overwrite deleted a file it did not write")
    records = read_outputs(output)
    return None if len(records) == 2 else f"{len(records)} documents out of 2"


def _stale_staging(ws: Workspace) -> Optional[str]:
    from spacy_bioel.corpus_linking.records import read_outputs
    from spacy_bioel.outputs import write_marker

    shard = _shard(ws)
    output = ws.folder("out") / "o"
    cli_expect(ws, "link-corpus", ws.pipeline, shard, output)
    staging = output / ".staging"  # an --overwrite run killed before it finished
    staging.mkdir()
    write_marker(staging, "link-corpus")
    (staging / ("part-" + "0" * 24 + ".jsonl")).write_text('{"id": "half"}\n')
    cli_expect(ws, "link-corpus", ws.pipeline, shard, output, "--overwrite")
    ids = sorted(r["id"] for r in read_outputs(output))
    return None if ids == ["0", "1"] and not staging.exists() else f"output {ids}, staging left"


def _package(ws: Workspace, damage: str) -> Optional[str]:
    pipeline = ws.copy()
    secret = ws.folder("outside") / "secret.txt"
    secret.write_text("a key")
    output = ws.folder("wheels")
    if damage == "vocab link":
        (pipeline / "vocab" / "extra.txt").symlink_to(secret)
    elif damage == "top link":
        (pipeline / "notes.txt").symlink_to(secret)
    elif damage == "inside":
        output = pipeline / "wheels"
    elif damage == "not a build":
        (output / "en_bioel_linker-0.1.0").mkdir()
        (output / "en_bioel_linker-0.1.0" / "thesis.txt").write_text("mine")

    def leaked() -> Optional[str]:
        wheels = list(Path(output).rglob("*.whl")) if Path(output).exists() else []
        copies = [p for p in Path(output).rglob("*.txt") if p.is_file() and
                  p.read_text(errors="replace") == "a key"] if Path(output).exists() else []
        return Escaped(f"packed a file from outside the pipeline: {copies}") if copies else \
            (Escaped(f"a wheel was built: {wheels}") if wheels else None)
    guard = _intact(pipeline, output) if damage in ("not a build", "inside") else lambda: None
    return _harm_after(lambda: cli_expect(ws, "package", pipeline, output),
                       lambda: leaked() or guard()) or "accepted"


# -- span groups ---------------------------------------------------------------------------
def _span_group_pipeline(ws: Workspace, ner: bool = False) -> Path:
    path = ws.folder("sc") / "pipeline"
    nlp = ws.nlp(spans_key="sc")
    if ner:
        ruler = nlp.add_pipe("entity_ruler", before="bioel_linker")
        ruler.add_patterns([{"label": "Disease", "pattern": "colon cancer"}])
    nlp.to_disk(path)
    return path


def _link_lines(out: str) -> List[str]:
    return [line for line in out.splitlines() if line.startswith("colon cancer")]


def _link_span_group(ws: Workspace) -> Optional[str]:
    out = cli_expect(ws, "link", "[colon cancer] and more", "--linker", _span_group_pipeline(ws))
    lines = _link_lines(out)
    return None if lines and "NIL" not in lines[0] and "D1" in lines[0] else f"printed {lines}"


def _visualize(ws: Workspace, pipeline: Path, text: str) -> Optional[str]:
    page = ws.folder("page") / "links.html"
    cli_expect(ws, "visualize", pipeline, "--html", page, "--text", text)
    html = page.read_text(encoding="utf-8")
    return None if 'data-kb-id="D1"' in html else "the page shows no link to D1"


def _link_corpus_docbin_group(ws: Workspace) -> Optional[str]:
    import spacy
    from spacy.tokens import DocBin

    folder = ws.folder("docbin")
    doc = spacy.blank("en")(TEXT)
    doc.spans["sc"] = [doc.char_span(0, 12, "Disease"), doc.char_span(0, 5, "Part"),
                       doc.char_span(17, 29, "Disease")]  # overlapping: a span group's
    DocBin(docs=[doc], store_user_data=True).to_disk(folder / "d.spacy")
    report = folder / "report.json"
    cli_expect(ws, "link-corpus", _span_group_pipeline(ws), folder / "d.spacy", folder / "out",
               "--report", report)
    result = json.loads(report.read_text())
    verify = result["verify"]
    return None if result["mentions"] == 3 and verify["input_mentions"] == 3 and \
        not verify["mentions_unaccounted"] else f"{result['mentions']} mentions linked, {verify}"


def _same_offsets_other_labels(ws: Workspace) -> Optional[str]:
    import spacy

    nlp = spacy.load(_span_group_pipeline(ws))
    doc = nlp.make_doc(TEXT)
    doc.spans["sc"] = [doc.char_span(0, 12, "Disease"), doc.char_span(0, 12, "Anatomy")]
    doc = nlp(doc)
    first, second = doc.spans["sc"]
    first._.kb_prob = 0.25
    second._.kb_prob = 0.75
    values = (doc.spans["sc"][0]._.kb_prob, doc.spans["sc"][1]._.kb_prob)
    return None if values == (0.25, 0.75) else f"the two spans read {values}"


# -- tracebacks and small findings ---------------------------------------------------------------
def _ner_pipeline(ws: Workspace) -> Path:
    path = ws.folder("ner") / "pipeline"
    nlp = ws.nlp()
    ruler = nlp.add_pipe("entity_ruler", before="bioel_linker")
    ruler.add_patterns([{"label": "Disease", "pattern": "colon cancer"}])
    nlp.to_disk(path)
    return path


LONG = "colon cancer. " * 71_429  # 1,000,006 characters: over spaCy's default nlp.max_length


def _link_corpus_long_record(ws: Workspace) -> Optional[str]:
    folder = ws.folder("long")
    shard = _write_jsonl(folder / "a.jsonl", [{"id": "short", "text": TEXT},
                                              {"id": "long", "text": LONG}])
    report = folder / "report.json"
    cli_quiet(ws, "link-corpus", _ner_pipeline(ws), shard, folder / "out", "--report", report)
    result = json.loads(report.read_text())
    ok = result["documents"] == 2 and result["skipped_documents"] == 1 and result["mentions"] == 1
    return None if ok else f"{result['documents']} documents, {result.get('skipped_documents')} " \
                           f"skipped, {result['mentions']} mentions"


def _kb_build(ws: Workspace, fmt: str, content: bytes, *options: str,
              expect_ids: Optional[List[str]] = None) -> Optional[str]:
    from spacy_bioel.kb.knowledge_base import KnowledgeBase

    folder = ws.folder("kb")
    (folder / "source").write_bytes(content)
    cli_expect(ws, "kb", "build", fmt, folder / "source", folder / "kb.bioelkb", *options)
    kb = KnowledgeBase.from_disk(folder / "kb.bioelkb")
    ids = [c.concept_id for c in kb]
    if expect_ids is None:
        return f"loaded {ids}"
    problem = None if ids == expect_ids else f"loaded {ids}, expected {expect_ids}"
    if problem is None and expect_ids and kb.resolve(f"MESH: {expect_ids[0]}") != expect_ids[0]:
        problem = f"resolve('MESH: {expect_ids[0]}') does not find it"
    return problem


MEDIC = "D001||Colon cancer|colon carcinoma\nD002||Asthma\n"


def _damaged_pipeline(ws: Workspace, damage: Callable[[Path], None]) -> Optional[str]:
    path = ws.copy()
    damage(path)
    cli_expect(ws, "link", "[colon cancer]", "--linker", path)
    return "a damaged pipeline linked"


def _strings_of_wrong_shape(path: Path) -> None:
    (path / "vocab" / "strings.json").write_text("[1, 2]")


def _manifest_size(value: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        manifest = path / "bioel_linker" / "manifest.json"
        data = json.loads(manifest.read_text())
        first = next(iter(data["files"]))
        data["files"][first]["size"] = 12345
        manifest.write_text(json.dumps(data).replace("12345", value))
    return damage


def _empty_manifest(path: Path) -> None:
    manifest = path / "bioel_linker" / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "files": {}}))


def _accents_and_the_cache(ws: Workspace) -> Optional[str]:
    """A hybrid linker (TF-IDF reads accents, the encoder strips them): a mention
    must link the same after its accented twin appeared in the same document."""
    import spacy

    from spacy_bioel.kb.concept import Concept
    from spacy_bioel.kb.knowledge_base import KnowledgeBase

    kb = KnowledgeBase(name="accents")
    for cid, name in (("D1", "Ménière disease"), ("D2", "Meniere syndrome"), ("D3", "asthma")):
        kb.add(Concept(cid, name))
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("bioel_linker", config={
        "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": ws.encoder, "max_length": 16},
        "candidates": {"@misc": "spacy-bioel.HybridCandidates.v1", "sparse_weight": 0.9}})
    pipe.set_kb(kb)
    nlp.initialize(lambda: [])

    def linked(text: str, spans):
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(s, e, "Disease") for s, e in spans]
        # scores to 4 places: a batch of two can differ from one by float rounding (1e-8)
        return [(e.text, e.kb_id_, [(c, round(p, 4)) for c, p in e._.kb_ents])
                for e in nlp(doc).ents]

    together = linked("Ménière disease, then Meniere disease", [(0, 15), (22, 37)])[1]
    alone = linked("Meniere disease", [(0, 15)])[0]
    return None if together == alone else f"after its accented twin {together}, alone {alone}"


# -- the embedded default's cache -----------------------------------------------------------------
def _default_kb():
    from spacy_bioel.kb.concept import Concept
    from spacy_bioel.kb.knowledge_base import KnowledgeBase

    kb = KnowledgeBase(name="hostile-default")
    for cid, name in CONCEPTS:
        kb.add(Concept(cid, name))
    return kb


def _default_entry(ws: Workspace) -> tuple:
    from spacy_bioel.pipeline import embedded_default

    cache = ws.folder("default-cache")
    kb = _default_kb()
    embedded_default.default_pipeline(kb, ws.encoder, cache=str(cache))
    key = embedded_default.pipeline_key(kb, ws.encoder)
    return cache, kb, key


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """`folder` and everything in it read-only. Root may write anyway, so for root
    `os.access` answers as the mode bits do (as for the user of a container image)."""
    modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")] if not p.is_symlink()}
    for path, mode in modes.items():
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    real_access = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and Path(path).resolve().is_relative_to(folder.resolve()):
            return False
        return real_access(path, mode, *args, **kwargs)
    os.access = access
    try:
        yield
    finally:
        os.access = real_access
        for path, mode in modes.items():
            path.chmod(mode)


def _read_only_cache(ws: Workspace) -> Optional[str]:
    """The 'auto' cache ($SPACY_BIOEL_CACHE) built, then made read-only (as one baked
    into a container image): the next call loads its entry, encoding nothing."""
    from bench.hostile import _environ
    from spacy_bioel.pipeline import embedded_default

    root = ws.folder("auto-cache")
    kb = _default_kb()
    built = []
    real = embedded_default.untrained_pipeline
    with _environ({"SPACY_BIOEL_CACHE": str(root)}):
        embedded_default.default_pipeline(kb, ws.encoder)
        embedded_default.untrained_pipeline = lambda *a, **k: built.append(1) or real(*a, **k)
        try:
            with _read_only(root):
                embedded_default.default_pipeline(kb, ws.encoder)
        finally:
            embedded_default.untrained_pipeline = real
    return "the complete read-only entry was not used: built again" if built else None


def _foreign_entry(ws: Workspace) -> Optional[str]:
    import shutil
    import warnings

    from spacy_bioel.pipeline import embedded_default
    from spacy_bioel.pipeline.loading import find_linker

    cache, kb, key = _default_entry(ws)
    entry = cache / key
    shutil.rmtree(entry)
    shutil.copytree(ws.pipeline, entry)  # another pipeline, placed under the key by hand
    before = _snapshot(entry)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp = embedded_default.default_pipeline(kb, ws.encoder, cache=str(cache))
    if not any("W016" in str(w.message) for w in caught):
        return "the foreign entry was loaded without a word"
    if _snapshot(entry) != before:
        return Escaped("the foreign entry was changed or deleted")
    return None if find_linker(nlp).cfg["top_k"] == embedded_default.fast_config()["top_k"] else \
        "the pipeline returned is not the default"


def _killed_build(ws: Workspace) -> Optional[str]:
    import subprocess
    import sys

    from spacy_bioel.outputs import write_partial_marker
    from spacy_bioel.pipeline import embedded_default

    cache = ws.folder("default-cache")
    kb = _default_kb()
    key = embedded_default.pipeline_key(kb, ws.encoder)
    partial = cache / f".{key}.deadbeef.partial"
    partial.mkdir()
    write_partial_marker(partial, embedded_default.ENTRY)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    marker = json.loads((partial / ".spacy-bioel-output.json").read_text())
    (partial / ".spacy-bioel-output.json").write_text(json.dumps({**marker, "pid": int(dead)}))
    (partial / "config.cfg").write_text("[nlp]\n")  # half written
    embedded_default.default_pipeline(kb, ws.encoder, cache=str(cache))
    return "the killed build's folder is still there" if partial.exists() else None


# -- Ray ---------------------------------------------------------------------------------------------
def _ray_workers(ws: Workspace) -> Optional[str]:
    try:
        import ray
        import psutil
    except ImportError:
        return None  # counted clean: nothing to check without the ray extra
    import threading
    import time

    folder = ws.folder("ray-shards")
    for i in range(12):
        _write_jsonl(folder / f"s{i:02d}.jsonl", _rows(1, f"s{i}"))
    seen, done = set(), threading.Event()

    def poll() -> None:
        # this run's workers only: ray.init starts the raylet as this process' child, and the
        # workers under it (another Ray session on the machine, such as a test run beside this
        # one, has its own)
        me = psutil.Process()
        while not done.is_set():
            for process in me.children(recursive=True):
                try:
                    if any("default_worker.py" in part for part in process.cmdline()):
                        seen.add(process.pid)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            time.sleep(0.05)
    import logging

    # two CPUs, as on the machine the finding was made on: Ray may start idle workers up to the
    # CPU count, so the count is only comparable on a cluster of a known size
    ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        cli_expect(ws, "link-corpus", ws.pipeline, folder, ws.folder("ray-out") / "o",
                   "--engine", "ray", "--num-workers", "1")
    finally:
        done.set()
        thread.join()
        ray.shutdown()
    # one actor, one read task at a time, and Ray's own helpers: never one process a shard
    return None if len(seen) <= 6 else f"{len(seen)} worker processes for 12 shards and 1 actor"


def _message_of(code: str) -> Callable[[Workspace], Optional[str]]:
    def check(ws: Workspace) -> Optional[str]:
        from spacy_bioel.errors import Errors

        message = getattr(Errors, code)
        return f"{code} prints {message[:120]!r}" if "{{" in message or "}}" in message else None
    return check


# -- the cases -------------------------------------------------------------------------------------
def cases() -> List[Case]:
    c = Case
    return [
        c("output folders", "link-corpus into a folder of the user's files", "coded",
          lambda ws: _link_corpus_into(ws, lambda p, s: _victim(ws)), "E246"),
        c("output folders", "link-corpus, a missing pipeline, into the user's folder", "coded",
          lambda ws: _link_corpus_into(ws, lambda p, s: _victim(ws),
                                       pipeline=ws.root / "no-such-pipeline"), "E247"),
        c("output folders", "link-corpus into the working directory", "coded",
          _into_working_directory, "E245"),
        c("output folders", "link-corpus into the pipeline", "coded",
          lambda ws: _link_corpus_into(ws, lambda p, s: p), "E245"),
        c("output folders", "link-corpus into the folder of its input", "coded",
          lambda ws: _link_corpus_into(ws, lambda p, s: s.parent), "E245"),
        c("output folders", "--report onto an input shard", "coded",
          lambda ws: _report_onto(ws, "shard"), "E245"),
        c("output folders", "--report onto the pipeline's config.cfg", "coded",
          lambda ws: _report_onto(ws, "pipeline"), "E245"),
        c("output folders", "--overwrite beside a file of the user's", "clean",
          _overwrite_keeps_user_files),
        c("output folders", "an abandoned staging folder of an earlier run", "clean", _stale_staging),
        c("packaging", "a link in vocab/ to a file outside", "coded",
          lambda ws: _package(ws, "vocab link"), "E231", timeout=300),
        c("packaging", "a link at the top of the pipeline folder", "coded",
          lambda ws: _package(ws, "top link"), "E231", timeout=300),
        c("packaging", "the package inside the pipeline", "coded",
          lambda ws: _package(ws, "inside"), "E245", timeout=300),
        c("packaging", "over a folder that is no earlier build", "coded",
          lambda ws: _package(ws, "not a build"), "E246", timeout=300),
        c("span groups", "link: [bracketed] mentions, spans_key set", "clean", _link_span_group),
        c("span groups", "visualize --html: [bracketed] mentions, spans_key set", "clean",
          lambda ws: _visualize(ws, _span_group_pipeline(ws), "[colon cancer] and more")),
        c("span groups", "link: an NER writing doc.ents before a spans_key linker", "coded",
          lambda ws: cli_expect(ws, "link", "colon cancer here", "--linker",
                                _span_group_pipeline(ws, ner=True)) and "accepted", "E249"),
        c("span groups", "link-corpus: a DocBin shard's span group", "clean", _link_corpus_docbin_group),
        c("span groups", "two spans with the same offsets and other labels", "clean",
          _same_offsets_other_labels),
        c("paths", "link --linker a path that does not exist", "coded",
          lambda ws: cli_expect(ws, "link", "[colon cancer]", "--linker", ws.root / "no-such")
          and "accepted", "E247"),
        c("paths", "visualize a pipeline that does not exist", "coded",
          lambda ws: cli_expect(ws, "visualize", ws.root / "no-such", "--html",
                                ws.folder("page") / "p.html") and "accepted", "E247"),
        c("offsets", "link-corpus: a PubTator mention whose text is not at its offsets", "clean",
          lambda ws: _pubtator_misaligned(ws)),
        c("offsets", "the same with --strict", "coded",
          lambda ws: _pubtator_misaligned(ws, "--strict"), "E234"),
        c("tracebacks", "link: a bracket ending in a space", "clean",
          lambda ws: None if "D1" in "".join(_link_lines(cli_expect(
              ws, "link", "[colon cancer ] here", "--linker", ws.pipeline))) else "not linked"),
        c("tracebacks", "visualize --html: a bracket ending in a space", "clean",
          lambda ws: _visualize(ws, ws.pipeline, "[colon cancer ] here")),
        c("tracebacks", "link: plain text over nlp.max_length", "coded",
          lambda ws: cli_expect(ws, "link", LONG, "--linker", _ner_pipeline(ws)) and "accepted",
          "E248"),
        c("tracebacks", "link-corpus: one record over nlp.max_length", "clean", _link_corpus_long_record),
        c("tracebacks", "kb build: a lone surrogate in a scispaCy JSONL KB", "coded",
          lambda ws: _kb_build(ws, "scispacy", b'{"concept_id": "C1", "canonical_name": "a \\ud800"}\n'),
          "E001"),
        c("tracebacks", "kb build --encoding utf-16: no byte-order mark", "clean",
          lambda ws: _kb_build(ws, "medic", MEDIC.encode("utf-16-be"), "--encoding", "utf-16",
                               expect_ids=["D001", "D002"])),
        c("tracebacks", "kb build --encoding utf-16: a UTF-8 file", "coded",
          lambda ws: _kb_build(ws, "medic", MEDIC.encode("utf-8"), "--encoding", "utf-16"), "E251"),
        c("tracebacks", "vocab/strings.json of the wrong shape", "coded",
          lambda ws: _damaged_pipeline(ws, _strings_of_wrong_shape), "E240"),
        c("tracebacks", "a manifest size of 1e400", "coded",
          lambda ws: _damaged_pipeline(ws, _manifest_size("1e400")), "E176"),
        c("KB ids", "MESH: D001 (a space after the prefix)", "clean",
          lambda ws: _kb_build(ws, "medic", b"MESH: D001||Colon cancer\nD002||Asthma\n",
                               expect_ids=["D001", "D002"])),
        c("KB ids", "a KB id holding a composite separator", "coded",
          lambda ws: _kb_build(ws, "scispacy", b'{"concept_id": "C1+C2", "canonical_name": "a"}\n'),
          "E250"),
        c("decision cache", "hybrid candidates: 'Meniere disease' after 'Ménière disease'", "clean",
          _accents_and_the_cache),
        c("embedded default cache", "a complete read-only cache", "clean", _read_only_cache),
        c("embedded default cache", "another pipeline placed under the entry's key", "clean",
          _foreign_entry),
        c("embedded default cache", "a killed build's partial folder", "clean", _killed_build),
        c("embedded default cache", "a manifest with an empty file list", "coded",
          lambda ws: _damaged_pipeline(ws, _empty_manifest), "E232"),
        c("smaller", "PubTator: a second |a| line", "coded",
          lambda ws: _convert_pubtator(ws, "1|t|Colon cancer.\n1|a|First.\n1|a|Second.\n\n"), "E050"),
        c("smaller", "kb build obo --scopes FOO", "coded",
          lambda ws: _kb_build(ws, "obo", b"format-version: 1.2\n\n[Term]\nid: X:1\nname: a\n"
                                          b"synonym: \"b\" EXACT []\n", "--scopes", "FOO"), "E175"),
        c("smaller", "a MEDIC file with CR-only line endings", "clean",
          lambda ws: _kb_build(ws, "medic", MEDIC.replace("\n", "\r").encode(),
                               expect_ids=["D001", "D002"])),
        c("smaller", "E226's message (no literal braces)", "clean", _message_of("E226")),
        c("smaller", "link --label ''", "coded",
          lambda ws: cli_expect(ws, "link", "[colon cancer]", "--linker", ws.pipeline, "--label", "")
          and "accepted", "E175"),
        c("smaller", "Ray: read tasks of 12 shards, one actor", "clean", _ray_workers, timeout=300),
    ]


def _pubtator_misaligned(ws: Workspace, *options: str) -> Optional[str]:
    folder = ws.folder("pubtator")
    # 'heart attack' is nowhere in "Colon cancer. And asthma.": its offsets hold 'lon ca'
    (folder / "p.txt").write_text("1|t|Colon cancer.\n1|a|And asthma.\n"
                                  "1\t0\t12\tColon cancer\tDisease\tD1\n"
                                  "1\t2\t8\theart attack\tDisease\tD2\n\n")
    report = folder / "report.json"
    cli_quiet(ws, "link-corpus", ws.pipeline, folder / "p.txt", folder / "out", "--report", report,
              *options)
    from spacy_bioel.corpus_linking.records import read_outputs

    (record,) = read_outputs(folder / "out")
    linked = [e["text"] for e in record["entities"]]
    skipped = record["skipped"]
    ok = linked == ["Colon cancer"] and len(skipped) == 1 and "heart attack" in skipped[0][3]
    return None if ok else f"linked {linked}, skipped {skipped}"


def _convert_pubtator(ws: Workspace, content: str) -> Optional[str]:
    folder = ws.folder("convert")
    (folder / "p.txt").write_text(content)
    cli_expect(ws, "convert", "pubtator", folder / "p.txt", folder / "out")
    return "converted"


__all__ = ["cases"]
