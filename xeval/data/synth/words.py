"""The lexicon of the synthetic world: one inventory of lexemes, a word form for each in every language.

Every surface unit is a *lexeme* with a key ``"<category>:<index>.<variant>"``; lexemes that differ only in the
variant are synonyms (same concept). Function words, punctuation and the plural / accusative suffixes are
lexemes too, so the vocabulary overlap between a derived language and the base language is exactly the
fraction of lexemes whose form the derived language copies from the base (``overlap``); every other form is
written in the language's own script, so ``overlap=0`` leaves no character, word or subword in common.

Word forms are syllables drawn from a script's letters. A few letters of each script are *reserved* for
suffixes, so ``stem + suffix`` can never spell another stem, and every inflected form parses back uniquely
(``Language.analyse``), which is what the tests of the gold alignments rely on.
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Script:
    name: str
    vowels: str
    consonants: str
    reserved: str  # letters only suffixes use
    stop: str  # full stop
    question: str  # question mark

    def check(self) -> None:
        """Every letter must survive NFKC/NFD and lower-casing unchanged, or tokenizers would merge scripts."""
        letters = self.vowels + self.consonants + self.reserved
        assert len(set(letters)) == len(letters), self.name
        for char in letters:
            assert unicodedata.category(char) in ("Ll", "Lo"), (self.name, char)
        for char in letters + self.stop + self.question:
            assert unicodedata.normalize("NFKC", char) == char == unicodedata.normalize("NFD", char), char
            assert char.lower() == char, char
        for char in self.stop + self.question:
            assert unicodedata.category(char).startswith("P"), (self.name, char)


def _generic(name: str, letters: str, stop: str, question: str) -> Script:
    """A script without a vowel/consonant distinction of its own: the first letters play the vowels."""
    return Script(name, letters[:5], letters[8:28], letters[5:8], stop, question)


def _block(first: int, last: int, step: int = 1) -> str:
    return "".join(chr(c) for c in range(first, last + 1, step))


LATIN = Script("Latin", "aeiou", "bdfgklmnprtvz", "sjw", ".", "?")  # the base language's script
SCRIPTS: tuple[Script, ...] = (
    LATIN,
    Script("Greek", "αεηιουω", "βγδζθκλμνπρστφ", "χψξ", "·", ";"),
    Script("Cyrillic", "аеиоуыэюя", "бвгдзклмнпрстфхцчш", "жщь", "।", "॥"),
    Script("Armenian", "աեէըիոօ", "բգդզթժլխծկհձղճմյնշչպջռսվտրցւփքֆ", "", "։", "՞"),
    Script("Georgian", "აეიოუ", "ბგდვზთკლმნპჟრსტფქღყშჩცძწჭხჯჰ", "", "჻", "※"),
    Script("Hebrew", "אהויע", "בגדזחטכלמנספרת", "צקש", "׃", "׀"),
    _generic("Ethiopic", _block(0x1200, 0x1338, 8), "።", "፧"),
    _generic("Tifinagh", _block(0x2D30, 0x2D65), "᙮", "᛫"),
    _generic("Cherokee", _block(0xAB70, 0xABBF), "꘎", "꘏"),
    _generic("Vai", _block(0xA500, 0xA540), "᠃", "᠂"),
    _generic("OlChiki", _block(0x1C5A, 0x1C77), "၊", "။"),
    _generic("Bopomofo", _block(0x3105, 0x3129), "܀", "܁"),
    _generic("Runic", _block(0x16A0, 0x16EA), "‽", "⸮"),
)
# Armenian and Georgian: take the reserved letters off the end of the consonants.
SCRIPTS = tuple(
    Script(s.name, s.vowels, s.consonants[:-3], s.consonants[-3:], s.stop, s.question) if not s.reserved else s
    for s in SCRIPTS
)
for _script in SCRIPTS:
    _script.check()

# category -> (UPOS, syllables of a form, default count). Counts of the open classes are WorldConfig fields.
CATEGORIES: dict[str, tuple[str, tuple[int, ...]]] = {
    "det": ("DET", (1,)),
    "num": ("NUM", (1, 2)),
    "adp": ("ADP", (1,)),
    "conj": ("CCONJ", (1,)),
    "wh": ("PRON", (1,)),  # who, what, where (where is ADV: see upos())
    "adv": ("ADV", (2, 3)),
    "adj": ("ADJ", (2, 3)),
    "noun": ("NOUN", (2, 3)),
    "vt": ("VERB", (2, 3)),
    "vi": ("VERB", (2, 3)),
    "first": ("PROPN", (2,)),  # PER: first name
    "last": ("PROPN", (2, 3)),  # PER: family name
    "org": ("PROPN", (2, 3)),  # ORG: name
    "orghead": ("PROPN", (2,)),  # ORG: "Bank", "Union"
    "place": ("PROPN", (2, 3)),  # LOC
    "punct": ("PUNCT", ()),  # 000 = full stop, 001 = question mark
    "suf": ("", ()),  # 000 = plural, 001 = accusative; not words of their own
}
NAME_CATEGORIES = ("first", "last", "org", "orghead", "place")
SYNONYM_CATEGORIES = ("noun", "vt", "vi", "adj", "adv")
WHERE = "wh:002.0"
PLURAL, ACCUSATIVE = "suf:000.0", "suf:001.0"
STOP, QUESTION = "punct:000.0", "punct:001.0"


def key(category: str, index: int, variant: int = 0) -> str:
    return f"{category}:{index:03d}.{variant}"


def concept(lexeme: str) -> str:
    return lexeme.rsplit(".", 1)[0]


def category(lexeme: str) -> str:
    return lexeme.split(":", 1)[0]


def upos(lexeme: str) -> str:
    return "ADV" if lexeme == WHERE else CATEGORIES[category(lexeme)][0]


def inventory(counts: dict[str, int], synonym_rate: float, rng: random.Random) -> list[str]:
    """All lexeme keys, sorted. ``synonym_rate`` of the open-class concepts get a second variant."""
    keys = []
    for cat, count in counts.items():
        for index in range(count):
            keys.append(key(cat, index))
            if cat in SYNONYM_CATEGORIES and rng.random() < synonym_rate:
                keys.append(key(cat, index, 1))
    return sorted(keys)


def _syllable(rng: random.Random, script: Script) -> str:
    coda = rng.choice(script.consonants) if rng.random() < 0.25 else ""
    return rng.choice(script.consonants) + rng.choice(script.vowels) + coda


def _fresh(rng: random.Random, script: Script, syllables: int, used: set[str]) -> str:
    while True:
        form = "".join(_syllable(rng, script) for _ in range(syllables))
        if form not in used:
            return form


def _fresh_suffix(rng: random.Random, script: Script, used: set[str]) -> str:
    while True:
        form = rng.choice(script.reserved) + rng.choice(script.vowels)
        if form not in used:
            return form


@dataclass
class Language:
    """One language of the world: its typology and a form for every lexeme."""

    code: str
    script: Script
    order: str  # SVO | SOV | VSO  (SOV languages use postpositions, the others prepositions)
    adj: str  # before | after the noun
    morph: str  # none | plural | case | plural+case  (which suffixes the language uses)
    forms: dict[str, str]  # lexeme key -> form (suffixes included)
    shared: frozenset[str] = frozenset()  # lexemes whose form is the base language's
    _stems: dict[str, str] = field(default_factory=dict, repr=False)  # form -> lexeme key (words only)

    def __post_init__(self):
        self._stems = {form: k for k, form in self.forms.items() if category(k) != "suf"}
        if len(self._stems) != sum(1 for k in self.forms if category(k) != "suf"):
            raise AssertionError(f"{self.code}: two lexemes share a form")

    @property
    def marks_plural(self) -> bool:
        return "plural" in self.morph

    @property
    def marks_case(self) -> bool:
        return "case" in self.morph

    def inflect(self, lexeme: str, plural: bool = False, accusative: bool = False) -> str:
        form = self.forms[lexeme]
        if plural and self.marks_plural:
            form += self.forms[PLURAL]
        if accusative and self.marks_case:
            form += self.forms[ACCUSATIVE]
        return form

    def analyse(self, word: str) -> tuple[str, bool, bool]:
        """(lexeme, plural, accusative) of a surface word; KeyError for a word the language does not have."""
        plural = accusative = False
        if self.marks_case and word.endswith(self.forms[ACCUSATIVE]) and word not in self._stems:
            word, accusative = word[: -len(self.forms[ACCUSATIVE])], True
        if self.marks_plural and word.endswith(self.forms[PLURAL]) and word not in self._stems:
            word, plural = word[: -len(self.forms[PLURAL])], True
        return self._stems[word], plural, accusative


def base_forms(keys: list[str], rng: random.Random) -> dict[str, str]:
    """Forms of the base language (Latin script; names capitalised)."""
    forms: dict[str, str] = {}
    used: set[str] = set()
    for k in keys:
        cat = category(k)
        if cat == "punct":
            form = (LATIN.stop, LATIN.question)[int(k[6:9])]
        elif cat == "suf":
            form = _fresh_suffix(rng, LATIN, used)
        else:
            syllables = rng.choice(CATEGORIES[cat][1])
            form = _fresh(rng, LATIN, syllables, used)
            while cat in NAME_CATEGORIES and form.capitalize() in used:
                form = _fresh(rng, LATIN, syllables, used)
            if cat in NAME_CATEGORIES:
                form = form.capitalize()
        used.add(form)
        forms[k] = form
    return forms


def derived_forms(
    keys: list[str], base: dict[str, str], script: Script, overlap: float, rng: random.Random
) -> tuple[dict[str, str], frozenset[str]]:
    """Forms of a derived language: round(overlap * n) lexemes copy the base form, the rest are new words in
    ``script`` with as many syllables as the base word (names are transliterated letter by letter)."""
    shared = frozenset(rng.sample(keys, round(overlap * len(keys))))
    transliterate = _transliteration(script, rng)
    forms: dict[str, str] = {}
    used: set[str] = {base[k] for k in shared}
    # Names first, so that a transliteration never has to give way to an ordinary word.
    for k in sorted(keys, key=lambda k: (category(k) not in NAME_CATEGORIES, k)):
        cat = category(k)
        if k in shared:
            forms[k] = base[k]
            continue
        if cat == "punct":
            form = (script.stop, script.question)[int(k[6:9])]
        elif cat == "suf":
            form = _fresh_suffix(rng, script, used)
        elif cat in NAME_CATEGORIES:
            form = "".join(transliterate[c] for c in base[k].lower())
            if form in used:
                form = _fresh(rng, script, 2, used)
        else:
            syllables = sum(1 for c in base[k] if c in LATIN.vowels) or 1
            form = _fresh(rng, script, syllables, used)
        used.add(form)
        forms[k] = form
    return forms, shared


def _transliteration(script: Script, rng: random.Random) -> dict[str, str]:
    """A random injective letter map from the base script's letters to ``script``'s (vowels to vowels)."""
    vowels = rng.sample(script.vowels, len(LATIN.vowels))
    consonants = rng.sample(script.consonants, len(LATIN.consonants))
    return dict(zip(LATIN.vowels + LATIN.consonants, vowels + consonants))
