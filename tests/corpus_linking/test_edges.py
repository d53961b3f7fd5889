"""link-corpus at its edges: repeated ids in two shards lose nothing, mentions
that cannot be placed are counted per shard (or E234 with --strict), in-place
runs are refused, --overwrite replaces the old parts only after a verified run,
and every bad input or option is one coded line, on both engines."""
import gzip
import json

import pytest
from typer.testing import CliRunner

from spacy_bioel.cli import app
from spacy_bioel.corpus_linking.records import place, read_outputs
from spacy_bioel.errors import BioELWarning

from ..utils import starts_ray
from .test_link_corpus import pipeline_dir  # noqa: F401 - the shared fixture

pytestmark = starts_ray()


def shard(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def rows(n, tag):
    return [{"id": str(i), "text": f"{tag} {i}: colon cancer here.",
             "entities": [[len(f"{tag} {i}: "), len(f"{tag} {i}: colon cancer"), "Disease"]]}
            for i in range(n)]


def invoke(*args):
    return CliRunner().invoke(app, ["link-corpus", *map(str, args)])


def test_repeated_ids_in_two_shards_lose_no_document(tmp_path, pipeline_dir):  # noqa: F811
    (tmp_path / "in").mkdir()
    shard(tmp_path / "in" / "a.jsonl", rows(8, "first"))
    shard(tmp_path / "in" / "b.jsonl", rows(8, "second"))  # ids "0".."7" again, other texts
    result = invoke(pipeline_dir, tmp_path / "in", tmp_path / "out", "--no-verify")
    assert result.exit_code == 0, result.output
    texts = sorted(r["text"] for r in read_outputs(tmp_path / "out"))
    assert len(texts) == 16 and len(set(texts)) == 16


def test_unplaceable_mentions_are_counted_per_shard_or_refused_with_strict(tmp_path, pipeline_dir):  # noqa: F811
    text = "colon cancer and asthma"
    shard(tmp_path / "a.jsonl", [
        {"id": "a", "text": text, "entities": [[0, 12, "D"], [17, 99, "D"], [-3, 5, "D"],
                                               [0, 5, "D"], [12, 13, "D"], [10 ** 30, 10 ** 30 + 1, "D"]]}])
    with pytest.warns(BioELWarning, match="W012.*a.jsonl: 5"):
        result = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out", "--report",
                        tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["mentions"] == 1 and report["skipped_mentions"] == 5
    assert report["skipped_by_shard"] == {str((tmp_path / "a.jsonl").resolve()): 5}
    assert report["verify"]["mentions_unaccounted"] == 0
    (peak,) = report["peak_rss_mb_per_worker"]  # the local engine: one worker, this process
    assert 0 < peak <= _this_process_peak_mb()
    (record,) = read_outputs(tmp_path / "out")
    reasons = sorted(s[3] for s in record["skipped"])
    assert reasons == ["only white space", "outside the text of 23 characters",
                       "outside the text of 23 characters", "outside the text of 23 characters",
                       "overlaps another mention"]
    strict = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "strict", "--strict")
    assert strict.exception.code == "E234" and "a.jsonl" in str(strict.exception)


