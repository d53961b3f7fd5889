"""Every internal link of the user's docs resolves (issue 75): README.md and
docs/**/*.md link files that exist and anchors that are headings there, as
GitHub renders them."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped
    (hyphens and underscores kept), spaces as hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"[*]", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose(path: Path):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors(path: Path) -> set:
    seen: dict = {}
    out = set()
    for _, line in prose(path):
        match = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
        for name in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
            out.add(name)
    return out


def internal_links(page: Path):
    for number, line in prose(page):
        line = re.sub(r"`[^`]*`", "", line)  # code spans are not links
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            yield number, target


def test_the_slug_is_githubs():
    assert slug("Results: three seeds, test (2 CPU cores)") == "results-three-seeds-test-2-cpu-cores"
    assert slug("The in-context NER served without PyTorch, end to end (issue 73, part 1; dev)") == \
        "the-in-context-ner-served-without-pytorch-end-to-end-issue-73-part-1-dev"
    assert slug("`bioel_linker` settings") == "bioel_linker-settings"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_internal_link_resolves(page):
    broken = []
    for number, target in internal_links(page):
        file, _, anchor = target.partition("#")
        destination = (page.parent / file).resolve() if file else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not destination.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{where} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readmes_what_to_expect_table_is_the_result_files():
    """README.md's "What to expect" table is the one `python -m bench expect-table`
    writes from the committed result files: a number changed by hand, or a result
    file rerun without the table, fails here."""
    from bench.expect import readme_block, table

    block = readme_block((ROOT / "README.md").read_text(encoding="utf-8"))
    assert block, "README.md lost its What to expect block"
    assert block == table(ROOT), "run: python -m bench expect-table"


def test_the_component_guides_settings_table_is_the_default():
    """Issue 75: docs/component.md's one settings table names every setting of the
    one default (`defaults.SETTINGS`, the attribute names as `*_attr`) with its value."""
    from spacy_bioel.pipeline.defaults import SETTINGS

    text = (ROOT / "docs" / "component.md").read_text(encoding="utf-8")
    table = text.split("| setting | default | what it does |", 1)[1].split("\n\n", 1)[0]
    rows = {cells[0].strip("` "): cells[1].strip("` ") for cells in
            (line.strip("|").split("|") for line in table.splitlines()[2:] if line.startswith("|"))}
    def toml(value) -> str:  # as a config writes it
        return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)

    spelled = {key: toml(value) for key, value in SETTINGS.items() if not key.endswith("_attr")}
    assert {k: rows.get(k) for k in spelled} == spelled
    assert set(rows) == set(spelled) | {"*_attr"}
