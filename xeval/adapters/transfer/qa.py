"""Extractive QA (XQuAD, MLQA, TyDiQA-GoldP): fine-tune on English SQuAD-style data, answer every language.

Windows as XTREME's ``run_squad.py`` (transformers' ``squad_convert_examples_to_features``): the question is cut to
``max_query_length`` (64) tokens; the context is covered by windows of ``max_length - question - specials``
tokens whose starts are ``doc_stride`` (128) tokens apart; a training window that does not contain the answer
points at [CLS]. Decoding as its ``compute_predictions_logits`` (``xeval.adapters.transfer.spans``): in every
window the ``n_best_size`` (20) best start and end positions, kept when both lie in the context, end >= start, the
span is at most ``max_answer_length`` (30) tokens and the start token has its "max context" in this window (the
window where it has the most context on its shorter side); the best start + end logit over all windows wins.

What differs, on purpose: the answer text is cut from the ORIGINAL context by the tokenizer's character offsets
(``offset_mapping``) of the start and end tokens. XTREME maps tokens back to whitespace-separated words and then
calls ``get_final_text``, which re-tokenises and aligns strings and fails on text without spaces between words
(Chinese, Thai, Japanese): it returns whole "words" (often a full clause) instead of the predicted span. Offsets
make the answer exactly the predicted characters in every script. An example with no valid span answers "".

Scores: SQuAD v1.1 EM/F1 for XQuAD and TyDiQA-GoldP, MLQA's own normalisation for MLQA (``xeval.metrics``).
Submission layout: ``{"question id": "answer text"}`` JSON; gold written as SQuAD v1.1 JSON.
"""

from __future__ import annotations

import json
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch import nn

from xeval.adapters.transfer import dispatch
from xeval.adapters.transfer.backbone import accepts_token_types, head_init, uses_token_types
from xeval.adapters.transfer.base import Family
from xeval.adapters.transfer.fine_tuning import batches
from xeval.adapters.transfer.passes import group_means
from xeval.adapters.transfer.spans import Window, answer_span, best_span, mark_max_context, token_span
from xeval.base import console
from xeval.base.errors import ConfigError
from xeval.cards.compat import xtreme_answer
from xeval.data.squad_json import is_label_free
from xeval.metrics import gold_answers, mlqa, mlqa_scores, squad, squad_scores
from xeval.metrics.xtreme import XTREME
from xeval.results.outcomes import qa_outcomes


class SpanExtractor(nn.Module):
    """Backbone + one linear layer giving start and end logits per token (as ``BertForQuestionAnswering``)."""

    def __init__(self, backbone: nn.Module):
        super().__init__()
        self.backbone = backbone
        std = getattr(backbone.config, "initializer_range", 0.02)
        self.qa_outputs = head_init(nn.Linear(backbone.config.hidden_size, 2), std)
        self.token_types = accepts_token_types(backbone)

    def forward(self, input_ids, attention_mask, token_type_ids=None, start_positions=None, end_positions=None,
                loss_group=None):
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None and self.token_types else {}
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, return_dict=True, **extra)
        logits = self.qa_outputs(out.last_hidden_state)  # [B, T, 2]
        start, end = logits[..., 0], logits[..., 1]  # [B, T] each
        if start_positions is None:
            return (start, end)
        # several micro-batches in one pass (xeval.adapters.transfer.passes): the softmax over positions runs over
        # padding too (as BertForQuestionAnswering's), so each micro-batch is scored at the width it would have
        # alone (its own longest); one micro-batch keeps the whole width, exactly as before passes
        lengths = attention_mask.sum(dim=1)

        def mean(a: int, b: int) -> torch.Tensor:
            if (a, b) == (0, start.size(0)):
                return span_loss(start, end, start_positions, end_positions)
            width = int(lengths[a:b].max())
            return span_loss(start[a:b, :width], end[a:b, :width], start_positions[a:b], end_positions[a:b])

        return group_means(start.size(0), loss_group, mean), start, end


def span_loss(start: torch.Tensor, end: torch.Tensor, start_positions: torch.Tensor,
              end_positions: torch.Tensor) -> torch.Tensor:
    """``BertForQuestionAnswering``'s loss: the mean of the start and end cross-entropies over every position of
    the input, padding included; positions outside the input are ignored. start, end [B, T]; positions [B]."""
    width = start.size(1)
    return (F.cross_entropy(start, start_positions.clamp(0, width), ignore_index=width)
            + F.cross_entropy(end, end_positions.clamp(0, width), ignore_index=width)) / 2


