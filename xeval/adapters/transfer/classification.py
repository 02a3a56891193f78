"""Sentence-pair classification (XNLI, PAWS-X): fine-tune on English pairs, classify every language.

As XTREME's ``run_classify.py``: the pair is encoded as one input (``[CLS] a [SEP] b [SEP]`` / ``<s> a </s></s> b
</s>``, segment ids where the model has them), truncated longest-first to ``max_length`` (128), and a linear
classifier reads the pooled representation. Pooling follows the model family's own sequence classifier: the
backbone's pre-trained pooler where that classifier reads it (BERT: tanh layer over [CLS], as
``BertForSequenceClassification``), otherwise a fresh dense + tanh over the first token (``RobertaClassificationHead``:
XLM-R, whose ``AutoModel`` carries an untrained pooler that ``XLMRobertaForSequenceClassification`` leaves out, and
engine models, which have none).

Score: accuracy (XTREME's metric for both tasks). Submission layout: one predicted label per line.
"""

from __future__ import annotations

import torch
from torch import nn

from xeval.adapters.transfer import dispatch
from xeval.adapters.transfer.backbone import accepts_token_types, head_init, hidden_dropout, uses_token_types
from xeval.adapters.transfer.base import Family
from xeval.adapters.transfer.fine_tuning import batches
from xeval.adapters.transfer.passes import grouped_cross_entropy
from xeval.base import console
from xeval.base.errors import ConfigError
from xeval.metrics import accuracy
from xeval.results.outcomes import classification_outcomes, example_id


class PairClassifier(nn.Module):
    def __init__(self, backbone: nn.Module, num_labels: int, use_pooler: bool):
        super().__init__()
        self.backbone = backbone
        self.use_pooler = use_pooler
        hidden = backbone.config.hidden_size
        std = getattr(backbone.config, "initializer_range", 0.02)
        self.dropout = nn.Dropout(hidden_dropout(backbone))
        self.dense = None if use_pooler else head_init(nn.Linear(hidden, hidden), std)
        self.classifier = head_init(nn.Linear(hidden, num_labels), std)
        self.token_types = accepts_token_types(backbone)

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None, loss_group=None):
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None and self.token_types else {}
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, return_dict=True, **extra)
        if self.use_pooler:
            pooled = out.pooler_output  # [B, H]: tanh(W h_[CLS] + b), pre-trained with the model
        else:
            pooled = torch.tanh(self.dense(self.dropout(out.last_hidden_state[:, 0])))  # [B, H]
        logits = self.classifier(self.dropout(pooled))  # [B, C]
        if labels is None:
            return (logits,)
        return grouped_cross_entropy(logits, labels, loss_group), logits


# Families whose ``…ForSequenceClassification`` builds the backbone without its pooler and classifies the first
# token through a fresh dense + tanh (``RobertaClassificationHead``), even though ``AutoModel`` adds a pooler.
FIRST_TOKEN_HEAD = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "xmod", "data2vec-text",
                              "roberta-prelayernorm"})


def uses_pooler(backbone: nn.Module) -> bool:
    """Whether the family's own sequence classifier reads the backbone's pooler output (BERT) or not (XLM-R)."""
    model_type = getattr(getattr(backbone, "config", None), "model_type", None)
    return getattr(backbone, "pooler", None) is not None and model_type not in FIRST_TOKEN_HEAD


class PairClassification(Family):
    suffix = "tsv"

    def __init__(self, card, ctx, recipe):
        super().__init__(card, ctx, recipe)
        self.labels: list[str] = list(card.labels or [])
        self.use_pooler = uses_pooler(self.encoder.model)
        self.token_types = uses_token_types(self.encoder.model)

    def setup(self, train_examples: list) -> None:
        if not self.labels:
            self.labels = sorted({ex.label for ex in train_examples if ex.label is not None})
        if len(self.labels) < 2:
            raise ConfigError(f"task {self.card.name!r}: fewer than two labels in the card and training data")
        self.index = {label: i for i, label in enumerate(self.labels)}

    def build_model(self, backbone: nn.Module) -> nn.Module:
        return PairClassifier(backbone, len(self.labels), self.use_pooler)

    def encode(self, examples: list) -> list[dict]:
        """Each pair as one model input, without its label (probe mode reads the frozen encoder through these too)."""
        enc = self.tokenizer([ex.text_a for ex in examples], [ex.text_b for ex in examples], truncation=True,
                             max_length=self.max_length, return_token_type_ids=self.token_types)
        keys = ["input_ids", "attention_mask"] + (["token_type_ids"] if self.token_types else [])
        return [{k: enc[k][i] for k in keys} for i in range(len(examples))]

    def features(self, examples: list) -> list[dict]:
        feats = self.encode(examples)
        for feat, ex in zip(feats, examples):
            if ex.label not in self.index:
                raise ConfigError(f"{ex.source}:{ex.line}: label {ex.label!r} is not one of {', '.join(self.labels)}")
            feat["labels"] = self.index[ex.label]
        return feats

    @torch.inference_mode()
    def predict(self, model: nn.Module, examples: list) -> list[str]:
        model.eval()
        feats = self.encode(examples)
        order = sorted(range(len(feats)), key=lambda i: len(feats[i]["input_ids"]))
        out: list[str | None] = [None] * len(feats)
        size = self.recipe.eval_batch_size
        pad = self.tokenizer.pad_token_id or 0
        for start in console.progress(range(0, len(order), size), desc=f"predict {len(examples)}", unit="batch"):
            idx = order[start : start + size]
            batch = next(batches([feats[i] for i in idx], len(idx), pad))
            logits = model(**{k: v.to(self.encoder.device) for k, v in batch.items()})[0]  # [B, C]
            for i, best in zip(idx, logits.argmax(-1).tolist()):
                out[i] = self.labels[best]
        return out  # type: ignore[return-value]

    def labelled(self, examples) -> bool:
        return all(ex.label is not None for ex in examples)

    def score(self, predictions, examples, lang) -> dict[str, float]:
        gold = [ex.label for ex in examples]
        if any(g is None for g in gold):
            raise ConfigError(f"task {self.card.name!r}: {lang} examples carry no gold labels; cannot score them")
        return accuracy(gold, predictions)

    def warnings(self, predictions, examples) -> list[str]:
        # a fine-tune that collapsed to one class still scores the majority share (PAWS-X at a too-high rate: 56.2,
        # the share of label 0), a number that looks like weak transfer but is no transfer at all
        if len(predictions) >= 20 and len(set(predictions)) == 1:
            return [f"every one of the {len(predictions)} predictions is {predictions[0]!r}: the classifier "
                    "collapsed to one class (its accuracy is that class's share, not transfer)"]
        return []

    def outcomes(self, predictions, examples, lang):
        return classification_outcomes([example_id(ex) for ex in examples], [ex.label for ex in examples],
                                       predictions).with_inputs([[ex.text_a, ex.text_b] for ex in examples])

    def format_predictions(self, predictions, examples) -> str:
        return "".join(f"{p}\n" for p in predictions)

    def format_gold(self, examples) -> str:
        return "".join(f"{ex.label}\n" for ex in examples)

    def config(self) -> dict:
        return {**super().config(), "labels": self.labels, "pooling": "pooler" if self.use_pooler else "first-token",
                "truncation": "longest_first"}


def run(card, langs, ctx):
    return dispatch.run(card, langs, ctx, PairClassification)
