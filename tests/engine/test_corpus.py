"""Engine corpora: alpha sampling, the cleaning report and the held-out split, real corpora discovery."""

from __future__ import annotations

import pytest

from tests.conftest import require_file
from tests.helpers.engine import make_data_root
from xeval.engine.corpus import discover, load_corpora, sampling_probs


def test_sampling_follows_m_to_the_alpha():
    p = sampling_probs({"en": 1000, "de": 100, "sw": 10}, 0.7)
    w = {k: m**0.7 for k, m in {"en": 1000, "de": 100, "sw": 10}.items()}
    assert p == pytest.approx({k: v / sum(w.values()) for k, v in w.items()})
    assert p["sw"] > 10 / 1110  # small languages are up-sampled
    assert sampling_probs({"a": 5, "b": 5}, 0.0) == {"a": 0.5, "b": 0.5}


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    root = make_data_root(tmp_path_factory.mktemp("data"), n_pairs=120, n_mono=120)
    return root, load_corpora(root, parallel=["gettext"], monolingual=["fortunes"])


def test_fake_corpora_cleaning_report(fake):
    root, corpora = fake
    report = corpora.report["pairs"]["en-de"]
    assert report["iso_catalog"] == 1 and report["short"] == 2 and report["kept"] + report["heldout"] >= 118
    assert ("cannot open", "kann nicht öffnen") in corpora.pairs["en-de"]  # placeholders stripped, pair kept
    lines = corpora.log_lines()
    assert any(line.startswith("clean pairs en-de") and "iso_catalog 1" in line for line in lines)
    held = load_corpora(root, parallel=["gettext"], monolingual=["fortunes"], split="heldout")
    assert not set(held.pairs.get("en-de", [])) & set(corpora.pairs["en-de"])


def test_real_corpora_are_discovered_without_evaluation_text(data_root):
    require_file(data_root, "parallel/gettext_mo/en-de.tsv.gz")
    pairs, mono = discover(data_root, ["general", "gettext", "multi30k", "wmt22"])
    assert {"en-de", "en-zh", "en-ar", "en-cs", "de-fr"} <= set(pairs)
    assert {"en", "de", "zh", "pt", "ja"} <= set(mono)
    every = [str(p) for srcs in pairs.values() for s in srcs for p in s[1:]] + [str(p) for v in mono.values() for p in v]
    assert all("/parallel/" in p or "/monolingual/" in p for p in every)
    assert not any("test_20" in p for p in every)  # Multi30k test sets are not read (train + val only)
