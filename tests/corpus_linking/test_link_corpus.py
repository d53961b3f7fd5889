"""`link-corpus`: shards in (JSONL, PubTator, DocBin), part files out; the local
engine, the Ray engine (identical output, a worker killed mid-run loses and
duplicates nothing) and the byte-range read tasks of a JSONL shard."""
import json
from collections import Counter

import pytest
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_bioel.cli import app
from spacy_bioel.corpus_linking.records import iter_shard, read_outputs, shard_chunks

from ..utils import save_linker_pipeline, starts_ray

pytestmark = starts_ray()

NAMES = [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"), ("D3", "hepatoblastoma"),
         ("D4", "familial adenomatous polyposis")]
MENTIONS = ["colon cancer", "heart attack", "hepatoblastoma", "FAP", "polyposis of the colon"]


def write_jsonl(path, n, with_entities=True, ids=True):
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            mention = MENTIONS[i % len(MENTIONS)]
            text = f"Case {i}: the patient has {mention} and was seen again."
            start = text.index(mention)
            row = {"text": text}
            if ids:
                row["id"] = f"doc{i}"
            if with_entities:
                row["entities"] = [{"start": start, "end": start + len(mention), "label": "Disease"}]
            handle.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def pipeline_dir(tiny_bert_dir, tmp_path_factory):
    """A linker on the tiny encoder, with an entity ruler before it (for text without entities)."""
    path = tmp_path_factory.mktemp("corpus_linking") / "pipeline"
    save_linker_pipeline(path, tiny_bert_dir, NAMES, patterns=MENTIONS)
    return path


def run(*args):
    result = CliRunner().invoke(app, ["link-corpus", *map(str, args)])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_byte_range_chunks_read_every_line_once(tmp_path):
    shard = write_jsonl(tmp_path / "a.jsonl", 57, ids=False)
    whole = list(iter_shard(shard))
    assert len(whole) == 57 and whole[0]["id"] == "a.jsonl@0"
    for size in (1, 7, 100, 333, 10 ** 6):
        chunks = shard_chunks(shard, size)
        parts = [r for path, a, b in chunks for r in iter_shard(path, start=a, stop=b)]
        assert parts == whole, size


def test_pubtator_and_docbin_shards(tmp_path):
    (tmp_path / "p.txt").write_text("11|t|Colon cancer.\n11|a|And FAP.\n11\t0\t12\tColon cancer\tDisease\tD1\n"
                                    "11\t18\t21\tFAP\tDisease\tD4\n\n")
    assert list(iter_shard(tmp_path / "p.txt")) == [
        {"id": "11", "text": "Colon cancer. And FAP.", "ents": [[0, 12, "Disease"], [18, 21, "Disease"]],
         "origin": [str((tmp_path / "p.txt").resolve()), 0]}]
    nlp = spacy.blank("en")
    doc = nlp("Heart attack here.")
    doc.ents = [doc.char_span(0, 12, "Disease")]
    doc.user_data["doc_id"] = "x1"
    DocBin(docs=[doc], store_user_data=True).to_disk(tmp_path / "d.spacy")
    assert list(iter_shard(tmp_path / "d.spacy")) == [
        {"id": "x1", "text": "Heart attack here.", "ents": [[0, 12, "Disease"]],
         "origin": [str((tmp_path / "d.spacy").resolve()), 0]}]


