"""The one grammar of the synthetic world: abstract sentences, and their realisation in each language.

An abstract sentence is language-free: clauses of a subject, a verb, an optional object, adverb and
prepositional phrase, each word a *slot* ``(node id, lexeme)``. Realising it in a language orders the
constituents by the language's word order (SVO / SOV / VSO; SOV languages put the adposition after its noun
phrase), places adjectives before or after the noun, and adds the language's plural / accusative suffixes.
Every slot becomes exactly one word in every language, so the gold alignment between two realisations of one
abstract sentence is the pairing of equal node ids: exact by construction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import NamedTuple

from xeval.data.synth.words import QUESTION, STOP, WHERE, Language, concept, key
from xeval.data.synth.words import upos as _upos

upos = lru_cache(maxsize=None)(_upos)

Slot = tuple[int, str]  # (node id, lexeme key)


class Token(NamedTuple):
    form: str
    upos: str
    ner: str  # IOB2
    node: int
    lexeme: str


@dataclass(frozen=True)
class NP:
    kind: str  # "common" | "PER" | "ORG" | "LOC" | "wh"
    head: Slot  # the noun, the last name token, or the wh-word (the word that takes the suffixes)
    names: tuple[Slot, ...] = ()  # entity tokens before the head
    det: Slot | None = None
    num: Slot | None = None
    adjs: tuple[Slot, ...] = ()
    plural: bool = False

    def slots(self) -> list[Slot]:
        return [s for s in (self.det, self.num) if s] + list(self.adjs) + list(self.names) + [self.head]


@dataclass(frozen=True)
class PP:
    adp: Slot | None  # None: a "where" adverb standing for the whole phrase
    np: NP


@dataclass(frozen=True)
class Clause:
    subj: NP
    verb: Slot
    obj: NP | None = None
    adv: Slot | None = None
    pp: PP | None = None
    front: bool = False  # the prepositional phrase opens the clause (a meaning-preserving variant)


@dataclass(frozen=True)
class Sentence:
    clauses: tuple[Clause, ...]
    conjs: tuple[Slot, ...]  # len(clauses) - 1 conjunctions
    punct: Slot


def _realise_np(np: NP, lang: Language, accusative: bool) -> list[Token]:
    tag = np.kind if np.kind in ("PER", "ORG", "LOC") else ""
    forms = lang.forms
    if np.kind == "common":
        node, lexeme = np.head
        head = [Token(lang.inflect(lexeme, np.plural, accusative), "NOUN", "O", node, lexeme)]
        adjs = [Token(forms[lex], "ADJ", "O", node, lex) for node, lex in np.adjs]
        pre = [Token(forms[s[1]], upos(s[1]), "O", s[0], s[1]) for s in (np.det, np.num) if s]
        return pre + (adjs + head if lang.adj == "before" else head + adjs)
    node, lexeme = np.head
    words = [(forms[lex], node, lex) for node, lex in np.names] + [(lang.inflect(lexeme, False, accusative), node, lexeme)]
    if not tag:
        return [Token(form, upos(lex), "O", node, lex) for form, node, lex in words]
    return [Token(form, "PROPN", ("I-" if i else "B-") + tag, node, lex) for i, (form, node, lex) in enumerate(words)]


def _one(slot: Slot | None, lang: Language) -> list[Token]:
    return [Token(lang.forms[slot[1]], upos(slot[1]), "O", slot[0], slot[1])] if slot else []


def _realise_clause(clause: Clause, lang: Language) -> list[Token]:
    subj = _realise_np(clause.subj, lang, accusative=False)
    obj = _realise_np(clause.obj, lang, accusative=True) if clause.obj else []
    verb, adv = _one(clause.verb, lang), _one(clause.adv, lang)
    pp: list[Token] = []
    if clause.pp:
        inner = _realise_np(clause.pp.np, lang, accusative=False)
        adp = _one(clause.pp.adp, lang)
        pp = inner + adp if lang.order == "SOV" else adp + inner
    front, pp = (pp, []) if clause.front else ([], pp)
    if lang.order == "SVO":
        return front + subj + verb + adv + obj + pp
    if lang.order == "SOV":
        return front + subj + pp + obj + adv + verb
    if lang.order == "VSO":
        return front + verb + adv + subj + obj + pp
    raise ValueError(f"unknown word order {lang.order!r}")


def realise(sentence: Sentence, lang: Language) -> list[Token]:
    tokens: list[Token] = []
    for i, clause in enumerate(sentence.clauses):
        if i:
            tokens += [Token(lang.forms[sentence.conjs[i - 1][1]], "CCONJ", "O", *sentence.conjs[i - 1])]
        tokens += _realise_clause(clause, lang)
    node, lexeme = sentence.punct
    return tokens + [Token(lang.forms[lexeme], "PUNCT", "O", node, lexeme)]


def text(tokens: list[Token]) -> str:
    return " ".join(t.form for t in tokens)


def alignment(src: list[Token], tgt: list[Token]) -> list[tuple[int, int]]:
    """0-based (i, j) links between two realisations of one abstract sentence: equal node ids."""
    where = {t.node: j for j, t in enumerate(tgt)}
    return [(i, where[t.node]) for i, t in enumerate(src) if t.node in where]


class Sampler:
    """Draws abstract sentences. ``entity_rate`` is the chance that a noun phrase is a named entity."""

    def __init__(self, counts: dict[str, int], variants: dict[str, int], rng: random.Random):
        self.counts = counts  # category -> number of concepts
        self.variants = variants  # concept -> number of synonyms
        self.rng = rng
        self._next = 0
        self._lexemes: dict[tuple[str, int], tuple[str, ...]] = {}

    def _id(self) -> int:
        self._next += 1
        return self._next

    def slot(self, category: str, index: int | None = None) -> Slot:
        if index is None:
            index = self.rng.randrange(self.counts[category])
        lexemes = self._lexemes.get((category, index))
        if lexemes is None:
            n = self.variants.get(concept(key(category, index)), 1)
            lexemes = self._lexemes[(category, index)] = tuple(key(category, index, v) for v in range(n))
        return self._id(), self.rng.choice(lexemes)

    def np(self, entity_rate: float, kinds: tuple[str, ...] = ("PER", "ORG", "LOC")) -> NP:
        rng = self.rng
        if rng.random() < entity_rate:
            kind = rng.choice(kinds)
            if kind == "PER":
                names = (self.slot("first"),) if rng.random() < 0.6 else ()
                return NP("PER", self.slot("last") if names else self.slot("first"), names)
            if kind == "ORG":
                if rng.random() < 0.5:
                    return NP("ORG", self.slot("orghead"), (self.slot("org"),))
                return NP("ORG", self.slot("org"))
            return NP("LOC", self.slot("place"))
        det = self.slot("det") if rng.random() < 0.7 else None
        num = self.slot("num") if rng.random() < 0.2 else None
        adjs = tuple(self.slot("adj", i) for i in rng.sample(range(self.counts["adj"]), rng.choice((0, 0, 1, 1, 2))))
        plural = num is not None or rng.random() < 0.25
        return NP("common", self.slot("noun"), det=det, num=num, adjs=adjs, plural=plural)

    def clause(self, entity_rate: float, transitive: bool | None = None, verb: int | None = None) -> Clause:
        rng = self.rng
        if transitive is None:
            transitive = rng.random() < 0.7
        subj = self.np(entity_rate, ("PER", "ORG"))
        verb_slot = self.slot("vt" if transitive else "vi", verb)
        obj = self.np(entity_rate) if transitive else None
        adv = self.slot("adv") if rng.random() < 0.25 else None
        pp = PP(self.slot("adp"), self.np(entity_rate * 1.5, ("LOC",))) if rng.random() < 0.4 else None
        front = pp is not None and rng.random() < 0.15
        return Clause(subj, verb_slot, obj, adv, pp, front)

    def sentence(self, entity_rate: float = 0.3) -> Sentence:
        clauses = (self.clause(entity_rate),)
        conjs: tuple[Slot, ...] = ()
        if self.rng.random() < 0.15:
            clauses += (self.clause(entity_rate),)
            conjs = (self.slot("conj"),)
        return Sentence(clauses, conjs, (self._id(), STOP))

    def synonyms(self, sentence: Sentence) -> Sentence:
        """The same sentence with every lexeme that has synonyms redrawn among them (same node ids)."""

        def swap(slot):
            if slot is None:
                return None
            n = self.variants.get(concept(slot[1]), 1)
            return (slot[0], f"{concept(slot[1])}.{self.rng.randrange(n)}") if n > 1 else slot

        def np(x: NP | None) -> NP | None:
            if x is None:
                return None
            return replace(x, head=swap(x.head), adjs=tuple(swap(s) for s in x.adjs))

        def clause(c: Clause) -> Clause:
            pp = replace(c.pp, np=np(c.pp.np)) if c.pp else None
            return replace(c, subj=np(c.subj), verb=swap(c.verb), obj=np(c.obj), adv=swap(c.adv), pp=pp)

        return replace(sentence, clauses=tuple(clause(c) for c in sentence.clauses))

    def question(self, clause: Clause, role: str) -> tuple[Sentence, NP]:
        """A question asking for ``role`` (subj | obj | pp) of ``clause``, in situ, and the NP that answers it."""
        who = key("wh", 0) if role != "pp" and self._is_person(clause, role) else key("wh", 1)
        if role == "subj":
            q, answer = replace(clause, subj=NP("wh", (self._id(), who))), clause.subj
        elif role == "obj":
            q, answer = replace(clause, obj=NP("wh", (self._id(), who))), clause.obj
        else:
            q, answer = replace(clause, pp=PP(None, NP("wh", (self._id(), WHERE)))), clause.pp.np
        return Sentence((q,), (), (self._id(), QUESTION)), answer

    @staticmethod
    def _is_person(clause: Clause, role: str) -> bool:
        np = clause.subj if role == "subj" else clause.obj
        return np.kind == "PER"
