"""The lab's tests (`bench/`: harnesses, tables, experiment commands) carry the
`slow` marker: `pytest -m "not slow"` runs the library's tests alone."""
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slow)