def test_plain_text_and_raw_pubtator_are_read_for_the_ner(tmp_path):
    """A .txt that is no PubTator is one plain text document (id: its name); a
    PubTator shard without mention lines is raw text: in both the pipeline's NER
    finds the mentions (ents None). One with mention lines keeps them, and its
    documents without any have none (ents [])."""
    (tmp_path / "note.txt").write_text("History of colon cancer.\n\nNow FAP | t | here.\n")
    assert list(iter_shard(tmp_path / "note.txt")) == [
        {"id": "note.txt", "text": "History of colon cancer.\n\nNow FAP | t | here.\n",
         "ents": None, "origin": [str((tmp_path / "note.txt").resolve()), 0]}]
    (tmp_path / "raw.pubtator").write_text("1|t|Colon cancer.\n1|a|And FAP.\n\n2|t|Asthma.\n2|a|Rare.\n")
    assert [(r["id"], r["text"], r["ents"]) for r in iter_shard(tmp_path / "raw.pubtator")] == [
        ("1", "Colon cancer. And FAP.", None), ("2", "Asthma. Rare.", None)]
    (tmp_path / "mixed.txt").write_text("1|t|Colon cancer.\n1|a|And FAP.\n\n2|t|Asthma.\n2|a|Rare.\n"
                                        "2\t0\t6\tAsthma\tDisease\tD3\n")
    assert [(r["id"], r["ents"]) for r in iter_shard(tmp_path / "mixed.txt")] == [
        ("1", []), ("2", [[0, 6, "Disease"]])]
    (tmp_path / "broken.txt").write_text("1|t|Colon cancer.\n1|x|oops\n")  # still PubTator: named
    with pytest.raises(Exception, match="E050.*broken.txt, line 2"):
        list(iter_shard(tmp_path / "broken.txt"))
    # the file's characters as they are (offsets into the output text are offsets into the
    # file's), a byte-order mark left out; an empty file is an empty document; bad bytes are named
    (tmp_path / "crlf.txt").write_bytes(b"\xef\xbb\xbfColon cancer.\r\nAsthma.\r\n")
    assert [r["text"] for r in iter_shard(tmp_path / "crlf.txt")] == ["Colon cancer.\r\nAsthma.\r\n"]
    (tmp_path / "empty.txt").write_text("\n\n")
    assert [(r["id"], r["text"], r["ents"]) for r in iter_shard(tmp_path / "empty.txt")] == [
        ("empty.txt", "\n\n", None)]
    (tmp_path / "latin1.txt").write_bytes(b"Colon cancer.\ncaf\xe9 asthma\n")
    with pytest.raises(Exception, match="E018.*latin1.txt, line 2.*0xe9 at offset 3"):
        list(iter_shard(tmp_path / "latin1.txt"))


def test_a_docbin_of_raw_docs_is_read_for_the_ner(tmp_path):
    """A Doc with its entity annotation missing (`make_doc`) is raw text (ents None);
    one whose ents were set, even to none, keeps them."""
    nlp = spacy.blank("en")
    raw = nlp.make_doc("Heart attack here.")
    none = nlp.make_doc("Nothing here.")
    none.ents = []
    DocBin(docs=[raw, none]).to_disk(tmp_path / "d.spacy")
    assert [r["ents"] for r in iter_shard(tmp_path / "d.spacy")] == [None, []]


def test_ids_in_another_vocabulary(tmp_path, tiny_bert_dir):
    """--id-space writes each concept id in that vocabulary (the candidates keep
    the KB's); one that no concept of the KB has is E261 before any output."""
    names = [("MESH:D1", "colorectal carcinoma"), ("MESH:D2", "myocardial infarction")]
    path = save_linker_pipeline(tmp_path / "p", tiny_bert_dir, names, patterns=MENTIONS[:2])
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", 2)
    run(path, tmp_path / "in", tmp_path / "out", "--id-space", "msh")
    ents = [e for r in read_outputs(tmp_path / "out") for e in r["entities"]]
    assert len(ents) == 2 and all(e["kb_id"] in ("D1", "D2") for e in ents)
    assert all(c.startswith("MESH:") for e in ents for c, _ in e["candidates"])
    result = CliRunner().invoke(app, ["link-corpus", str(path), str(tmp_path / "in"),
                                      str(tmp_path / "out2"), "--id-space", "UMLS"])
    assert result.exception.code == "E261" and not list((tmp_path / "out2").glob("part-*"))
    result = CliRunner().invoke(app, ["link-corpus", str(path), str(tmp_path / "in"),
                                      str(tmp_path / "out3"), "--kb", "embedded:doid"])
    assert result.exception.code == "E262"  # --kb is the default pipeline's


