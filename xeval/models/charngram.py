"""``--control charngram``: a string-similarity baseline that stands in for a model in the sentence-retrieval probes.

No neural network and no training data: a sentence is the TF-IDF vector of its character n-grams (scikit-learn),
and the probes score these vectors exactly as they score a model's (cosine = inner product of L2-normalised
vectors, top-1 both directions, ratio margin for BUCC, the same metric code), so the number is the floor that
shared strings alone reach -- names, numbers, cognates, loanwords, shared script.

What it is fitted on (the issue's rule: only what a real model would see, never the test pairs' other side):

- the feature space is fixed in advance, not fitted: ``HashingVectorizer(analyzer="char_wb", ngram_range=(1, 4),
  lowercase, alternate_sign=False, norm=None)`` into 2**20 buckets, so no vocabulary is learnt from any text;
- the IDF is fitted **per side, on that side's own sentences only** (``TfidfTransformer``: the xx sentences of
  the evaluated set for the xx side, its English sentences for the English side): a "model" that has read
  monolingual text in each language but never a parallel pair. Fitting one IDF on both sides together would let
  an n-gram's rarity on one side shape the other side's weights, which is information a model never has about the
  pairs it is tested on (and a dictionary-free model has no access to a bilingual corpus here either).

Its model key, ``charngram@<12 hex of the configuration's hash>``, names no model: its numbers depend on the
vectorizer and the data alone, so a store reuses them across every model run beside it. ``identity()`` carries
``control: charngram``, the configuration, what the IDF is fitted on and the model it was run beside (``parent``).
It has no layers (``layered`` is False): its probe records carry layer None.
"""

from __future__ import annotations

from xeval.base.hashing import hash_json
from xeval.results.controls import CONTROL_CHARNGRAM

FITTED_ON = ("per side: each side's IDF on that side's own sentences of the evaluated set (xx sentences for "
             "the xx side, English for the English side); never on a pair; the feature space (hashed character "
             "n-grams) is fixed, not fitted")


class CharNgramModel:
    """The pseudo-model: ``side_vectors(sides)`` gives each side's L2-normalised sparse TF-IDF rows."""

    layered = False  # no hidden states: a probe record of it has layer None
    num_layers = 0
    sentence_pipeline = None  # no sentence-transformers pooling, no input prefix
    label = None

    def __init__(self, parent=None, analyzer: str = "char_wb", ngram_range: tuple[int, int] = (1, 4),
                 n_features: int = 2 ** 20, sublinear_tf: bool = True, lowercase: bool = True,
                 norm: str = "l2", smooth_idf: bool = True):
        self.analyzer, self.ngram_range, self.n_features = analyzer, (int(ngram_range[0]), int(ngram_range[1])), \
            int(n_features)
        self.sublinear_tf, self.lowercase, self.norm, self.smooth_idf = bool(sublinear_tf), bool(lowercase), norm, \
            bool(smooth_idf)
        # the heldout probe reads the parent's pre-training config from its folder: the same pairs as the model's
        self.spec = getattr(parent, "spec", "charngram")
        self.parent = None if parent is None else {"key": parent.key, "id": parent.spec,
                                                   "hash": getattr(parent, "weights_hash", None)}

    def config(self) -> dict:
        """Everything that decides its vectors (hashed into the key)."""
        return {"vectorizer": "sklearn HashingVectorizer + TfidfTransformer", "analyzer": self.analyzer,
                "ngram_range": list(self.ngram_range), "n_features": self.n_features, "lowercase": self.lowercase,
                "alternate_sign": False, "sublinear_tf": self.sublinear_tf, "smooth_idf": self.smooth_idf,
                "norm": self.norm}

    @property
    def weights_hash(self) -> str:
        return hash_json(self.config())

    @property
    def key(self) -> str:
        return f"{CONTROL_CHARNGRAM}@{self.weights_hash[:12]}"

    @property
    def cache_key(self) -> str:
        return self.weights_hash

    def settings(self) -> dict:
        """Part of every unit's config hash (``xeval.results.identity``), as an encoder's dtype is."""
        return {"charngram": self.config()}

    def identity(self) -> dict:
        return {"id": CONTROL_CHARNGRAM, "kind": CONTROL_CHARNGRAM, "hash": self.weights_hash, "num_layers": None,
                "control": CONTROL_CHARNGRAM, "charngram": self.config(), "fitted_on": FITTED_ON,
                **({"parent": self.parent} if self.parent else {})}

    def probe_config(self) -> dict:
        """What a retrieval probe records in place of pooling and max length."""
        return {"features": "TF-IDF over character n-grams (no neural network)", **self.config(),
                "fitted_on": FITTED_ON}

    def _hashing(self):
        from sklearn.feature_extraction.text import HashingVectorizer

        return HashingVectorizer(analyzer=self.analyzer, ngram_range=self.ngram_range, n_features=self.n_features,
                                 lowercase=self.lowercase, alternate_sign=False, norm=None, dtype="float64")

    def side_vectors(self, sides: list[list[str]]) -> list:
        """One ``scipy.sparse.csr_matrix`` [len(side), n_features] float32 per side, rows L2-normalised (zero rows
        -- a sentence with no characters -- stay zero), each side's IDF fitted on that side's texts alone."""
        from sklearn.feature_extraction.text import TfidfTransformer

        hashing = self._hashing()
        out = []
        for texts in sides:
            counts = hashing.transform(list(texts))
            tfidf = TfidfTransformer(norm=self.norm, use_idf=True, smooth_idf=self.smooth_idf,
                                     sublinear_tf=self.sublinear_tf)
            out.append(tfidf.fit_transform(counts).astype("float32").tocsr())
        return out
