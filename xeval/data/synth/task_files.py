"""Every artefact of a synthetic world, as ``{relative path: bytes}``.

Evaluation sets are *parallel*: one list of abstract examples realised in every language (like XNLI or
XQuAD), so differences between languages come from the languages alone. Training sets are in the base
language only (zero-shot transfer). No evaluation sentence occurs in the pre-training corpora or in a
training set (checked on the base-language realisation of the abstract sentence).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from xeval.data.synth import formats
from xeval.data.synth.grammar import NP, Clause, Sampler, Sentence, Token, alignment, realise, text
from xeval.data.synth.words import NAME_CATEGORIES, STOP, category, concept
from xeval.data.synth.world import World, rng

Files = dict[str, bytes]
SPLITS = ("dev", "test")


def _distinct(draw: Callable[[], Sentence], n: int, world: World, seen: set[str]) -> list[Sentence]:
    """``n`` abstract sentences whose base-language text is new to ``seen`` (which they are added to)."""
    out: list[Sentence] = []
    tries = 0
    while len(out) < n:
        sentence = draw()
        key = text(realise(sentence, world.base))
        tries += 1
        if key in seen:
            if tries > 50 * (n + 10):
                raise RuntimeError("synthetic world too small for the requested number of distinct sentences")
            continue
        seen.add(key)
        out.append(sentence)
    return out


def corpora(world: World, seen: set[str]) -> Files:
    """monolingual/<lang>.txt.gz (one sentence a line) and parallel/<base>-<lang>.tsv.gz."""
    files: Files = {}
    base = world.base
    for lang in world.languages:
        sampler = world.sampler("mono", lang.code)
        rows = []
        for _ in range(world.config.sizes.mono):
            sentence = sampler.sentence()
            rows.append(text(realise(sentence, lang)))
            seen.add(rows[-1] if lang is base else text(realise(sentence, base)))
        files[f"monolingual/{lang.code}.txt.gz"] = formats.gzipped(formats.lines(rows))
    for lang in world.derived:
        sampler = world.sampler("parallel", lang.code)
        pairs = []
        for _ in range(world.config.sizes.parallel):
            sentence = sampler.sentence()
            pairs.append((text(realise(sentence, base)), text(realise(sentence, lang))))
            seen.add(pairs[-1][0])
        files[f"parallel/{base.code}-{lang.code}.tsv.gz"] = formats.parallel_tsv_gz(base.code, lang.code, pairs)
    return files


def tagging(world: World, seen: set[str]) -> Files:
    """udpos/ (UPOS tags) and panx/ (IOB2 PER/ORG/LOC tags): train-<base>.tsv, dev-/test-<lang>.tsv."""
    files: Files = {}
    sizes = world.config.sizes
    for task, field, entity_rate in (("udpos", "upos", 0.3), ("panx", "ner", 0.7)):
        sampler = world.sampler(task)

        def draw(sampler: Sampler = sampler, entity_rate: float = entity_rate, task: str = task) -> Sentence:
            while True:
                sentence = sampler.sentence(entity_rate)
                if task == "udpos" or any(t.ner != "O" for t in realise(sentence, world.base)):
                    return sentence

        train = _distinct(draw, sizes.train, world, seen)
        files[f"{task}/train-{world.base.code}.tsv"] = formats.tagging_tsv([realise(s, world.base) for s in train], field)
        for split in SPLITS:
            sentences = _distinct(draw, getattr(sizes, split), world, seen)
            for lang in world.languages:
                realised = [realise(s, lang) for s in sentences]
                files[f"{task}/{split}-{lang.code}.tsv"] = formats.tagging_tsv(realised, field)
    files["panx/labels.txt"] = formats.lines(["B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER", "O"])
    return files


def _variation(sampler: Sampler, sentence: Sentence) -> Sentence:
    """A meaning-preserving change of surface: synonyms redrawn, and half the time the PP moved."""
    sentence = sampler.synonyms(sentence)
    clause = sentence.clauses[0]
    if clause.pp and sampler.rng.random() < 0.5:
        sentence = replace(sentence, clauses=(replace(clause, front=not clause.front),))
    return sentence


def _changed_argument(sampler: Sampler, sentence: Sentence) -> Sentence:
    """A different meaning with (mostly) the same words: subject and object swapped, or the object replaced by
    another of the same length (so sentence length never gives the label away)."""
    clause = sentence.clauses[0]
    subj_words = [s[1] for s in clause.subj.slots()]
    obj_words = [concept(s[1]) for s in clause.obj.slots()]
    if subj_words != [s[1] for s in clause.obj.slots()] and sampler.rng.random() < 0.7:
        changed = replace(clause, subj=clause.obj, obj=clause.subj)
    else:
        while True:
            new = sampler.np(0.5)
            words = [concept(s[1]) for s in new.slots()]
            if len(words) == len(obj_words) and words != obj_words:
                break
        changed = replace(clause, obj=new)
    return replace(sentence, clauses=(changed,))


def _pair(sampler: Sampler, label: int, world: World) -> tuple[Sentence, Sentence]:
    while True:
        first = Sentence((sampler.clause(0.5, transitive=True),), (), (sampler._id(), STOP))
        second = _variation(sampler, first if label else _changed_argument(sampler, first))
        if text(realise(first, world.base)) != text(realise(second, world.base)):
            return (first, second) if sampler.rng.random() < 0.5 else (second, first)


def pairs(world: World) -> Files:
    """pawsx/: paraphrase (1) vs changed-argument (0) pairs, balanced, train-<base>.tsv and dev-/test-<lang>.tsv."""
    files: Files = {}
    sampler = world.sampler("pawsx")
    for split in ("train", *SPLITS):
        n = getattr(world.config.sizes, split)
        labels = [i % 2 for i in range(n)]
        sampler.rng.shuffle(labels)
        examples = [(_pair(sampler, label, world), str(label)) for label in labels]
        for lang in world.languages if split != "train" else [world.base]:
            rows = [(text(realise(a, lang)), text(realise(b, lang)), label) for (a, b), label in examples]
            files[f"pawsx/{split}-{lang.code}.tsv"] = formats.pairs_tsv(rows)
    return files


def _paragraph(sampler: Sampler) -> list[Sentence]:
    """3-5 one-clause sentences with distinct verbs, so every question has exactly one answer."""
    n = sampler.rng.randint(3, 5)
    transitive = [sampler.rng.random() < 0.8 for _ in range(n)]
    verbs = {
        True: sampler.rng.sample(range(sampler.counts["vt"]), n),
        False: sampler.rng.sample(range(sampler.counts["vi"]), n),
    }
    clauses = [sampler.clause(0.6, transitive=t, verb=verbs[t][i]) for i, t in enumerate(transitive)]
    return [Sentence((c,), (), (sampler._id(), STOP)) for c in clauses]


def _questions(sampler: Sampler, paragraph: list[Sentence], n: int) -> list[tuple[int, Sentence, NP]]:
    """(sentence index, question, answer NP) for ``n`` distinct (sentence, role) targets."""
    targets = [(i, role) for i, s in enumerate(paragraph) for role in ("subj", "obj", "pp") if _has(s.clauses[0], role)]
    out = []
    for i, role in sampler.rng.sample(targets, min(n, len(targets))):
        question, answer = sampler.question(paragraph[i].clauses[0], role)
        out.append((i, sampler.synonyms(question), answer))
    return out


def _has(clause: Clause, role: str) -> bool:
    return {"subj": True, "obj": clause.obj is not None, "pp": clause.pp is not None}[role]


def _squad(items: list[tuple[list[Sentence], list[tuple[int, Sentence, NP]]]], lang, split: str) -> bytes:
    articles = []
    for p, (paragraph, questions) in enumerate(items):
        realised = [realise(s, lang) for s in paragraph]
        offsets = [0]
        for tokens in realised:
            offsets.append(offsets[-1] + len(text(tokens)) + 1)
        context = " ".join(text(tokens) for tokens in realised)
        qas = []
        for q, (i, question, answer) in enumerate(questions):
            start, span = _span(realised[i], answer)
            qas.append({
                "answers": [{"answer_start": offsets[i] + start, "text": span}],
                "id": f"synth-{split}-{p:05d}-{q}",
                "question": text(realise(question, lang)),
            })  # fmt: skip
        articles.append({"title": f"synth_{split}_{p:05d}", "paragraphs": [{"context": context, "qas": qas}]})
    return formats.squad_json(articles)


def _span(tokens: list[Token], answer: NP) -> tuple[int, str]:
    """Character offset and text of the answer NP's words (contiguous in every language) in one sentence."""
    nodes = {slot[0] for slot in answer.slots()}
    where = [i for i, t in enumerate(tokens) if t.node in nodes]
    assert where == list(range(where[0], where[-1] + 1)), "answer words not contiguous"
    start = len(text(tokens[: where[0]])) + (1 if where[0] else 0)
    return start, text(tokens[where[0] : where[-1] + 1])