def test_the_default_pipeline_links_a_folder_of_plain_text(tmp_path):
    """PIPELINE bioel: the default pipeline (the shipped NER and the untrained
    linker over --kb), built into the cache once and loaded by the worker."""
    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase(name="toy")
    for cid, name in NAMES:
        kb.add(Concept(cid, name))
    kb.to_disk(tmp_path / "toy.bioelkb")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("A patient with colorectal carcinoma and hepatoblastoma.\n")
    (tmp_path / "in" / "b.pubtator").write_text("7|t|Myocardial infarction.\n7|a|It was fatal.\n")
    result = run("bioel", tmp_path / "in", tmp_path / "out", "--kb", tmp_path / "toy.bioelkb")
    assert "2 in, 2 out, 0 lost" in result.output
    records = {r["id"]: r for r in read_outputs(tmp_path / "out")}
    found = {r_id: {(e["text"], e["kb_id"]) for e in r["entities"]} for r_id, r in records.items()}
    assert ("colorectal carcinoma", "D1") in found["a.txt"] and ("hepatoblastoma", "D3") in found["a.txt"]
    assert ("Myocardial infarction", "D2") in found["7"]
    assert {r["mentions_from"] for r in records.values()} == {"ner"}
    kept = (tmp_path / "toy.bioelkb").read_bytes()
    result = CliRunner().invoke(app, ["link-corpus", "bioel", str(tmp_path / "in"), str(tmp_path / "o2"),
                                      "--kb", str(tmp_path / "toy.bioelkb"),
                                      "--report", str(tmp_path / "toy.bioelkb")])
    assert result.exception.code == "E245" and (tmp_path / "toy.bioelkb").read_bytes() == kept


def test_bad_input_is_named(tmp_path, pipeline_dir):
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n{"txt": "no text"}\n')
    result = CliRunner().invoke(app, ["link-corpus", str(pipeline_dir), str(tmp_path / "bad.jsonl"),
                                      str(tmp_path / "out")])
    assert result.exception.code == "E202" and "byte 17" in str(result.exception)
    (tmp_path / "notes.docx").write_text("x")
    result = CliRunner().invoke(app, ["link-corpus", str(pipeline_dir), str(tmp_path / "notes.docx"),
                                      str(tmp_path / "out")])
    assert result.exception.code == "E201"


def test_local_engine_links_and_verifies(tmp_path, pipeline_dir):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", 30)
    write_jsonl(tmp_path / "in" / "b.jsonl", 20, with_entities=False, ids=False)  # the NER finds them
    result = run(pipeline_dir, tmp_path / "in", tmp_path / "out", "--batch-docs", "8",
                 "--report", tmp_path / "report.json")
    assert "50 in, 50 out, 0 lost, 0 duplicated" in result.output
    records = {r["id"]: r for r in read_outputs(tmp_path / "out")}
    assert len(records) == 50 and records["b.jsonl@0"]["entities"][0]["text"] == "colon cancer"
    ent = records["doc1"]["entities"][0]
    assert ent["text"] == "heart attack" and ent["kb_id"] in {"D1", "D2", "D3", "D4", "NIL"}
    assert len(ent["candidates"]) == 4 and 0 <= ent["prob"] <= 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verify"] == {"input_documents": 50, "output_documents": 50, "lost": 0,
                                "duplicated": 0, "input_mentions": 30, "output_mentions": 30,
                                "found_by_ner": 20, "skipped_mentions": 0,
                                "mentions_unaccounted": 0}
    assert report["parts"] == 7  # 30 / 8 -> 4, 20 / 8 -> 3
    again = CliRunner().invoke(app, ["link-corpus", str(pipeline_dir), str(tmp_path / "in"),
                                     str(tmp_path / "out")])
    assert again.exception.code == "E205"  # never mixes two runs' parts


# The fault drill, installed in each Ray worker process by Ray's `worker_process_setup_hook`
# (nothing of it is in the library): the first actor to finish N batches dies abruptly after
# writing its N-th part and before returning it, once per MARKER file.
FAULT_DRILL = """
import os

def install():
    from spacy_bioel.corpus_linking import worker

    marker, _, after = os.environ["BIOEL_TEST_KILL_ONCE"].rpartition(":")
    link_and_write, calls = worker.LinkWorker.link_and_write, [0]

    def dying(self, records):
        summary = link_and_write(self, records)
        calls[0] += 1
        if calls[0] >= int(after):
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return summary
            os._exit(137)
        return summary

    worker.LinkWorker.link_and_write = dying
"""


