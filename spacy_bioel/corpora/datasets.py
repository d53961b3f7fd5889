"""The benchmark datasets a newcomer names with one word (`spacy project run
train . --vars.dataset ncbi`): where their files sit under a data root, which
KB each links to and how its corpus is converted. `prepare` (the CLI) builds
`OUTPUT/kb.bioelkb` and `OUTPUT/{train,dev,test}.spacy` from a recipe, through
the same loaders and converters as `kb build` and `convert`, so every dataset
has one layout whatever its sources.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..errors import BioELError, Errors

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class DatasetRecipe:
    """kb_format / kb_files: the KB (`kb build` format, files under the data root,
    `{key}` placeholders filled from the per-ontology file options);
    corpus_format / corpus_files: `convert` format and the train, dev, test
    files (obo-syn: none, the splits come from the KB); types: PubTator entity
    types kept; prefixes: OBO id prefixes kept."""

    description: str
    kb_format: str
    kb_files: Tuple[str, ...]
    kb_name: str
    corpus_format: str
    corpus_files: Tuple[str, ...] = ()
    types: Tuple[str, ...] = ()
    prefixes: Tuple[str, ...] = ()
    evaluate_as: str = ""


DATASETS: Dict[str, DatasetRecipe] = {
    "ncbi": DatasetRecipe(
        "NCBI Disease (Dogan et al. 2014) against MEDIC 2012",
        "medic", ("ctd_medic/{medic_file}",), "MEDIC 2012", "pubtator",
        ("ncbi_disease/NCBItrainset_corpus.txt", "ncbi_disease/NCBIdevelopset_corpus.txt",
         "ncbi_disease/NCBItestset_corpus.txt"), evaluate_as="ncbi-disease"),
    "bc5cdr": DatasetRecipe(
        "BC5CDR disease mentions (Li et al. 2016) against CTD diseases 2017",
        "ctd", ("ctd_medic/{ctd_file}",), "CTD diseases 2017", "pubtator",
        ("bc5cdr/CDR_TrainingSet.PubTator.txt", "bc5cdr/CDR_DevelopmentSet.PubTator.txt",
         "bc5cdr/CDR_TestSet.PubTator.txt"), types=("Disease",), evaluate_as="bc5cdr-disease"),
    "askapatient": DatasetRecipe(
        "AskAPatient fold 0 (Limsopatham & Collier 2016), its own concepts",
        "askapatient", tuple(f"askapatient_fold0/AskAPatient.fold-0.{s}.txt"
                             for s in ("train", "validation", "test")),
        "AskAPatient concepts", "askapatient",
        tuple(f"askapatient_fold0/AskAPatient.fold-0.{s}.txt"
              for s in ("train", "validation", "test")), evaluate_as="askapatient"),
    "hp": DatasetRecipe(
        "Human Phenotype Ontology synonyms, zero-shot (terms 2:1, 10% of train terms as dev)",
        "obo", ("obo_ontologies/{hp_file}",), "HP", "obo-syn", prefixes=("HP:",),
        evaluate_as="hp-zs"),
    "doid": DatasetRecipe(
        "Disease Ontology synonyms, zero-shot (terms 2:1, 10% of train terms as dev)",
        "obo", ("obo_ontologies/{doid_file}",), "DOID", "obo-syn", prefixes=("DOID:",),
        evaluate_as="doid-zs"),
}
# the file names of the releases our results use (project.yml's vars and assets)
DEFAULT_FILES: Dict[str, str] = {
    "medic_file": "medic_06Jul2012.txt",
    "ctd_file": "CTD_diseases_2017-06-06.tsv.gz",
    "hp_file": "hp_2025-01-16.obo.gz",
    "doid_file": "doid_2024-01-31.obo.gz",
}
OBO_DEV_FRACTION = 0.1


def get_recipe(name: str) -> DatasetRecipe:
    """The recipe of `name` (E060 lists the datasets there are)."""
    if name not in DATASETS:
        raise BioELError(Errors.E060.format(name=name, options=" | ".join(DATASETS)))
    return DATASETS[name]


def recipe_files(recipe: DatasetRecipe, files: Optional[Dict[str, str]] = None) -> List[str]:
    """The KB's files of `recipe` relative to the data root, with the release
    file names of `files` (default DEFAULT_FILES) filled in. A file option may
    hold a path relative to its folder, as project.yml's vars do
    (`ctd_medic/medic_06Jul2012.txt`): its folder is not repeated."""
    names = {**DEFAULT_FILES, **(files or {})}
    out = []
    for template in recipe.kb_files:
        folder, _, rest = template.partition("/")
        key = rest[1:-1] if rest.startswith("{") else None
        if key is None:
            out.append(template)
            continue
        value = names[key]
        out.append(value if value.startswith(folder + "/") else f"{folder}/{value}")
    return out


__all__ = ["DATASETS", "DEFAULT_FILES", "DatasetRecipe", "get_recipe", "recipe_files", "SPLITS"]
