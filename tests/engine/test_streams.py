"""Engine streams: packed monolingual rows and translation pairs, deterministic and resumable from a JSON state."""

from __future__ import annotations

import json

import pytest

from tests.helpers.engine import make_data_root
from xeval.engine.corpus import load_corpora
from xeval.engine.streams import MonoStream, PairStream
from xeval.engine.tokenizer import train_tokenizer


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    root = make_data_root(tmp_path_factory.mktemp("data"), n_pairs=120, n_mono=120)
    corpora = load_corpora(root, parallel=["gettext"], monolingual=["fortunes"])
    texts = [t for rows in corpora.mono.values() for t in rows] + [p[1] for p in corpora.pairs["en-de"]]
    return corpora, train_tokenizer(texts, 400, "bpe")


def test_mono_stream_packs_full_rows_deterministically_and_resumes(fake):
    corpora, tok = fake
    a = MonoStream(corpora.mono, tok, seq_len=24, seed=3)
    ids, langs = a.next_batch(5)
    assert ids.shape == (5, 24) and (ids[:, 0] == tok.token_to_id("<s>")).all()
    assert (ids[:, -1] == tok.token_to_id("</s>")).all() and not (ids == tok.token_to_id("<pad>")).any()
    state = a.state_dict()
    state = json.loads(json.dumps(state))  # the state is plain JSON
    nxt = [a.next_batch(4)[0] for _ in range(3)]
    b = MonoStream(corpora.mono, tok, seq_len=24, seed=3)
    b.load_state_dict(state)
    assert all((x == b.next_batch(4)[0]).all() for x in nxt)
    c = MonoStream(corpora.mono, tok, seq_len=24, seed=3)
    assert (c.next_batch(5)[0] == ids).all()


def test_pair_stream_flips_directions_and_resumes(fake):
    corpora, tok = fake
    s = PairStream(corpora.pairs, tok, max_side=6, seed=0)
    batch = s.next_batch(64)
    assert 10 < sum(batch.swapped) < 54 and all(len(x) <= 6 for x in batch.src)
    state = s.state_dict()
    more = s.next_batch(8)
    t = PairStream(corpora.pairs, tok, max_side=6, seed=0)
    t.load_state_dict(state)
    assert t.next_batch(8).src == more.src
