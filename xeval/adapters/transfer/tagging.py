"""Sequence tagging (UD-POS, PAN-X): fine-tune on English, predict every language at word level.

As XTREME's ``run_tag.py``: the first subword of each word carries the word's label, every other subword and the
special tokens carry IGNORE_INDEX (no loss); a word's prediction is the argmax at its first subword.

A sentence longer than the model's limit is split into consecutive windows of whole words and the windows'
predictions are re-joined, so every word is predicted, never truncated. XTREME splits too, before tokenizing for
the model: ``utils_preprocess.py`` (``panx_tokenize_preprocess`` / ``udpos_tokenize_preprocess``) starts a new
piece of the sentence whenever the next word's subwords would pass ``max_len`` minus the special tokens (3 for
XLM-R, else 2), and maps the pieces back with an index file. A single word with more subwords than a window holds
keeps only its first ``max_length - specials`` subwords here, which still include the one that is labelled (XTREME
replaces such a word by the unknown token).

Scores: XTREME's ``f1`` is seqeval's chunk F1 (for POS: runs of equal tags are chunks), plus ``precision``,
``recall``, and for cards that list it ``token_accuracy`` (per-token POS accuracy, NOT what XTREME reports).
Submission layout: one tag per line, a blank line after each sentence (what XTREME's ``read_tag`` reads).
"""

from __future__ import annotations

import torch
from torch import nn

from xeval.adapters.transfer import dispatch
from xeval.adapters.transfer.backbone import head_init, hidden_dropout
from xeval.adapters.transfer.base import Family
from xeval.adapters.transfer.fine_tuning import IGNORE_INDEX, batches
from xeval.adapters.transfer.passes import grouped_cross_entropy
from xeval.base import console
from xeval.base.errors import ConfigError
from xeval.cards.compat import SEP_TOKEN_EXTRA
from xeval.metrics import chunk_scores, token_accuracy
from xeval.results.outcomes import example_id, tagging_outcomes


class Tagger(nn.Module):
    """Backbone + dropout + linear layer over every token (as ``BertForTokenClassification``)."""

    def __init__(self, backbone: nn.Module, num_labels: int):
        super().__init__()
        self.backbone = backbone
        self.dropout = nn.Dropout(hidden_dropout(backbone))
        std = getattr(backbone.config, "initializer_range", 0.02)
        self.classifier = head_init(nn.Linear(backbone.config.hidden_size, num_labels), std)

    def forward(self, input_ids, attention_mask, labels=None, loss_group=None):
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # [B, T, C]
        if labels is None:
            return (logits,)
        # the mean over each micro-batch's labelled tokens (several share a pass: xeval.adapters.transfer.passes)
        return grouped_cross_entropy(logits, labels, loss_group, IGNORE_INDEX), logits


def word_windows(counts: list[int], budget: int) -> list[tuple[int, int]]:
    """Consecutive word spans [start, end) whose subword counts sum to at most ``budget`` (a word longer than the
    budget gets a span of its own).

    >>> word_windows([1, 2, 1, 3, 1], 4)
    [(0, 3), (3, 5)]
    >>> word_windows([5, 1], 4)
    [(0, 1), (1, 2)]
    """
    windows: list[tuple[int, int]] = []
    start, used = 0, 0
    for i, count in enumerate(counts):
        if i > start and used + count > budget:
            windows.append((start, i))
            start, used = i, 0
        used += count
    if counts:
        windows.append((start, len(counts)))
    return windows


