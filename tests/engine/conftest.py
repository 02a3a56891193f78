"""Fixtures of the engine's training tests: a small fake data root in the shared layout and a 500-id BPE tokenizer
with XLM-R's special ids (<s>=0 <pad>=1 </s>=2 <unk>=3, <mask> last) trained on it; one of each per test module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.engine import make_data_root


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory) -> Path:
    return make_data_root(tmp_path_factory.mktemp("engine-data"))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory, fake_root) -> Path:
    from xeval.engine.tokenizer import build_tokenizer

    out = tmp_path_factory.mktemp("engine-tok")
    build_tokenizer([str(fake_root)], out, vocab_size=500, model="bpe", sample_lines=2000, log=lambda *a: None)
    return out
