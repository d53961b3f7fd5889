"""The GPU check (`python -m bench.gpu_check`) on CPU with a tiny bundle: the
whole path (pre-training, training with hard negatives, evaluation, JSON and
markdown) in a process where spaCy, thinc, faiss and srsly cannot be imported,
as on the lent GPU machine."""
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.gpu_check import CTD_FILE, DATASETS, MEDIC_FILE, NCBI_FILES, read_recipe

ROOT = Path(__file__).resolve().parents[2]

MEDIC = """\
MESH:D001||colon cancer|colorectal carcinoma|cancer of the colon
MESH:D002|OMIM:100||breast cancer|mammary carcinoma|breast tumour
MESH:D003||migraine|migraine headache|hemicrania
MESH:D004||asthma|bronchial asthma
MESH:D005||diabetes|diabetes mellitus|sugar diabetes
"""


def pubtator(doc_id: str, title: str, abstract: str, mentions) -> str:
    text = f"{title} {abstract}"
    lines = [f"{doc_id}|t|{title}", f"{doc_id}|a|{abstract}"]
    for mention, gold in mentions:
        start = text.index(mention)
        lines.append(f"{doc_id}\t{start}\t{start + len(mention)}\t{mention}\tDisease\t{gold}")
    return "\n".join(lines) + "\n\n"


CORPUS = (pubtator("1", "Colon cancer and asthma.", "Mammary carcinoma (MC) was seen; MC grew.",
                   [("Colon cancer", "D001"), ("asthma", "D004"), ("Mammary carcinoma", "D002"),
                    ("MC", "OMIM:100")])
          + pubtator("2", "Migraine headache in diabetes.", "No xyzzy disease here.",
                     [("Migraine headache", "D003"), ("diabetes", "D005"), ("xyzzy disease", "-1")])
          + pubtator("3", "Bronchial asthma or colon tumour.", "Both.",
                     [("Bronchial asthma", "D004"), ("colon tumour", "D001|D002")]))

BLOCKED = ["spacy", "thinc", "faiss", "srsly", "confection"]


@pytest.fixture
def bundle(tmp_path, tiny_bert_dir):
    folder = tmp_path / "bundle"
    (folder / "ncbi").mkdir(parents=True)
    (folder / MEDIC_FILE).write_text(MEDIC, encoding="utf-8")
    for name in NCBI_FILES.values():
        (folder / "ncbi" / name).write_text(CORPUS, encoding="utf-8")
    shutil.copytree(tiny_bert_dir, folder / "encoder")
    return folder