def qa(world: World) -> Files:
    """qa/: SQuAD-format extractive QA over generated facts; train-<base>.json, dev-/test-<lang>.json.
    Sizes count questions (about 2 per paragraph)."""
    files: Files = {}
    sampler = world.sampler("qa")
    for split in ("train", *SPLITS):
        n, items = getattr(world.config.sizes, split), []
        while n > 0:
            paragraph = _paragraph(sampler)
            questions = _questions(sampler, paragraph, min(n, sampler.rng.randint(1, 3)))
            items.append((paragraph, questions))
            n -= len(questions)
        for lang in world.languages if split != "train" else [world.base]:
            files[f"qa/{split}-{lang.code}.json"] = _squad(items, lang, split)
    return files


def retrieval_and_alignment(world: World, seen: set[str]) -> Files:
    """tatoeba/tatoeba.<lang>-<base>.{<lang>,<base>} (line i translates line i) and
    word_alignment/<lang>-<base>.{src-tgt,gold} (src = the derived language, 1-based gold)."""
    files: Files = {}
    base = world.base
    for lang in world.derived:
        sampler = world.sampler("tatoeba", lang.code)
        sentences = _distinct(sampler.sentence, world.config.sizes.tatoeba, world, seen)
        stem = f"tatoeba/tatoeba.{lang.code}-{base.code}"
        files[f"{stem}.{lang.code}"] = formats.lines([text(realise(s, lang)) for s in sentences])
        files[f"{stem}.{base.code}"] = formats.lines([text(realise(s, base)) for s in sentences])

        sampler = world.sampler("alignment", lang.code)
        sentences = _distinct(sampler.sentence, world.config.sizes.alignment, world, seen)
        pairs = [(realise(s, lang), realise(s, base)) for s in sentences]
        files[f"word_alignment/{lang.code}-{base.code}.src-tgt"] = formats.alignment_text(pairs)
        files[f"word_alignment/{lang.code}-{base.code}.gold"] = formats.alignment_gold([alignment(a, b) for a, b in pairs])
    return files


