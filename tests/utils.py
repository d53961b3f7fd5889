"""Small helpers shared by the tests (fixtures themselves are built inline)."""
import gzip
from pathlib import Path
from typing import List


def write_lines(path: Path, lines: List[str]) -> Path:
    """Write `lines` (newline-terminated) as UTF-8, gzipped when the name ends in .gz."""
    text = "".join(line + "\n" for line in lines)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


TOY_DOCS = [("colon cancer and heart attack", [(0, 12, "D1"), (17, 29, "D2")]),
            ("asthma in a child", [(0, 6, "D3")])]
TOY_NIL_DOC = ("an unknown syndrome", [(3, 19, "NIL")])


def write_toy_linking_data(folder: Path, *, nil: bool = True, repeat: int = 1) -> None:
    """folder/data.spacy (gold spans with kb ids; one NIL mention per repeat when
    `nil`) and folder/kb.bioelkb (D1-D3) for end-to-end component tests."""
    import spacy
    from spacy.tokens import DocBin

    from spacy_bioel import Concept, KnowledgeBase

    nlp = spacy.blank("en")
    docs = []
    for text, spans in (TOY_DOCS + ([TOY_NIL_DOC] if nil else [])) * repeat:
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(s, e, label="Disease", kb_id=c) for s, e, c in spans]
        docs.append(doc)
    DocBin(docs=docs, store_user_data=True).to_disk(folder / "data.spacy")
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colon cancer",)))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D3", "asthma"))
    kb.to_disk(folder / "kb.bioelkb")
