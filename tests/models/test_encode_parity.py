"""xeval's sentence vectors on the real multilingual encoder are sentence-transformers' own (issue 28 item 1): the
Tatoeba probe's encoding (``query: `` prefix, mean pooling over all tokens, batches by subword count under a token
budget) against ``SentenceTransformer.encode`` (batches by characters, the folder's mean pooling + Normalize), in
fp32, per-sentence cosine >= 0.9999 (measured: >= 0.99999); bench/encode_throughput.py times the two."""

import numpy as np
import pytest

from xeval.data.tatoeba import read_tatoeba


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.slow
def test_probe_vectors_equal_sentence_transformers_encode(e5_dir, data_root):
    SentenceTransformer = pytest.importorskip("sentence_transformers").SentenceTransformer
    from xeval.adapters.probes.base import with_prefix
    from xeval.models.encoder import Encoder

    texts = []
    for lang in ("de", "ja", "sw"):  # three scripts' subword rates, and both sides
        pairs = read_tatoeba(data_root / "tatoeba", lang)[:8]
        texts += [p.src for p in pairs] + [p.tgt for p in pairs]
    texts.append(" ".join(texts[:12]))  # one long sentence: its own batch under the token budget
    encoder = Encoder(e5_dir)
    ours = encoder.sentence_embeddings(with_prefix(texts, {"prefix": "query: "}), layers=None, batch_size=8,
                                       progress=False)  # every hidden state: [13, N, H]
    theirs = SentenceTransformer(str(e5_dir), device="cpu").encode(texts, batch_size=8, prompt="query: ",
                                                                   convert_to_numpy=True)
    cos = (_unit(ours[-1]) * _unit(theirs)).sum(1)
    assert cos.min() >= 0.9999, cos.min()
    # the batches do not change a vector beyond float rounding: one sentence a batch gives the same
    alone = encoder.sentence_embeddings(with_prefix(texts[:6], {"prefix": "query: "}), layers=[4, 12], batch_size=1,
                                        progress=False)
    np.testing.assert_allclose(alone, ours[[4, 12], :6], rtol=1e-4, atol=1e-5)