def test_gpu_check_runs_without_spacy_on_cpu(bundle, tmp_path):
    output = tmp_path / "out"
    args = ["run", "--bundle", str(bundle), "--gpu-id", "-1", "--output", str(output),
            "--pretrain-steps", "2", "--pretrain-batch-size", "4", "--max-epochs", "2",
            "--config", str(ROOT / "configs" / "linker.cfg")]
    script = (f"import sys\nfor name in {BLOCKED!r}: sys.modules[name] = None\n"
              f"from bench.gpu_check import main\nsys.exit(main({args!r}))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((output / "gpu_check.json").read_text())
    # 3 docs x 3 splits: the NIL mention is skipped and counted; the composite keeps both parts
    assert report["corpora"]["test"] == {"documents": 3, "mentions": 8, "nil_skipped": 1,
                                         "unknown_gold": 0}
    assert report["kb"] == {"name": "MEDIC 2012", "concepts": 5, "names": 14}
    assert report["pretraining"]["steps"] == 2
    epochs = report["training"]["epochs"]
    assert [e["epoch"] for e in epochs] == [1, 2]
    # 3 documents at 8 per batch: one step an epoch, with a finite InfoNCE loss
    assert all(e["steps"] == 1 and e["mean_loss"] > 0 and e["train_s"] > 0 for e in epochs)
    assert report["test"]["mentions"] == 8
    assert 0.0 <= report["test"]["acc@1"] <= report["test"]["acc@5"] <= 1.0
    assert report["recipe"]["temperature"] == 0.05 and report["recipe"]["negatives"] == 4
    assert report["gpu_memory"]["max_allocated_gib"] is None  # CPU
    assert report["index"] == {"backend": "torch", "device": "cpu"}
    assert "| best epoch" in (output / "gpu_check.md").read_text()
    assert not (output / "pretrained").exists()  # removed unless --keep-pretrained


CTD = """\
# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings
Colon cancer\tMESH:D001\t\t\t\t\t\tcolorectal carcinoma|cancer of the colon\t
Breast cancer\tMESH:D002\tOMIM:100\t\t\t\t\tmammary carcinoma\t
Asthma\tMESH:D004\t\t\t\t\t\tbronchial asthma\t
"""

CDR = (pubtator("7", "Colon cancer after aspirin.", "Asthma too.",
                [("Colon cancer", "D001"), ("aspirin", "D001241"), ("Asthma", "D004")])
       + pubtator("8", "Mammary carcinoma.", "No xyzzy disease.",
                  [("Mammary carcinoma", "OMIM:100"), ("xyzzy disease", "-1")]))

AAP = ("1\tColon cancer\tcancer in my colon\n2\tAsthma\tcant breathe at night\n"
       "2\tAsthma\twheezy chest\n3\tBreast cancer\tlump in breast\n")


def _run_dataset(dataset, bundle_dir, output, *extra):
    from bench.gpu_check import main

    return main(["run", "--bundle", str(bundle_dir), "--gpu-id", "-1", "--output", str(output),
                 "--dataset", dataset, "--pretrain-steps", "0", "--max-epochs", "1",
                 "--config", str(ROOT / "configs" / "linker.cfg"), *extra])


def test_bc5cdr_keeps_disease_mentions_against_ctd(tmp_path, tiny_bert_dir):
    folder = tmp_path / "bundle"
    (folder / "bc5cdr").mkdir(parents=True)
    with gzip.open(folder / CTD_FILE, "wt", encoding="utf-8") as handle:
        handle.write(CTD)
    for name in DATASETS["bc5cdr"].files.values():
        (folder / "bc5cdr" / name).write_text(CDR.replace("\tDisease\tD001241", "\tChemical\tD001241"),
                                              encoding="utf-8")
    shutil.copytree(tiny_bert_dir, folder / "encoder")
    assert _run_dataset("bc5cdr", folder, tmp_path / "out") == 0
    report = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    # the chemical is skipped and counted, the NIL mention too; OMIM:100 resolves to D002
    assert report["corpora"]["test"] == {"documents": 2, "mentions": 3, "nil_skipped": 1,
                                         "unknown_gold": 0, "other_types_skipped": 1}
    assert report["dataset"] == "bc5cdr"
    assert report["kb"]["name"] == "CTD diseases 2017" and report["kb"]["concepts"] == 3
    assert "dataset bc5cdr" in (tmp_path / "out" / "gpu_check.md").read_text()


@pytest.fixture
def aap_bundle(tmp_path, tiny_bert_dir):
    folder = tmp_path / "bundle"
    (folder / "askapatient").mkdir(parents=True)
    for name in DATASETS["askapatient"].files.values():
        (folder / "askapatient" / name).write_text(AAP, encoding="utf-8")
    shutil.copytree(tiny_bert_dir, folder / "encoder")
    return folder


def test_askapatient_rows_are_one_mention_documents(tmp_path, aap_bundle):
    folder = aap_bundle
    saved = tmp_path / "model"
    assert _run_dataset("askapatient", folder, tmp_path / "out", "--save-model", str(saved)) == 0
    report = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    # the best epoch's encoder comes back in float16 and loads in float32 for init-pipeline
    from safetensors.torch import load_file

    from spacy_bioel.encoders.torch_biencoder import load_transformer

    assert report["saved_model"]["towers"] == ["mention+concept"]
    weights = load_file(str(saved / "model.safetensors"))
    assert {str(v.dtype) for v in weights.values() if v.is_floating_point()} == {"torch.float16"}
    tokenizer, transformer = load_transformer(str(saved))
    assert next(transformer.parameters()).dtype.is_floating_point
    assert str(next(transformer.parameters()).dtype) == "torch.float32"
    assert tokenizer("wheezy chest")["input_ids"]
    assert report["corpora"]["dev"] == {"documents": 4, "mentions": 4, "nil_skipped": 0,
                                        "unknown_gold": 0}
    # the KB is read from the fold files: 3 concepts, one name each
    assert report["kb"] == {"name": "AskAPatient concepts", "concepts": 3, "names": 3}
    assert report["test"]["mentions"] == 4


def test_run_names_what_the_bundle_lacks(tmp_path):
    from bench.gpu_check import main

    (tmp_path / "bundle").mkdir()
    with pytest.raises(SystemExit, match="CDR_TrainingSet.*--datasets bc5cdr"):
        main(["run", "--bundle", str(tmp_path / "bundle"), "--gpu-id", "-1", "--dataset", "bc5cdr",
              "--output", str(tmp_path / "out")])


def test_recipe_is_read_from_the_config(tmp_path):
    recipe = read_recipe(ROOT / "configs" / "linker.cfg")
    assert (recipe.learn_rate, recipe.docs_per_batch, recipe.max_epochs, recipe.max_length) == \
        (2e-5, 8, 5, 25)
    frozen = ROOT / "configs" / "linker_cpu.cfg"
    with pytest.raises(ValueError, match="train_concept_tower"):
        read_recipe(frozen)


def test_bundle_names_what_is_missing(tmp_path):
    from bench.gpu_check import main

    with pytest.raises(SystemExit, match="ncbi_disease"):
        main(["bundle", "--data-root", str(tmp_path), "--output", str(tmp_path / "b")])
    with pytest.raises(SystemExit, match="askapatient_fold0"):
        main(["bundle", "--data-root", str(tmp_path), "--output", str(tmp_path / "b"),
              "--datasets", "askapatient"])
    with pytest.raises(SystemExit):
        main(["bundle", "--data-root", str(tmp_path), "--datasets", "mimic"])


def test_paper_sets_the_corpus_recipe_and_set_still_overrides(tmp_path, aap_bundle):
    folder = aap_bundle
    assert _run_dataset("askapatient", folder, tmp_path / "out", "--paper",
                        "--set", "docs_per_batch=2") == 0
    recipe = json.loads((tmp_path / "out" / "gpu_check.json").read_text())["recipe"]
    assert (recipe["temperature"], recipe["learn_rate"], recipe["mixed_precision"]) == (0.01, 4e-5, False)
    assert recipe["docs_per_batch"] == 2