def test_a_pubtator_offset_past_the_text_is_counted(tmp_path, pipeline_dir):  # noqa: F811
    (tmp_path / "p.txt").write_text("1|t|Colon cancer.\n1|a|x\n1\t0\t12\tColon cancer\tDisease\tD1\n"
                                    "1\t40\t45\tfar\tDisease\tD1\n\n")
    with pytest.warns(BioELWarning, match="W012"):
        result = invoke(pipeline_dir, tmp_path / "p.txt", tmp_path / "out", "--report",
                        tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r.json").read_text())["skipped_mentions"] == 1


def test_place_keeps_the_longest_of_overlapping_mentions():
    kept, skipped = place("heart attack", [[0, 5, "D"], [0, 12, "D"], [6, 12, "D"]])
    assert kept == [[0, 12, "D"]] and [s[:2] for s in skipped] == [[0, 5], [6, 12]]


@pytest.mark.parametrize("around", [False, True])
def test_linking_a_folder_into_itself_is_refused_and_deletes_nothing(tmp_path, pipeline_dir, around):  # noqa: F811
    (tmp_path / "in").mkdir()
    shard(tmp_path / "in" / "part-0.jsonl", rows(3, "x"))
    out = tmp_path if around else tmp_path / "in"  # the output folder holds the input
    result = invoke(pipeline_dir, tmp_path / "in", out, "--overwrite")
    assert result.exception.code == "E245"
    assert (tmp_path / "in" / "part-0.jsonl").exists()


def test_overwrite_keeps_the_old_parts_until_the_new_run_succeeded(tmp_path, pipeline_dir):  # noqa: F811
    shard(tmp_path / "a.jsonl", rows(4, "x"))
    assert invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out").exit_code == 0
    old = sorted(p.name for p in (tmp_path / "out").glob("part-*.jsonl"))
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n{"txt": 1}\n')
    failed = invoke(pipeline_dir, tmp_path / "bad.jsonl", tmp_path / "out", "--overwrite")
    assert failed.exception.code == "E202"
    assert sorted(p.name for p in (tmp_path / "out").glob("part-*.jsonl")) == old
    shard(tmp_path / "b.jsonl", rows(2, "y"))
    assert invoke(pipeline_dir, tmp_path / "b.jsonl", tmp_path / "out", "--overwrite").exit_code == 0
    assert sorted(r["text"] for r in read_outputs(tmp_path / "out")) == \
        ["y 0: colon cancer here.", "y 1: colon cancer here."]
    assert not (tmp_path / "out" / ".staging").exists()


BAD_LINES = {
    "entities not a list": '{"text": "a b", "entities": 5}',
    "label not a string": '{"text": "a b", "entities": [[0, 1, 7]]}',
    "boolean offsets": '{"text": "a b", "entities": [[true, 1]]}',
    "lone surrogate": '{"text": "a \\ud800 b"}',
    "id an object": '{"id": {"a": 1}, "text": "a b"}',
    "nested too deeply": '{"text": "a", "x": ' + "[" * 100000 + "]" * 100000 + "}",
    "not an object": "[1, 2]"}


@pytest.mark.parametrize("damage", sorted(BAD_LINES))
def test_bad_lines_are_one_coded_error(tmp_path, pipeline_dir, damage):  # noqa: F811
    (tmp_path / "a.jsonl").write_text(BAD_LINES[damage] + "\n", encoding="utf-8")
    result = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out")
    assert getattr(result.exception, "code", None) == "E202", (damage, result.exception)


def test_unreadable_shards_are_one_coded_error(tmp_path, pipeline_dir):  # noqa: F811
    data = gzip.compress(("".join(json.dumps(r) + "\n" for r in rows(200, "x"))).encode())
    (tmp_path / "t.jsonl.gz").write_bytes(data[:len(data) // 2])
    result = invoke(pipeline_dir, tmp_path / "t.jsonl.gz", tmp_path / "out")
    assert result.exception.code == "E236" and "t.jsonl.gz" in str(result.exception)
    (tmp_path / "junk.spacy").write_bytes(b"\x00junk" * 10)
    result = invoke(pipeline_dir, tmp_path / "junk.spacy", tmp_path / "out2")
    assert result.exception.code == "E236" and "junk.spacy" in str(result.exception)


def test_an_absolute_glob_finds_its_shards(tmp_path, pipeline_dir):  # noqa: F811
    shard(tmp_path / "a.jsonl", rows(2, "x"))
    result = invoke(pipeline_dir, f"{tmp_path}/*.jsonl", tmp_path / "out")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("option,value", [("--threads", "-1"), ("--num-workers", "0"),
                                          ("--top", "-1"), ("--batch-docs", "0"),
                                          ("--chunk-mb", "-1")])
def test_options_out_of_range_are_coded(tmp_path, pipeline_dir, option, value):  # noqa: F811
    shard(tmp_path / "a.jsonl", rows(1, "x"))
    result = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out", option, value)
    assert result.exception.code == "E175" and option in str(result.exception)


def test_ray_errors_arrive_as_the_local_engine_s_coded_line(tmp_path, pipeline_dir):  # noqa: F811
    ray = pytest.importorskip("ray", reason="Ray Data (the ray extra)")
    shard(tmp_path / "a.jsonl", [{"id": "a", "text": "colon cancer", "entities": [[0, 99, "D"]]}])
    try:
        result = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out", "--engine", "ray",
                        "--num-workers", "1", "--strict")
        bad = invoke(tmp_path / "no-pipeline", tmp_path / "a.jsonl", tmp_path / "out2",
                     "--engine", "ray", "--num-workers", "1")
    finally:
        ray.shutdown()
    assert type(result.exception).__name__ == "BioELError" and result.exception.code == "E234"
    assert "\n" not in str(result.exception) and "Traceback" not in str(result.exception)
    assert type(bad.exception).__name__ == "BioELError", bad.exception
    assert "Traceback" not in str(bad.exception)


def _this_process_peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 + 1


def test_offsets_are_checked_against_their_text_in_every_shard_format(tmp_path):
    """PubTator annotations and JSONL entities that give their text go through the
    converters' one check: moved to where their text is (within 50 characters), or
    set aside with the reason; an offset past the text is left to `place`."""
    from spacy_bioel.corpus_linking.records import input_mention_count, iter_shard

    (tmp_path / "p.txt").write_text(
        "1|t|Colon cancer.\n1|a|And asthma.\n1\t0\t12\tColon cancer\tDisease\tD1\n"
        "1\t3\t9\tasthma\tDisease\tD3\n1\t2\t8\theart attack\tDisease\tD2\n\n")
    (record,) = iter_shard(tmp_path / "p.txt")
    assert record["ents"] == [[0, 12, "Disease"], [18, 24, "Disease"]]
    assert record["repaired"] == [[3, 9, 18, 24]]
    ((start, end, label, reason),) = record["unplaced"]
    assert (start, end) == (2, 8) and "'heart attack'" in reason
    assert input_mention_count(record, None) == 3
    shard(tmp_path / "a.jsonl", [{"id": "a", "text": "colon cancer", "entities": [
        {"start": 0, "end": 12, "text": "colon cancer"}, {"start": 0, "end": 5, "text": "asthma"},
        [3, 99, "D"]]}])
    (record,) = iter_shard(tmp_path / "a.jsonl")
    assert record["ents"] == [[0, 12, "ENTITY"], [3, 99, "D"]] and len(record["unplaced"]) == 1


def test_docbin_shards_bring_their_span_groups_and_overlaps(tmp_path, pipeline_dir):  # noqa: F811
    """A DocBin document brings doc.ents (with the converters' overlapping mentions,
    counted when skipped) and its span groups; a linker with spans_key reads its own."""
    import spacy
    from spacy.tokens import DocBin

    from spacy_bioel.corpora.documents import DOC_ID_KEY, OVERLAPS_SPANS_KEY
    from spacy_bioel.corpus_linking.records import input_mention_count, iter_shard, record_mentions

    doc = spacy.blank("en")("colon cancer and heart attack")
    doc.ents = [doc.char_span(0, 12, "Disease")]
    doc.spans[OVERLAPS_SPANS_KEY] = [doc.char_span(0, 5, "Disease")]
    doc.spans["sc"] = [doc.char_span(0, 12, "Disease"), doc.char_span(17, 29, "Disease")]
    doc.user_data[DOC_ID_KEY] = "PMID1"
    DocBin(docs=[doc], store_user_data=True).to_disk(tmp_path / "d.spacy")
    (record,) = iter_shard(tmp_path / "d.spacy")
    assert record["id"] == "PMID1" and record["ents"] == [[0, 12, "Disease"], [0, 5, "Disease"]]
    assert record_mentions(record, "sc") == [[0, 12, "Disease"], [17, 29, "Disease"]]
    assert input_mention_count(record, None) == 2 and input_mention_count(record, "other") == 2
    with pytest.warns(BioELWarning, match="W012"):
        result = invoke(pipeline_dir, tmp_path / "d.spacy", tmp_path / "out", "--report", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["mentions"] == 1 and report["skipped_mentions"] == 1  # the overlap, counted
    assert report["verify"]["mentions_unaccounted"] == 0


def test_a_document_longer_than_the_ner_reads_is_counted_not_fatal(tmp_path, pipeline_dir):  # noqa: F811
    import spacy

    max_length = spacy.blank("en").max_length
    long_text = "colon cancer. " * (max_length // 14 + 1)
    shard(tmp_path / "a.jsonl", [{"id": "short", "text": "the patient has colon cancer."},
                                 {"id": "long", "text": long_text}])
    with pytest.warns(BioELWarning, match="W017"):
        result = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out", "--report", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["documents"] == 2 and report["skipped_documents"] == 1
    assert report["verify"]["lost"] == 0
    records = {r["id"]: r for r in read_outputs(tmp_path / "out")}
    assert records["long"]["entities"] == [] and "max_length" in records["long"]["skipped_document"]
    assert records["short"]["entities"]
    result = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out2", "--strict")
    assert result.exception.code == "E248"


def test_what_link_corpus_owns_and_what_it_never_touches(tmp_path, pipeline_dir):  # noqa: F811
    shard(tmp_path / "a.jsonl", rows(2, "x"))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.txt").write_text("three years")
    for output, code in ((tmp_path / "mine", "E246"), (pipeline_dir, "E245"), (tmp_path, "E245")):
        result = invoke(pipeline_dir, tmp_path / "a.jsonl", output)
        assert result.exception.code == code, output
    result = invoke(tmp_path / "no-such", tmp_path / "a.jsonl", tmp_path / "mine")
    assert result.exception.code == "E247"
    for report in (tmp_path / "a.jsonl", pipeline_dir / "config.cfg", tmp_path / "out" / "r.json"):
        result = invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out", "--report", report)
        assert result.exception.code == "E245", report
    assert (tmp_path / "mine" / "thesis.txt").read_text() == "three years"
    assert json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])["id"] == "0"
    assert invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out").exit_code == 0
    (tmp_path / "out" / "notes.txt").write_text("mine")
    assert invoke(pipeline_dir, tmp_path / "a.jsonl", tmp_path / "out", "--overwrite").exit_code == 0
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert len(read_outputs(tmp_path / "out")) == 2