def dictionaries(world: World) -> Files:
    """dictionaries/<base>-<lang>.txt: every word lexeme's translations (synonyms cross), MUSE style; and a
    .train/.test split of the open-class concepts (80/20, by concept) for lexicon induction."""
    files: Files = {}
    words = [k for k in world.keys if category(k) not in ("punct", "suf")]
    by_concept: dict[str, list[str]] = {}
    for k in words:
        by_concept.setdefault(concept(k), []).append(k)
    open_class = [c for c in by_concept if category(c) in ("noun", "adj", "vt", "vi", "adv", *NAME_CATEGORIES)]
    test = set(rng(world.config.seed, "dictionary-split").sample(open_class, len(open_class) // 5))
    for lang in world.derived:
        entries = {"all": [], "train": [], "test": []}
        for c, lexemes in by_concept.items():
            rows = [(world.base.forms[a], lang.forms[b]) for a in lexemes for b in lexemes]
            entries["all"] += rows
            if c in open_class:
                entries["test" if c in test else "train"] += rows
        stem = f"dictionaries/{world.base.code}-{lang.code}"
        files[f"{stem}.txt"] = formats.dictionary(entries["all"])
        files[f"{stem}.train.txt"] = formats.dictionary(entries["train"])
        files[f"{stem}.test.txt"] = formats.dictionary(entries["test"])
    return files


def all_files(world: World) -> Files:
    seen: set[str] = set()
    files: Files = {}
    files.update(corpora(world, seen))  # first: evaluation sets must avoid the corpora
    files.update(tagging(world, seen))
    files.update(retrieval_and_alignment(world, seen))
    files.update(pairs(world))
    files.update(qa(world))
    files.update(dictionaries(world))
    return files
