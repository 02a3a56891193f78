"""Parameters of a synthetic world and the world itself (its lexicon and languages), built from one seed."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field

from xeval.base.errors import UserError
from xeval.data.synth.grammar import Sampler
from xeval.data.synth.words import (
    CATEGORIES,
    LATIN,
    SCRIPTS,
    Language,
    base_forms,
    concept,
    derived_forms,
    inventory,
)

ORDERS = ("SVO", "SOV", "VSO")
ADJ_PLACES = ("before", "after")
MORPHS = ("none", "plural", "case", "plural+case")
BASE_CODE = "qaa"  # ISO 639 reserves qaa-qtz for local use: no real language will ever clash with these


def language_codes(n: int) -> list[str]:
    return [f"qa{chr(ord('a') + i)}" for i in range(n)]


@dataclass(frozen=True)
class Sizes:
    """How much of each artefact to write. ``train`` is per task, base language only; dev/test per language."""

    mono: int = 20000  # monolingual sentences per language
    parallel: int = 5000  # base-derived sentence pairs per derived language
    train: int = 2000
    dev: int = 300
    test: int = 500
    tatoeba: int = 500  # retrieval pairs per derived language
    alignment: int = 300  # gold-aligned sentence pairs per derived language


@dataclass(frozen=True)
class WorldConfig:
    """``order``, ``adj`` and ``morph`` are cycled over the languages, the base language first; ``overlap`` is
    cycled over the derived languages (the base language shares everything with itself)."""

    seed: int = 0
    languages: int = 4
    overlap: tuple[float, ...] = (0.5,)
    order: tuple[str, ...] = ("SVO", "SOV", "VSO")
    adj: tuple[str, ...] = ("before", "after")
    morph: tuple[str, ...] = ("plural", "plural+case")
    nouns: int = 300
    transitive_verbs: int = 60
    intransitive_verbs: int = 30
    adjectives: int = 80
    adverbs: int = 25
    names: int = 60  # first names, family names, places; organisations get 2/3 of it
    synonym_rate: float = 0.2  # share of open-class concepts with a synonym (paraphrases use them)
    sizes: Sizes = field(default_factory=Sizes)

    def validate(self) -> WorldConfig:
        if not 1 <= self.languages <= len(SCRIPTS):
            raise UserError(f"--num-langs must be between 1 and {len(SCRIPTS)} (one script each), got {self.languages}")
        for name, values, allowed in (("order", self.order, ORDERS), ("adj", self.adj, ADJ_PLACES),
                                      ("morph", self.morph, MORPHS)):
            bad = [v for v in values if v not in allowed]
            if not values or bad:
                raise UserError(f"--{name}: expected a comma-separated list of {'|'.join(allowed)}, got {values!r}")
        if not self.overlap or any(not 0.0 <= f <= 1.0 for f in self.overlap):
            raise UserError(f"--overlap: expected fractions between 0 and 1, got {self.overlap!r}")
        if any(v < 0 for v in asdict(self.sizes).values()):
            raise UserError("sizes must not be negative")
        return self

    def counts(self) -> dict[str, int]:
        """Concepts per lexicon category (closed classes fixed)."""
        return {
            "det": 3, "num": 6, "adp": 6, "conj": 2, "wh": 3, "punct": 2, "suf": 2,
            "adv": self.adverbs, "adj": self.adjectives, "noun": self.nouns,
            "vt": self.transitive_verbs, "vi": self.intransitive_verbs,
            "first": self.names, "last": self.names, "org": max(1, self.names * 2 // 3), "orghead": 8,
            "place": self.names,
        }  # fmt: skip

    def as_json(self) -> dict:
        return asdict(self)


def rng(seed: int, *stream: str) -> random.Random:
    """An independent, reproducible stream per artefact: changing one size never changes another artefact.
    (A str seed is hashed with SHA-512 by ``random``, independent of PYTHONHASHSEED.)"""
    return random.Random("/".join(["xeval-synth", str(seed), *stream]))


@dataclass
class World:
    config: WorldConfig
    keys: list[str]  # every lexeme, sorted
    variants: dict[str, int]  # concept -> number of synonyms
    languages: list[Language]  # [0] is the base language

    @property
    def base(self) -> Language:
        return self.languages[0]

    @property
    def derived(self) -> list[Language]:
        return self.languages[1:]

    def language(self, code: str) -> Language:
        for lang in self.languages:
            if lang.code == code:
                return lang
        raise KeyError(code)

    def sampler(self, *stream: str) -> Sampler:
        return Sampler(self.config.counts(), self.variants, rng(self.config.seed, *stream))


def build_world(config: WorldConfig) -> World:
    config.validate()
    counts = config.counts()
    assert set(counts) == set(CATEGORIES)
    keys = inventory(counts, config.synonym_rate, rng(config.seed, "inventory"))
    variants: dict[str, int] = {}
    for k in keys:
        variants[concept(k)] = variants.get(concept(k), 0) + 1
    base = base_forms(keys, rng(config.seed, "forms", BASE_CODE))
    languages = []
    for i, code in enumerate(language_codes(config.languages)):
        order, adj, morph = (cycle[i % len(cycle)] for cycle in (config.order, config.adj, config.morph))
        if i == 0:
            forms, shared, script = base, frozenset(keys), LATIN
        else:
            script = SCRIPTS[i]
            overlap = config.overlap[(i - 1) % len(config.overlap)]
            forms, shared = derived_forms(keys, base, script, overlap, rng(config.seed, "forms", code))
        languages.append(Language(code, script, order, adj, morph, forms, shared))
    return World(config, keys, variants, languages)
