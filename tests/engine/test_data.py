"""Engine data: cleaning filters, alpha sampling, deterministic and resumable streams, real corpora discovery."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import require_file
from tests.helpers.engine import make_data_root
from xeval.engine.data import (
    CleanConfig,
    MonoStream,
    PairStream,
    clean_mono,
    clean_pair,
    discover,
    load_corpora,
    sampling_probs,
    strip_markup,
)

CFG = CleanConfig()


@pytest.mark.parametrize("text, expected", [
    ("%s: cannot open file %d", "cannot open file"),
    ("Deleted %1$s of %2$d items", "Deleted of items"),
    ("Open {0} in {name}", "Open in"),
    ("Value %(count)s is ${HOME}", "Value is"),
    ("_File", "File"), ("&Open", "Open"), ("Save &As…", "Save As…"), ("fish &amp; chips", "fish &amp; chips"),
    ("文件(_F)", "文件"), ("ファイル(&F)", "ファイル"), ("unable to read link '%s'", "unable to read link"),
    ("file_name is 100%", "file_name is 100%"),
])  # fmt: skip
def test_placeholders_and_accelerators_are_stripped(text, expected):
    assert strip_markup(text) == expected


def test_pair_filters_name_their_reason():
    assert clean_pair("Germany", "Deutschland", "iso_3166-1", CFG) == "iso_catalog"
    assert clean_pair("OK", "OK", "gtk", CFG) == "short"
    assert clean_pair("GNU Emacs editor", "GNU Emacs editor", "x", CFG) == "identical"
    assert clean_pair("Firefox web browser help", "Firefox web-browser help!", "x", CFG) == "identical"
    assert clean_pair("Configure the Bluetooth adapters", "Configurer les adaptateurs Bluetooth", "x", CFG) == (
        "Configure the Bluetooth adapters", "Configurer les adaptateurs Bluetooth")
    assert clean_pair("Color management tools", "Colour management tool", "x", CFG) == "near_identical"
    assert clean_pair("%s", "%s", "x", CleanConfig(enabled=False)) == ("%s", "%s")
    assert clean_mono("### manpages-de:man1/ls.1", CFG) == "\0header"
    assert clean_mono("-h, --help", CFG) == "\0short"
    assert clean_mono("1234 5678 9012 3456 7890 1234 5678", CFG) == "\0non_letters"
    assert clean_mono("A fortune\\nwith two lines of wisdom", CFG) == "A fortune with two lines of wisdom"


def test_sampling_follows_m_to_the_alpha():
    p = sampling_probs({"en": 1000, "de": 100, "sw": 10}, 0.7)
    w = {k: m**0.7 for k, m in {"en": 1000, "de": 100, "sw": 10}.items()}
    assert p == pytest.approx({k: v / sum(w.values()) for k, v in w.items()})
    assert p["sw"] > 10 / 1110  # small languages are up-sampled
    assert sampling_probs({"a": 5, "b": 5}, 0.0) == {"a": 0.5, "b": 0.5}


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    from xeval.engine.tokenizer import train_tokenizer

    root = make_data_root(tmp_path_factory.mktemp("data"), n_pairs=120, n_mono=120)
    corpora = load_corpora(root, parallel=["gettext"], monolingual=["fortunes"])
    texts = [t for rows in corpora.mono.values() for t in rows] + [p[1] for p in corpora.pairs["en-de"]]
    return root, corpora, train_tokenizer(texts, 400, "bpe")


def test_fake_corpora_cleaning_report(fake):
    root, corpora, _ = fake
    report = corpora.report["pairs"]["en-de"]
    assert report["iso_catalog"] == 1 and report["short"] == 2 and report["kept"] + report["heldout"] >= 118
    assert ("cannot open", "kann nicht öffnen") in corpora.pairs["en-de"]  # placeholders stripped, pair kept
    lines = corpora.log_lines()
    assert any(line.startswith("clean pairs en-de") and "iso_catalog 1" in line for line in lines)
    held = load_corpora(root, parallel=["gettext"], monolingual=["fortunes"], split="heldout")
    assert not set(held.pairs.get("en-de", [])) & set(corpora.pairs["en-de"])


def test_mono_stream_packs_full_rows_deterministically_and_resumes(fake):
    _, corpora, tok = fake
    a = MonoStream(corpora.mono, tok, seq_len=24, seed=3)
    ids, langs = a.next_batch(5)
    assert ids.shape == (5, 24) and (ids[:, 0] == tok.token_to_id("<s>")).all()
    assert (ids[:, -1] == tok.token_to_id("</s>")).all() and not (ids == tok.token_to_id("<pad>")).any()
    state = a.state_dict()
    import json

    state = json.loads(json.dumps(state))  # the state is plain JSON
    nxt = [a.next_batch(4)[0] for _ in range(3)]
    b = MonoStream(corpora.mono, tok, seq_len=24, seed=3)
    b.load_state_dict(state)
    assert all((x == b.next_batch(4)[0]).all() for x in nxt)
    c = MonoStream(corpora.mono, tok, seq_len=24, seed=3)
    assert (c.next_batch(5)[0] == ids).all()


def test_pair_stream_flips_directions_and_resumes(fake):
    _, corpora, tok = fake
    s = PairStream(corpora.pairs, tok, max_side=6, seed=0)
    batch = s.next_batch(64)
    assert 10 < sum(batch.swapped) < 54 and all(len(x) <= 6 for x in batch.src)
    state = s.state_dict()
    more = s.next_batch(8)
    t = PairStream(corpora.pairs, tok, max_side=6, seed=0)
    t.load_state_dict(state)
    assert t.next_batch(8).src == more.src


def test_real_corpora_are_discovered_without_evaluation_text(data_root):
    require_file(data_root, "parallel/gettext_mo/en-de.tsv.gz")
    pairs, mono = discover(data_root, ["general", "gettext", "multi30k", "wmt22"])
    assert {"en-de", "en-zh", "en-ar", "en-cs", "de-fr"} <= set(pairs)
    assert {"en", "de", "zh", "pt", "ja"} <= set(mono)
    every = [str(p) for srcs in pairs.values() for s in srcs for p in s[1:]] + [str(p) for v in mono.values() for p in v]
    assert all("/parallel/" in p or "/monolingual/" in p for p in every)
    assert not any("test_20" in p for p in every)  # Multi30k test sets are not read (train + val only)


def test_real_gettext_cleaning_drops_iso_and_placeholders(data_root):
    require_file(data_root, "parallel/gettext_mo/en-de.tsv.gz")
    c = load_corpora(data_root, parallel=["gettext"], monolingual=[], languages=["de"], max_lines=3000)
    report = c.report["pairs"]["en-de"]
    assert report["iso_catalog"] > 0 and report["short"] > 0
    assert not any("%s" in a or "%d" in a for a, _ in c.pairs["en-de"])
    counts = Counter(len(a.split()) for a, _ in c.pairs["en-de"])
    assert counts[1] == 0  # one-word pairs are "very short"
