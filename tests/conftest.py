import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_ROOT = Path(os.environ.get("BIOEL_DATA_ROOT", REPO_ROOT.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real corpora (../shared/data, or $BIOEL_DATA_ROOT); data tests skip without it."""
    if not (DATA_ROOT / "ncbi_disease").is_dir():
        pytest.skip(f"real data not found at {DATA_ROOT} (set BIOEL_DATA_ROOT)")
    return DATA_ROOT
