"""The corpus-linking benchmark's corpus builder, output comparison and figure."""
import json

from spacy_bioel.corpus_linking.records import iter_shard

from tests.corpus_linking.test_link_corpus import pipeline_dir, run, write_jsonl  # noqa: F401 - the fixture
from tests.utils import needs, starts_ray

pytestmark = starts_ray()


@needs("matplotlib", "plots")
def test_bench_corpus_and_output_comparison(tmp_path, pipeline_dir):
    from bench.corpus_bench import bench_figure, build_corpus, same_output

    write_jsonl(tmp_path / "src.jsonl", 7)
    corpus = build_corpus([tmp_path / "src.jsonl"], tmp_path / "corpus", min_docs=20, shards=3)
    assert corpus == {"documents": 21, "mentions": 21, "source_documents": 7, "copies": 3, "shards": 3}
    ids = [r["id"] for s in sorted((tmp_path / "corpus").iterdir()) for r in iter_shard(s)]
    assert len(ids) == len(set(ids)) == 21 and "doc0#2" in ids
    run(pipeline_dir, tmp_path / "corpus", tmp_path / "a", "--batch-docs", "4")
    run(pipeline_dir, tmp_path / "corpus", tmp_path / "b", "--batch-docs", "9")
    assert same_output(tmp_path / "a", tmp_path / "b")["identical"]
    part = next((tmp_path / "b").glob("part-*.jsonl"))
    rows = [json.loads(line) for line in part.read_text().splitlines()]
    rows[0]["entities"][0]["kb_id"] = "D999"
    part.write_text("".join(json.dumps(r) + "\n" for r in rows))
    check = same_output(tmp_path / "a", tmp_path / "b")
    assert not check["identical"] and check["differing_mentions"] == 1
    runs = [{"engine": "local", "workers": 1, "docs_per_second": 9.5},
            {"engine": "ray", "workers": 2, "docs_per_second": 17.0}]
    assert bench_figure(runs, tmp_path / "fig.png").stat().st_size > 1000
