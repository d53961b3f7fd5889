"""The malformed-input table (every loader and converter x every damage) and the
CLI's handling of coded errors."""
import codecs

import pytest

from spacy_bioel.errors import BioELError
from bench.malformed import MEDIC, PUBTATOR, cases, run_case, run_table

CASES = cases()


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clean")
    out = {}
    for number, case in enumerate(c for c in CASES if c.damage == "clean"):
        row = run_case(case, folder / str(number), None)
        assert row["outcome"] == "clean_load", row
        out[case.kind] = row["_result"]
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.kind.replace(' ', '-')}-{c.damage}")
def test_each_malformed_input_is_a_coded_error_or_a_clean_load(case, references, tmp_path):
    row = run_case(case, tmp_path, references[case.kind])
    if case.expect == "load":
        assert row["outcome"] == "clean_load", row
    elif case.expect == "report":
        assert row["outcome"] == "reported_skip", row
    else:
        assert row["outcome"] == "coded_error", row
        if case.damage not in ("missing", "directory"):
            assert case.name.split(".")[0] in row["message"] or "MRCONSO" in row["message"]


def test_the_table_counts_every_case(tmp_path):
    rows, counts = run_table(tmp_path)
    assert counts["files"] == len(CASES) > 150
    assert counts.get("crash", 0) == counts.get("silent_wrong", 0) == 0
    assert counts.get("refused_valid", 0) == 0


def test_a_declared_encoding_reads_a_latin1_file(tmp_path):
    from spacy_bioel.kb.loaders import load_kb

    path = tmp_path / "medic.tsv"
    path.write_bytes(MEDIC.encode("latin-1"))
    with pytest.raises(BioELError, match=r"E018.*line 3"):
        load_kb("medic", path, progress=False)
    kb = load_kb("medic", path, progress=False, encoding="latin-1")
    assert kb["MESH:D000003"].canonical_name == "Behçet syndrome"
    with pytest.raises(BioELError, match="E020"):
        load_kb("medic", path, progress=False, encoding="no-such-codec")


def test_a_bom_never_reaches_the_first_id(tmp_path):
    from spacy_bioel.kb.loaders import load_kb

    path = tmp_path / "medic.tsv"
    path.write_bytes(codecs.BOM_UTF8 + MEDIC.encode())
    assert "MESH:D000001" in load_kb("medic", path, progress=False)


def test_pubtator_errors_name_file_and_line(tmp_path):
    import spacy

    from spacy_bioel.corpora.pubtator import convert_pubtator

    path = tmp_path / "corpus.txt"
    path.write_text(PUBTATOR.replace("\t24\t30\t", "\t2\u2074\t30\t"), encoding="utf-8")
    with pytest.raises(BioELError, match=r"E050.*corpus.txt, line 4"):
        convert_pubtator(spacy.blank("en"), path, progress=False)


@pytest.mark.parametrize("option,value", [("--missing", "nill"), ("--misaligned", "skp")])
def test_a_mistyped_policy_is_refused(tmp_path, option, value):
    import spacy

    from spacy_bioel.corpora.pubtator import convert_pubtator

    path = tmp_path / "corpus.txt"
    path.write_text(PUBTATOR, encoding="utf-8")
    with pytest.raises(BioELError, match=f"E175.*{value}"):
        convert_pubtator(spacy.blank("en"), path, progress=False,
                         **{option.strip("-"): value})


def test_self_loop_error_names_file_and_line(tmp_path):
    from spacy_bioel.kb.loaders import load_kb

    path = tmp_path / "ctd.tsv"
    path.write_text("Asthma\tMESH:D1\t\t\tMESH:D1\t\t\t\t\n", encoding="utf-8")
    with pytest.raises(BioELError, match=r"E014.*ctd.tsv, line 1"):
        load_kb("ctd", path, progress=False)


def test_cli_prints_one_message_and_the_traceback_only_with_verbose(tmp_path, capsys):
    from spacy_bioel.cli import main

    bad = tmp_path / "medic.tsv.gz"
    bad.write_bytes(b"not gzip at all\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["kb", "build", "medic", str(bad), str(tmp_path / "out.bioelkb")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    assert "\nError: [E017]" in err and "medic.tsv.gz" in err and "Traceback" not in err
    with pytest.raises(BioELError, match="E017"):
        main(["kb", "build", "medic", str(bad), str(tmp_path / "out.bioelkb"), "--verbose"])


@pytest.mark.parametrize("content", [b"", b"garbage", b"\x78\x9c" + b"\x00" * 20])
def test_a_damaged_docbin_is_a_coded_error(tmp_path, content):
    from spacy_bioel.cli._app import read_docs

    path = tmp_path / "test.spacy"
    path.write_bytes(content)
    with pytest.raises(BioELError, match=r"E059.*test.spacy"):
        read_docs([path])


def test_every_command_has_verbose():
    import inspect

    from spacy_bioel.cli._app import app, kb_app

    commands = app.registered_commands + kb_app.registered_commands
    assert len(commands) > 15
    missing = [c.name for c in commands if "verbose" not in inspect.signature(c.callback).parameters]
    assert missing == []