def test_ray_engine_equals_local_and_survives_a_killed_worker(tmp_path, pipeline_dir):
    import logging
    import os

    ray = pytest.importorskip("ray", reason="Ray Data (the ray extra)")
    write_jsonl(tmp_path / "a.jsonl", 240)
    run(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "local", "--batch-docs", "10")
    marker = tmp_path / "killed"
    (tmp_path / "bioel_fault_drill.py").write_text(FAULT_DRILL)
    path = os.pathsep.join(p for p in [str(tmp_path), os.environ.get("PYTHONPATH", "")] if p)
    ray.init(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": "bioel_fault_drill.install",
                          "env_vars": {"PYTHONPATH": path,  # the first actor to finish 3 batches dies
                                       "BIOEL_TEST_KILL_ONCE": f"{marker}:3"}})
    try:
        result = run(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "ray", "--engine", "ray",
                     "--num-workers", "2", "--batch-docs", "10", "--chunk-mb", "0.004",
                     "--report", tmp_path / "ray.json")
    finally:
        ray.shutdown()
    assert marker.exists(), "the fault drill never killed a worker"
    assert "240 in, 240 out, 0 lost, 0 duplicated" in result.output
    local = sorted(read_outputs(tmp_path / "local"), key=lambda r: r["id"])
    remote = sorted(read_outputs(tmp_path / "ray"), key=lambda r: r["id"])
    assert Counter(r["id"] for r in remote) == Counter(f"doc{i}" for i in range(240))
    for a, b in zip(local, remote):
        assert a["text"] == b["text"] and len(a["entities"]) == len(b["entities"])
        for x, y in zip(a["entities"], b["entities"]):
            assert (x["kb_id"], x["is_nil"]) == (y["kb_id"], y["is_nil"])
            assert [c for c, _ in x["candidates"]] == [c for c, _ in y["candidates"]]
            assert x["prob"] == pytest.approx(y["prob"], abs=1e-4)


def test_ray_links_records_whose_ner_finds_the_mentions(tmp_path, pipeline_dir):
    """Shards without any given mention (JSONL without "entities", a .txt) on Ray:
    the NER finds them, as on the local engine (a column of None entities once
    reached the actors as NaN and failed every batch)."""
    import logging

    ray = pytest.importorskip("ray", reason="Ray Data (the ray extra)")
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", 12, with_entities=False)
    (tmp_path / "in" / "note.txt").write_text("A note on heart attack and hepatoblastoma.\n")
    run(pipeline_dir, tmp_path / "in", tmp_path / "local", "--batch-docs", "5")
    ray.init(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    try:
        result = run(pipeline_dir, tmp_path / "in", tmp_path / "ray", "--engine", "ray",
                     "--num-workers", "1", "--batch-docs", "5")
    finally:
        ray.shutdown()
    assert "13 in, 13 out, 0 lost, 0 duplicated" in result.output

    def mentions(folder):
        return {r["id"]: [(e["start"], e["end"], e["kb_id"]) for e in r["entities"]]
                for r in read_outputs(folder)}

    local = mentions(tmp_path / "local")
    assert mentions(tmp_path / "ray") == local and len(local["note.txt"]) == 2


def test_records_without_entities_need_a_pipeline_with_an_ner(tmp_path, tiny_bert_dir):
    """Text without "entities" and a pipeline without an NER: E198 naming the
    record, not an output with no mentions."""
    bare = save_linker_pipeline(tmp_path / "bare", tiny_bert_dir, NAMES)
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", 2, with_entities=False)
    result = CliRunner().invoke(app, ["link-corpus", str(bare), str(tmp_path / "in"),
                                      str(tmp_path / "out")])
    message = str(result.exception)
    assert result.exit_code != 0 and "E198" in message and "doc0" in message and "no NER" in message
