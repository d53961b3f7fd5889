"""`python -m bench code-size`: what a newcomer reads, measured from a checkout's files."""
from bench.code_size import code_size, code_size_table


def test_code_size_counts_a_checkout(tmp_path):
    lib = tmp_path / "spacy_bioel"
    (lib / "pipeline").mkdir(parents=True)
    (lib / "research").mkdir()
    (lib / "research" / "gan.py").write_text("a = 1\nb = 2\n")
    (lib / "pipeline" / "factory.py").write_text(
        "def make_bioel_linker(nlp, name, model, loss, top_k: int = 1):\n    return None\n")
    (lib / "pipeline" / "defaults.py").write_text('SETTINGS = {"top_k": 16, "cache_size": 0}\n')
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "x.py").write_text("from spacy_bioel.cli._app import app\n"
                                             "from spacy_bioel.index import _cached, public\n")
    (tmp_path / "project.yml").write_text("commands: [{name: a, script: [b]}]\n# " + "y" * 38 + "\n")
    (tmp_path / "bench" / "project.yml").write_text("commands: []\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "results.md").write_text("# R\n\n## At a glance\n\n| a | b |\n| long row here |\n\n"
                                                   "## Later\n\n| a much longer row that is not counted |\n")
    report = code_size(tmp_path)
    assert report["library_lines"] == {"core": 3, "research": 2}
    assert report["factory_arguments"] == 3 and report["default_settings"] == ["top_k", "cache_size"]
    assert report["project_yml_lines"] == 2 and report["project_yml_longest_line"] == 40
    assert report["project_yml_commands"] == 1
    assert report["lab_project_yml_lines"] == 1 and report["lab_project_yml_commands"] == 0
    assert report["private_lab_imports"] == ["bench/x.py:1 _app", "bench/x.py:2 _cached"]
    assert report["results_summary_longest_row"] == len("| long row here |")
    assert "| factory arguments | 3 |" in code_size_table({"now": report})
