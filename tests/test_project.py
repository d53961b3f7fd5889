"""The newcomer's doors in project.yml: `spacy project run train | evaluate |
package . --vars.dataset D`, each running what it needs first and skipping what
is done, on a toy data root laid out like ../shared/data and a tiny encoder."""
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
import srsly

REPO_ROOT = Path(__file__).resolve().parents[1]
MEDIC = ["D000001||Colorectal cancer|CRC|Colon carcinoma", "D000002||Breast cancer|Mammary carcinoma",
         "D000003||Diabetes mellitus|DM", "D000004||Hepatoblastoma"]
DOCS = {  # split: (pmid, text, [(mention, id)])
    "train": [("1", "Colorectal cancer and DM in families.", [("Colorectal cancer", "D000001"),
                                                               ("DM", "D000003")]),
              ("2", "A breast cancer case.", [("breast cancer", "D000002")])],
    "dev": [("3", "Colon carcinoma and hepatoblastoma.", [("Colon carcinoma", "D000001"),
                                                          ("hepatoblastoma", "D000004")])],
    "test": [("4", "Mammary carcinoma with CRC.", [("Mammary carcinoma", "D000002"),
                                                   ("CRC", "D000001")])],
}
FILES = {"train": "NCBItrainset_corpus.txt", "dev": "NCBIdevelopset_corpus.txt",
         "test": "NCBItestset_corpus.txt"}


def write_data_root(root: Path) -> Path:
    (root / "ctd_medic").mkdir(parents=True)
    (root / "ctd_medic" / "medic_06Jul2012.txt").write_text("\n".join(MEDIC) + "\n")
    (root / "ncbi_disease").mkdir()
    for split, docs in DOCS.items():
        lines = []
        for pmid, text, mentions in docs:
            lines += [f"{pmid}|t|{text}", f"{pmid}|a|"]
            for mention, cid in mentions:
                start = text.index(mention)
                lines.append(f"{pmid}\t{start}\t{start + len(mention)}\t{mention}\tDisease\t{cid}")
            lines.append("")
        (root / "ncbi_disease" / FILES[split]).write_text("\n".join(lines) + "\n")
    return root


