"""What a command may write over and delete (`spacy_bioel.outputs`): a folder is
claimed when new, empty or an earlier run's of the same command; protected paths
are never targets; only a command's own files are removed; an abandoned partial
folder is removed, one still being written is kept."""
import json
import os
import subprocess
import sys
import time

import pytest

from spacy_bioel.errors import BioELError
from spacy_bioel.outputs import (MARKER, Protected, check_target, claim_folder, read_marker,
                                 remove_owned, remove_stale_partials, write_partial_marker)


def test_a_new_or_empty_folder_is_claimed_and_recognised_next_time(tmp_path):
    assert claim_folder(tmp_path / "new" / "out", "cmd") is False
    assert read_marker(tmp_path / "new" / "out")["command"] == "cmd"
    assert claim_folder(tmp_path / "new" / "out", "cmd") is True  # an earlier run's
    (tmp_path / "empty").mkdir()
    assert claim_folder(tmp_path / "empty", "cmd") is False
    with pytest.raises(BioELError) as err:  # another command's folder is not this one's
        claim_folder(tmp_path / "empty", "other")
    assert err.value.code == "E246"


def test_a_folder_of_the_users_files_is_refused_and_left_as_it_is(tmp_path):
    (tmp_path / "thesis.txt").write_text("mine")
    with pytest.raises(BioELError) as err:
        claim_folder(tmp_path, "cmd")
    assert err.value.code == "E246" and "thesis.txt" in str(err.value)
    assert sorted(os.listdir(tmp_path)) == ["thesis.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(BioELError) as err:
        claim_folder(tmp_path / "file", "cmd")
    assert err.value.code == "E245"


@pytest.mark.parametrize("target, relation", [("pipeline", "is"), ("pipeline/sub", "lies inside"),
                                              (".", "holds")])
def test_protected_paths_are_never_targets(tmp_path, target, relation):
    (tmp_path / "pipeline").mkdir()
    with pytest.raises(BioELError) as err:
        check_target("cmd", tmp_path / target, [Protected("the pipeline", tmp_path / "pipeline",
                                                          inside=True)])
    assert err.value.code == "E245" and f"it {relation} the pipeline" in str(err.value)
    check_target("cmd", tmp_path / "elsewhere", [Protected("the pipeline", tmp_path / "pipeline")])


def test_inside_the_working_directory_is_fine_but_not_it(tmp_path, monkeypatch):
    from spacy_bioel.outputs import working_directory

    monkeypatch.chdir(tmp_path)
    check_target("cmd", tmp_path / "out", [working_directory()])
    with pytest.raises(BioELError, match="E245"):
        check_target("cmd", tmp_path, [working_directory()])
    with pytest.raises(BioELError, match="E245"):
        check_target("cmd", tmp_path.parent, [working_directory()])


def test_only_the_commands_own_files_are_removed(tmp_path):
    folder = tmp_path / "out"
    claim_folder(folder, "cmd")
    (folder / "part-1.jsonl").write_text("x")
    (folder / "notes.txt").write_text("mine")
    assert remove_owned(folder, lambda name: name.startswith("part-")) == ["notes.txt"]
    assert sorted(os.listdir(folder)) == [MARKER, "notes.txt"]
    (folder / "notes.txt").unlink()
    assert remove_owned(folder, lambda name: True) == [] and not folder.exists()
    unmarked = tmp_path / "unmarked"
    unmarked.mkdir()
    (unmarked / "part-1.jsonl").write_text("x")
    assert remove_owned(unmarked, lambda name: True) == ["part-1.jsonl"]  # not its folder


def test_abandoned_partial_folders_go_and_the_rest_stay(tmp_path):
    """Only a partial folder marked by this command, whose process is gone, is removed:
    not a live one, not another command's, not one without a marker (never ours to know)."""
    dead_pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                                  capture_output=True, text=True, check=True).stdout)
    folders = {name: tmp_path / f".key.{name}.partial" for name in ("dead", "live", "other", "unmarked")}
    for folder in folders.values():
        folder.mkdir()
    for name in ("dead", "live"):
        write_partial_marker(folders[name], "cmd")
    write_partial_marker(folders["other"], "another command")
    for name in ("dead", "other"):
        marker = json.loads((folders[name] / MARKER).read_text())
        (folders[name] / MARKER).write_text(json.dumps({**marker, "pid": dead_pid}))
    hour_ago = time.time() - 3700
    os.utime(folders["unmarked"], (hour_ago, hour_ago))
    (tmp_path / "key.entry").mkdir()  # not a partial folder's name: never touched
    assert remove_stale_partials(tmp_path, ".key.", ".partial", "cmd") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".key.live.partial", ".key.other.partial", ".key.unmarked.partial", "key.entry"]


def test_a_folder_of_only_the_commands_own_files_is_an_earlier_run(tmp_path):
    """Written before markers existed: every entry is one of the command's own files."""
    (tmp_path / "part-1.jsonl").write_text("x")
    assert claim_folder(tmp_path, "cmd", own=lambda name: name.startswith("part-")) is True
    assert read_marker(tmp_path)["command"] == "cmd"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "part-1.jsonl").write_text("x")
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(BioELError, match="E246"):
        claim_folder(tmp_path / "other", "cmd", own=lambda name: name.startswith("part-"))