class QA(Family):
    suffix = "json"
    # run_squad.py keeps the last weights; 384-token windows: prediction batches of 64 bound the attention memory
    defaults = {"select": "last", "max_length": 384, "learning_rate": 3e-5, "eval_batch_size": 64}

    def __init__(self, card, ctx, recipe):
        super().__init__(card, ctx, recipe)
        self.pair_specials = self.tokenizer.num_special_tokens_to_add(pair=True)
        self.token_types = uses_token_types(self.encoder.model)
        spec = XTREME.tasks.get(card.name)
        self.normalisation = spec.metric if spec is not None and spec.metric in ("squad", "mlqa") else "squad"

    def build_model(self, backbone: nn.Module) -> nn.Module:
        return SpanExtractor(backbone)

    # ------------------------------------------------------------------ windows

    def _questions(self, examples: list) -> list[str]:
        """Questions cut to ``max_query_length`` tokens (cut on the character offset of the last kept token)."""
        texts = [ex.question.lstrip() for ex in examples]  # leading spaces break some tokenizers' offsets
        enc = self.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        limit = self.recipe.max_query_length
        return [t if len(offs) <= limit else t[: offs[limit - 1][1]] for t, offs in zip(texts, enc["offset_mapping"])]

    def windows(self, examples: list) -> list[Window]:
        """Every window of every example, in example order (windows of one example left to right)."""
        questions = self._questions(examples)
        q_lens = [len(ids) for ids in self.tokenizer(questions, add_special_tokens=False)["input_ids"]]
        by_stride: dict[int, list[int]] = defaultdict(list)
        for i, q_len in enumerate(q_lens):
            budget = self.max_length - q_len - self.pair_specials
            if budget < 1:
                raise ConfigError(f"max_length {self.max_length} leaves no room for context after a question of "
                                  f"{q_len} tokens; raise max_length or lower max_query_length")
            # the tokenizer's ``stride`` is the OVERLAP of consecutive windows; XTREME's doc_stride is the step
            by_stride[budget - min(budget, self.recipe.doc_stride)].append(i)
        out: list[Window] = []
        for stride, idx in by_stride.items():
            enc = self.tokenizer(
                [questions[i] for i in idx], [examples[i].context for i in idx], truncation="only_second",
                max_length=self.max_length, stride=stride, return_overflowing_tokens=True,
                return_offsets_mapping=True, return_token_type_ids=self.token_types,
            )
            seen: dict[int, int] = defaultdict(int)  # windows so far per example
            for w, row in enumerate(enc["overflow_to_sample_mapping"]):
                seq = enc.sequence_ids(w)
                offsets = [tuple(o) if s == 1 else None for o, s in zip(enc["offset_mapping"][w], seq)]
                # consecutive windows start ``budget - overlap`` context tokens apart (XTREME's doc_stride)
                step = self.max_length - q_lens[idx[row]] - self.pair_specials - stride
                out.append(Window(idx[row], enc["input_ids"][w], enc["attention_mask"][w],
                                  enc["token_type_ids"][w] if self.token_types else None, offsets, [],
                                  context_start=seen[row] * step))
                seen[row] += 1
        out.sort(key=lambda win: win.example)  # stable: windows of one example stay left to right
        mark_max_context(out)
        return out

    # ------------------------------------------------------------------ training

    def features(self, examples: list) -> list[dict]:
        out = []
        for win in self.windows(examples):
            span = answer_span(examples[win.example])
            if span is None:
                continue  # no answer found in the context: skipped, as run_squad.py does
            start, end = token_span(win.offsets, *span)
            feat = {"input_ids": win.input_ids, "attention_mask": win.attention_mask,
                    "start_positions": start, "end_positions": end}
            if win.token_type_ids is not None:
                feat["token_type_ids"] = win.token_type_ids
            out.append(feat)
        if not out:
            raise ConfigError(f"task {self.card.name!r}: no training example has an answer in its context")
        return out

    # ------------------------------------------------------------------ prediction

    @torch.inference_mode()
    def predict(self, model: nn.Module, examples: list) -> list[str]:
        model.eval()
        wins = self.windows(examples)
        feats = [{"input_ids": w.input_ids, "attention_mask": w.attention_mask,
                  **({"token_type_ids": w.token_type_ids} if w.token_type_ids is not None else {})} for w in wins]
        best: dict[int, tuple[float, str]] = {}
        size = self.recipe.eval_batch_size
        pad = self.tokenizer.pad_token_id or 0
        for start in console.progress(range(0, len(wins), size), desc=f"predict {len(examples)}", unit="batch"):
            chunk = list(range(start, min(start + size, len(wins))))
            batch = next(batches([feats[k] for k in chunk], len(chunk), pad))
            starts, ends = model(**{k: v.to(self.encoder.device) for k, v in batch.items()})
            for row, k in enumerate(chunk):
                n = len(wins[k].input_ids)
                found = best_span(wins[k], starts[row, :n].tolist(), ends[row, :n].tolist(),
                                  self.recipe.n_best_size, self.recipe.max_answer_length)
                if found is not None:
                    ex = wins[k].example
                    score, (a, b), (s, e) = found
                    if ex not in best or score > best[ex][0]:
                        best[ex] = (score, self._answer(wins[k], examples[ex].context, a, b, s, e))
        return [best[i][1] if i in best else "" for i in range(len(examples))]

    def _answer(self, win: Window, context: str, a: int, b: int, s: int, e: int) -> str:
        """The answer text of a predicted span: its characters (default), or under ``--compat xtreme`` what XTREME's
        ``get_final_text`` makes of its tokens and the whitespace words they touch (``xeval.cards.compat``)."""
        if self.compat != "xtreme":
            return context[a:b]
        return xtreme_answer(self.tokenizer, win.input_ids[s : e + 1], context, a, b)

    def labelled(self, examples) -> bool:
        return not is_label_free(examples)

    def score(self, predictions, examples, lang) -> dict[str, float]:
        gold = gold_answers(examples)
        if any(not answers for answers in gold.values()):
            raise ConfigError(f"task {self.card.name!r}: {lang} questions without gold answers; cannot score them")
        answers = {ex.id: p for ex, p in zip(examples, predictions)}
        if self.normalisation == "mlqa":
            return mlqa_scores(answers, gold, lang)
        return squad_scores(answers, gold)

    def outcomes(self, predictions, examples, lang):
        golds = [[a.text for a in ex.answers] for ex in examples]
        if self.normalisation == "mlqa":
            scores = [mlqa.example_scores(p, g, lang) for p, g in zip(predictions, golds)]
        else:
            scores = [squad.example_scores(p, g) for p, g in zip(predictions, golds)]
        return qa_outcomes([ex.id for ex in examples], golds, predictions, [em for em, _ in scores],
                           [f for _, f in scores]).with_inputs([{"question": ex.question, "context": ex.context}
                                                                for ex in examples])

    def format_predictions(self, predictions, examples) -> str:
        return json.dumps({ex.id: p for ex, p in zip(examples, predictions)}, ensure_ascii=False, indent=1) + "\n"

    def format_gold(self, examples) -> str:
        data = [{"title": ex.title, "paragraphs": [{"context": ex.context, "qas": [
            {"id": ex.id, "question": ex.question,
             "answers": [{"text": a.text, "answer_start": a.start} for a in ex.answers]}]}]} for ex in examples]
        return json.dumps({"version": "1.1", "data": data}, ensure_ascii=False) + "\n"

    def config(self) -> dict:
        r = self.recipe
        return {**super().config(), "doc_stride": r.doc_stride, "max_query_length": r.max_query_length,
                "max_answer_length": r.max_answer_length, "n_best_size": r.n_best_size,
                "normalisation": self.normalisation,
                "answer_text": "get_final_text (--compat xtreme)" if self.compat == "xtreme" else "character offsets",
                **({"do_lower_case": bool(getattr(self.tokenizer, "do_lower_case", False))}
                   if self.compat == "xtreme" else {})}

    def training_config(self, selects_on_dev: bool) -> dict:
        # answer normalisation, answer text and the n-best search only score and predict: without dev selection
        # they leave the weights alone, so XQuAD (SQuAD normalisation) and MLQA (its own) can share one model
        if selects_on_dev:
            return self.config()
        prediction_only = ("normalisation", "answer_text", "n_best_size", "max_answer_length", "do_lower_case")
        return {k: v for k, v in self.config().items() if k not in prediction_only}


def run(card, langs, ctx):
    return dispatch.run(card, langs, ctx, QA)
