"""The lab's tests (`bench/`: harnesses, tables, experiment commands) carry the
`slow` marker: `pytest -m "not slow"` runs the library's tests alone."""
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slow)


def toy_linker(tiny_bert_dir, path, index_type="flat"):
    """A tiny untrained pipeline of the tiny encoder over three toy concepts
    (five names), its name index of `index_type`, saved at `path`."""
    import spacy

    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase(name="toy")
    for cid, names in (("D1", ["colon cancer", "cancer of the colon"]), ("D2", ["heart attack"]),
                       ("D3", ["asthma", "bronchial asthma"])):
        kb.add(Concept(cid, names[0], synonyms=names[1:]))
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config={
        "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir)},
        "index": {"@misc": "spacy-bioel.NameIndex.v2", "index_type": index_type}})
    linker.set_kb(kb)
    nlp.initialize(lambda: [])
    nlp.to_disk(path)
    return nlp