class Tagging(Family):
    suffix = "tsv"

    def __init__(self, card, ctx, recipe):
        super().__init__(card, ctx, recipe)
        self.labels: list[str] = list(card.labels or [])
        self.specials = self.tokenizer.num_special_tokens_to_add(pair=False)
        # --compat xtreme: XTREME's utils_tag.py closes a RoBERTa-style window with </s></s> (sep_token_extra)
        model_type = getattr(getattr(self.encoder.model, "config", None), "model_type", None)
        self.extra_sep = self.compat == "xtreme" and model_type in SEP_TOKEN_EXTRA and self.tokenizer.sep_token_id is not None
        self.specials += int(self.extra_sep)
        if self.max_length <= self.specials:
            raise ConfigError(f"max_length {self.max_length} leaves no room for words next to special tokens")

    def setup(self, train_examples: list) -> None:
        if not self.labels:  # no label set in the card: the training tags, sorted (a fixed order per data)
            self.labels = sorted({t for ex in train_examples for t in (ex.tags or [])})
        if not self.labels:
            raise ConfigError(f"task {self.card.name!r}: the training data carries no tags")
        self.index = {label: i for i, label in enumerate(self.labels)}

    def build_model(self, backbone: nn.Module) -> nn.Module:
        return Tagger(backbone, len(self.labels))

    # ------------------------------------------------------------------ windows

    def _words(self, sentences: list[list[str]]) -> tuple[list[list[str]], list[list[int]]]:
        """The words as the model sees them, and the number of subwords of each.

        A word the tokenizer maps to no subword at all (whitespace, or a zero-width / format character such as
        U+200B, U+200F, U+FEFF that the normaliser deletes; the UD treebanks have them) would lose its label in
        training and its prediction at test time. XTREME's ``utils_tag.py`` tokenizes such a word as the unknown
        token, and so do we: the word is replaced by ``unk_token`` and labelled / predicted there.
        """
        words = [list(s) for s in sentences]
        counts = [[0] * len(s) for s in words]
        nonempty = [i for i, s in enumerate(words) if s]
        if nonempty:
            enc = self.tokenizer([words[i] for i in nonempty], is_split_into_words=True, add_special_tokens=False,
                                 verbose=False)
            for row, i in enumerate(nonempty):
                for w in enc.word_ids(row):
                    if w is not None:
                        counts[i][w] += 1
        unk = self.tokenizer.unk_token or "_"
        for s, c in zip(words, counts):
            for w in range(len(s)):
                if c[w] == 0:
                    s[w], c[w] = unk, self._unk_length(unk)
        return words, counts

    def _unk_length(self, unk: str) -> int:
        """Subwords of the unknown token as a word (1; at least 1 so the word keeps a slot in its window)."""
        if not hasattr(self, "_unk_len"):
            ids = self.tokenizer([[unk]], is_split_into_words=True, add_special_tokens=False)["input_ids"][0]
            self._unk_len = max(1, len(ids))
        return self._unk_len

    def windows(self, sentences: list[list[str]]) -> list[tuple[int, int, int]]:
        """(sentence index, first word, end word) of every window of every sentence."""
        _, counts = self._words(sentences)
        budget = self.max_length - self.specials
        return [(i, s, e) for i, c in enumerate(counts) for s, e in word_windows(c, budget)]

    def encode(self, sentences: list[list[str]], spans: list[tuple[int, int, int]]):
        """The model inputs of the word windows ``spans`` (``windows``) and, per window, each token's word index in
        the window (None for special tokens). Probe mode reads the frozen encoder through these too."""
        prepared, _ = self._words(sentences)
        words = [prepared[i][s:e] for i, s, e in spans]
        enc = self.tokenizer(words, is_split_into_words=True, truncation=True,
                             max_length=self.max_length - int(self.extra_sep))
        word_ids = [enc.word_ids(k) for k in range(len(spans))]
        if self.extra_sep:
            for k in range(len(spans)):
                enc["input_ids"][k].append(self.tokenizer.sep_token_id)
                enc["attention_mask"][k].append(1)
                word_ids[k].append(None)
        return enc, word_ids

    @staticmethod
    def first_subwords(word_ids: list[int | None]) -> list[int]:
        """Token positions of the first subword of each word, in word order."""
        firsts, previous = [], None
        for t, w in enumerate(word_ids):
            if w is not None and w != previous:
                firsts.append(t)
            previous = w
        return firsts

    # ------------------------------------------------------------------ training and prediction

    def features(self, examples: list) -> list[dict]:
        sentences = [ex.tokens for ex in examples]
        spans = self.windows(sentences)
        enc, word_ids = self.encode(sentences, spans)
        out = []
        for k, (i, s, _e) in enumerate(spans):
            tags = examples[i].tags
            if tags is None:
                raise ConfigError(f"{examples[i].source}:{examples[i].line}: training sentence has no tags")
            labels = [IGNORE_INDEX] * len(word_ids[k])
            for t in self.first_subwords(word_ids[k]):
                tag = tags[s + word_ids[k][t]]
                if tag not in self.index:  # XTREME fails here too (label_map[label]); never train around it
                    raise ConfigError(f"{examples[i].source}:{examples[i].line}: tag {tag!r} is not one of "
                                      f"{', '.join(self.labels)} (the task's label set)")
                labels[t] = self.index[tag]
            out.append({"input_ids": enc["input_ids"][k], "attention_mask": enc["attention_mask"][k], "labels": labels})
        return out

    @torch.inference_mode()
    def predict(self, model: nn.Module, examples: list) -> list[list[str]]:
        model.eval()
        sentences = [ex.tokens for ex in examples]
        spans = self.windows(sentences)
        enc, word_ids = self.encode(sentences, spans)
        feats = [{"input_ids": enc["input_ids"][k], "attention_mask": enc["attention_mask"][k]}
                 for k in range(len(spans))]
        order = sorted(range(len(spans)), key=lambda k: len(feats[k]["input_ids"]))  # less padding
        predicted: list[dict[int, str]] = [{} for _ in spans]  # per window: word (in window) -> tag
        pad = self.tokenizer.pad_token_id or 0
        size = self.recipe.eval_batch_size
        for start in console.progress(range(0, len(order), size), desc=f"predict {len(examples)}", unit="batch"):
            idx = order[start : start + size]
            batch = next(batches([feats[k] for k in idx], len(idx), pad))
            logits = model(**{k: v.to(self.encoder.device) for k, v in batch.items()})[0]  # [B, T, C]
            best = logits.argmax(-1).cpu().tolist()
            for row, k in enumerate(idx):
                predicted[k] = {word_ids[k][t]: self.labels[best[row][t]] for t in self.first_subwords(word_ids[k])}
        fallback = "O" if "O" in self.index else self.labels[0]  # a word that kept no subword at all (rare)
        out: list[list[str]] = [[] for _ in sentences]
        for k, (i, s, e) in enumerate(spans):  # spans are in sentence order, windows left to right
            out[i].extend(predicted[k].get(w, fallback) for w in range(e - s))
        return out

    def labelled(self, examples) -> bool:
        return all(ex.tags is not None for ex in examples)

    def score(self, predictions, examples, lang) -> dict[str, float]:
        gold = [ex.tags for ex in examples]
        if any(g is None for g in gold):
            raise ConfigError(f"task {self.card.name!r}: {lang} examples carry no gold tags; cannot score them")
        # --compat xtreme: seqeval 0.0.x's chunk types (CCONJ and SCONJ distinct), as XTREME's 2020 numbers
        metrics = dict(chunk_scores(gold, predictions, legacy_types=self.compat == "xtreme"))
        if "token_accuracy" in (self.card.metrics or []):
            metrics.update(token_accuracy(gold, predictions))
        return metrics

    def outcomes(self, predictions, examples, lang):
        return tagging_outcomes([example_id(ex) for ex in examples], [ex.tags for ex in examples],
                                predictions).with_inputs([list(ex.tokens) for ex in examples])

    @staticmethod
    def _tsv(sentences: list[list[str]]) -> str:
        return "".join("".join(f"{t}\n" for t in tags) + "\n" for tags in sentences)

    def format_predictions(self, predictions, examples) -> str:
        return self._tsv(predictions)

    def format_gold(self, examples) -> str:
        return self._tsv([ex.tags or [] for ex in examples])

    def config(self) -> dict:
        return {**super().config(), "labels": self.labels, "label_subword": "first", "long_inputs": "word windows",
                "chunk_types": "seqeval 0.0.x (whole tag)" if self.compat == "xtreme" else "seqeval 1.x",
                **({"window_end": "</s></s>"} if self.extra_sep else {})}


def run(card, langs, ctx):
    return dispatch.run(card, langs, ctx, Tagging)