def project_run(project: Path, name: str, *args: str, env=None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "spacy", "project", "run", name, str(project),
                             *args],
                            capture_output=True, text=True, cwd=project,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_train_evaluate_package_doors(tmp_path, tiny_bert_dir):
    pytest.importorskip("build", reason="the `build` package (test extra) makes the wheel")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO_ROOT / "project.yml", project / "project.yml")
    shutil.copytree(REPO_ROOT / "configs", project / "configs")
    data = write_data_root(tmp_path / "data")
    tiny = {"SPACY_CONFIG_OVERRIDES": f"--paths.encoder {tiny_bert_dir} --training.max_steps 2 "
                                      "--training.eval_frequency 1"}
    common = ["--vars.dataset", "ncbi", "--vars.data_root", str(data), "--vars.bootstrap", "0"]
    first = project_run(project, "train", *common, env=tiny)
    corpus = project / "corpus" / "ncbi"
    assert all((corpus / f).is_file() for f in ("kb.bioelkb", "train.spacy", "dev.spacy",
                                                   "test.spacy", "dataset.json"))
    assert srsly.read_json(corpus / "dataset.json")["splits"] == {"train": 3, "dev": 2, "test": 2}
    assert (project / "training" / "ncbi" / "linker" / "model-best" / "config.cfg").is_file()
    # `train` ends tuned: the NIL stage calibrated on dev, not the untrained encoder's rule
    assert (project / "training" / "ncbi" / "linker" / "model-tuned" / "config.cfg").is_file()
    assert "prepare" in first.stdout and "train-linker" in first.stdout and "tune-linker" in first.stdout
    # and final: dev's annotated mentions added to the tuned linker's datastore
    assert (project / "training" / "ncbi" / "linker" / "model-final" / "config.cfg").is_file()
    assert "Datastore of" in first.stdout and "grown to" in first.stdout, first.stdout
    again = project_run(project, "train", *common, env=tiny)  # nothing changed: all skipped
    assert again.stdout.count("Skipping") == 4, again.stdout
    # plain text in: the shipped NER before the final linker, nothing trained again
    text = project_run(project, "train-text", *common, env=tiny)
    assert text.stdout.count("Skipping") == 4 and "add-ner" in text.stdout, text.stdout
    from spacy_bioel.pipeline.loading import load_pipeline

    nlp = load_pipeline(project / "training" / "ncbi" / "text" / "model-final")
    assert nlp.pipe_names == ["tok2vec", "ner", "bioel_mention_consistency", "bioel_linker"]
    assert [e.text for e in nlp("A woman with breast cancer.").ents] == ["breast cancer"]
    project_run(project, "evaluate", *common, env=tiny)
    report = srsly.read_json(project / "metrics" / "ncbi" / "linker.json")
    assert report["n"] == 2 and 0 <= report["acc@1"] <= 1
    project_run(project, "package", *common, "--vars.package_version", "0.0.1", env=tiny)
    package = srsly.read_json(project / "metrics" / "ncbi" / "linker_package.json")
    assert (project / package["wheel"]).is_file() and package["wheel"].endswith(
        "en_bioel_ncbi_linker-0.0.1-py3-none-any.whl")
    # the anchors' full final fit: trained again on train + dev as long as model-best had
    full = project_run(project, "train-full", *common, env=tiny)
    assert "retrain-linker" in full.stdout and "steps on train + dev" in full.stdout, full.stdout
    assert (project / "training" / "ncbi" / "linker" / "model-retrained" / "config.cfg").is_file()


