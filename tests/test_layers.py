"""Data flows one way through the package: raw files -> kb / corpora -> encoders
-> index / datastore / nil -> training, pretraining -> pipeline -> evaluation -> cli. No
module imports from a layer above its own (function-level imports included)."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "spacy_bioel"
LAYERS = {"errors": 0, "validation": 0, "about": 0, "assets": 0, "kb": 1, "corpora": 2, "encoders": 3,
          "losses": 3, "ner": 3, "index": 4, "datastore": 5, "nil": 5, "training": 6, "pretraining": 6, "pipeline": 7, "reranker": 7, "research": 7,
          "evaluation": 8, "corpus_linking": 8, "visualize": 8, "cli": 9, "__main__": 10}


def imported_subpackages(path: Path):
    """(line, subpackage) of every spacy_bioel import in a module of the package."""
    relative_to_root = len(path.relative_to(PACKAGE).parts) - 1  # depth below spacy_bioel
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: climb to the package root, then the first part
                if node.level - 1 < relative_to_root:
                    continue  # inside the same subpackage
                first = (node.module or "").split(".")[0] or None
                names = [first] if first else [alias.name for alias in node.names]
            elif (node.module or "").startswith("spacy_bioel."):
                names = [node.module.split(".")[1]]
            else:
                continue
            for name in names:
                yield node.lineno, name


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if len(p.relative_to(PACKAGE).parts) > 1)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_runs_back_up(path):
    layer = LAYERS[path.relative_to(PACKAGE).parts[0]]
    upward = [(line, name) for line, name in imported_subpackages(path)
              if LAYERS.get(name, 0) > layer]
    assert not upward, f"{path.relative_to(PACKAGE)} imports from a higher layer: {upward}"


@pytest.mark.parametrize("path", [p for p in MODULES if p.relative_to(PACKAGE).parts[0] != "research"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_core_imports_no_research(path):
    """The seed methods that lost (`spacy_bioel.research`) are reached through entry
    points and training hooks only: no core module imports them (issue 75)."""
    assert "research" not in [name for _, name in imported_subpackages(path)]


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    fake = PACKAGE / "kb" / "loaders.py"
    source = fake.read_text(encoding="utf-8") + "\n\ndef _x():\n    from ..corpora.documents import Mention\n"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert ("corpora" in [name for _, name in imported_subpackages(fake)])


def sibling_imports(path: Path):
    """Modules of the same subpackage that `path` imports (any level: module,
    function or TYPE_CHECKING block)."""
    package = path.parent
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                yield node.module.split(".")[0]
            else:  # from . import a, b
                yield from (alias.name for alias in node.names
                            if (package / f"{alias.name}.py").exists())


def find_cycle(graph):
    """One cycle of a {module: {imported modules}} graph, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize("subpackage", sorted(p.name for p in PACKAGE.iterdir()
                                               if (p / "__init__.py").exists()))
def test_no_import_circle_inside_a_subpackage(subpackage):
    folder = PACKAGE / subpackage
    graph = {p.stem: set(sibling_imports(p)) - {p.stem} for p in folder.glob("*.py")}
    assert find_cycle(graph) is None, f"{subpackage}: {' -> '.join(find_cycle(graph))}"


def test_the_circle_check_finds_one():
    assert find_cycle({"linker": {"linking"}, "linking": {"state", "linker"}, "state": set()}) == \
        ["linker", "linking", "linker"]
    assert find_cycle({"linker": {"linking"}, "linking": {"state"}, "state": set()}) is None


LAB = Path(__file__).resolve().parents[1] / "bench"
ATTRIBUTE = __import__("re").compile(r"\b(?!self\b|cls\b|os\b|sys\b|np\b)[a-z_]+\._[a-z]\w*")


def private_uses(path: Path):
    """(line, what) of every private name of spacy_bioel a lab module reaches: a
    module or name with a leading underscore imported from it, or an underscored
    attribute of an object (the lab's own `self._x` aside)."""
    text = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spacy_bioel"):
            hidden = [part for part in node.module.split(".") if part.startswith("_")]
            hidden += [a.name for a in node.names if a.name.startswith("_")]
            if hidden:
                yield node.lineno, f"{node.module}: {', '.join(hidden)}"
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#")[0]
        for match in ATTRIBUTE.finditer(code):
            if "spacy" not in code or "spacy_bioel" in code:  # spaCy's own privates are not ours
                if not match.group(0).startswith("__"):
                    yield number, match.group(0)


@pytest.mark.parametrize("path", sorted(LAB.rglob("*.py")), ids=lambda p: str(p.relative_to(LAB)))
def test_the_lab_uses_the_library_through_public_names(path):
    """Issue 75: the lab (`bench/`) reaches the library through public functions
    only, so the library can change its internals without breaking the lab."""
    assert not list(private_uses(path))