def test_gpu_id_without_cuda_gives_spacys_error(tmp_path):
    """The announced `python -m spacy train configs/linker.cfg --gpu-id 0` on a machine
    without CUDA stops at once with spaCy's (thinc's) error."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is here: the GPU path is measured on a GPU machine instead")
    result = subprocess.run([sys.executable, "-m", "spacy", "train", str(REPO_ROOT / "configs/linker.cfg"),
                             "--gpu-id", "0", "--paths.train", "x", "--paths.dev", "y",
                             "--paths.kb", "z"], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "Cannot use GPU" in result.stderr


def _commands(typer_app):
    """Top-level command names and group/sub pairs of a Typer app."""
    import typer.main

    group = typer.main.get_command(typer_app)
    names = set()
    for name, command in group.commands.items():
        names.add(name)
        for sub in getattr(command, "commands", {}) or {}:
            names.add(f"{name} {sub}")
    return names


PROJECT_FILES = [REPO_ROOT / "project.yml", REPO_ROOT / "bench" / "project.yml"]


def test_every_project_command_names_a_registered_command():
    """project.yml and the lab's bench/project.yml call the library (`python -m
    spacy_bioel`) and the lab (`python -m bench`); each command they name exists in
    that entry point, and the user CLI holds no lab command."""
    import re

    from bench.cli import app as lab_app
    from spacy_bioel.cli import app

    known = {"spacy_bioel": _commands(app), "bench": _commands(lab_app)}
    scripts = [line for path in PROJECT_FILES for command in srsly.read_yaml(path)["commands"]
               for line in command.get("script", [])]
    called = set(re.findall(r"python -m (spacy_bioel|bench) ([a-z][a-z0-9-]*)(?: ([a-z][a-z0-9-]*))?",
                            "\n".join(scripts)))
    assert called
    missing = [f"{entry} {cmd}" for entry, cmd, sub in called
               if cmd not in known[entry] and f"{cmd} {sub}" not in known[entry]]
    assert not missing, missing
    assert not known["spacy_bioel"] & {"table", "seeds-table", "ablate", "benchmark", "reliability",
                                       "side-by-side", "pretrain-table", "compare", "biofeg"}
    assert len([c for c in known["spacy_bioel"] if " " not in c]) <= 19  # help fits one screen (19 with add-ner)


def test_project_yml_reads_without_scrolling_sideways():
    """Issue 75: no line of project.yml or bench/project.yml is over 200 characters
    (long help texts and commands are folded YAML scalars, which parse to the same
    one-line strings), and the root file holds a user's doors in under 600 lines."""
    for path in PROJECT_FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        long = [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > 200]
        assert not long, (path.name, long)
    assert len(PROJECT_FILES[0].read_text(encoding="utf-8").splitlines()) < 600


def test_the_docs_name_commands_that_exist():
    """Every `spacy project run NAME` in the README, docs/ and the library names a
    command or workflow of the root project.yml, and every `bench project NAME` one of
    the lab's file joined to it (a command moved between the two files moves its
    mentions)."""
    import re

    from bench.lab_project import lab_project

    user = srsly.read_yaml(PROJECT_FILES[0])
    doors = {c["name"] for c in user["commands"]} | set(user["workflows"])
    joined = lab_project(REPO_ROOT)
    lab = {c["name"] for c in joined["commands"]} | set(joined["workflows"])
    files = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md")),
             *sorted((REPO_ROOT / "spacy_bioel").rglob("*.py")), *sorted((REPO_ROOT / "bench").rglob("*.py"))]
    wrong = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for names, pattern in ((doors, r"spacy project run ([a-z][a-z0-9-]*)\b(?![{<-])"),
                               (lab, r"bench project ([a-z][a-z0-9-]*)\b(?![{<-])")):
            wrong += [(path.name, name) for name in re.findall(pattern, text) if name not in names]
    assert not wrong, wrong


def _write_projects(root: Path, lab_vars: Optional[dict] = None) -> None:
    """A root project.yml with one command (make-a) and a lab file with one command
    that reads its output (use-a) and a workflow of both."""
    (root / "bench").mkdir(parents=True)
    make = "python -c \"open('a.txt', 'w').write('${vars.word}')\""
    copy = "python -c \"open('b.txt', 'w').write(open('a.txt').read() * 2)\""
    srsly.write_yaml(root / "project.yml", {"vars": {"word": "hi"}, "commands": [
        {"name": "make-a", "script": [make], "outputs": ["a.txt"]}]})
    srsly.write_yaml(root / "bench" / "project.yml", {
        "vars": lab_vars or {"times": 2}, "workflows": {"both": ["make-a", "use-a"]},
        "commands": [{"name": "use-a", "script": [copy], "deps": ["a.txt"], "outputs": ["b.txt"]}]})


def test_the_lab_project_runs_over_the_root_one(tmp_path, capsys):
    """`python -m bench project NAME`: the lab's workflow runs the root's command
    and its own, from the root, with the root's vars overridden; a second run skips
    both; a missing dep, an unknown name and a var defined twice stop with a message."""
    from bench.lab_project import run_lab

    _write_projects(tmp_path)
    with pytest.raises(SystemExit):  # a.txt is made by make-a, not yet run
        run_lab(tmp_path, "use-a")
    run_lab(tmp_path, "both", {"vars.word": "yo"})
    assert (tmp_path / "b.txt").read_text() == "yoyo"
    capsys.readouterr()
    run_lab(tmp_path, "both", {"vars.word": "yo"})
    assert capsys.readouterr().out.count("Skipping") == 2
    run_lab(tmp_path, "both", {"vars.word": "ho"})  # the script changed: make-a runs again
    assert (tmp_path / "a.txt").read_text() == "ho"
    with pytest.raises(SystemExit):
        run_lab(tmp_path, "no-such-command")
    clash = tmp_path / "clash"
    _write_projects(clash, lab_vars={"word": "again"})
    with pytest.raises(SystemExit):
        run_lab(clash, "both")
