"""What the fine-tuning families build their models from: a fresh trainable copy of the encoder's backbone, task
heads initialised as Hugging Face initialises them, and what inputs and dropout the backbone takes."""

from __future__ import annotations

import copy
import inspect

from torch import nn


def head_init(module: nn.Linear, std: float = 0.02) -> nn.Linear:
    """Initialise a task head as Hugging Face initialises BERT/XLM-R heads (normal(0, 0.02), zero bias)."""
    nn.init.normal_(module.weight, mean=0.0, std=std)
    nn.init.zeros_(module.bias)
    return module


def backbone_copy(encoder) -> nn.Module:
    """A fresh trainable copy of the encoder's backbone: every seed starts from the same pre-trained weights."""
    model = copy.deepcopy(encoder.model)
    # Weights the checkpoint lacks were drawn from the global RNG when the model loaded, so they would change with
    # whatever ran before in the process; draw them again from the unit's seed (train_model seeds just before), as
    # transformers initialises BERT's linear layers: normal(0, initializer_range), zero bias.
    missing = set(getattr(encoder, "missing_weights", ()))
    std = getattr(model.config, "initializer_range", 0.02)
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and f"{name}.weight" in missing:
            head_init(module, std)
    model.train()
    for param in model.parameters():
        param.requires_grad_(True)
    return model


def accepts_token_types(backbone: nn.Module) -> bool:
    return "token_type_ids" in inspect.signature(backbone.forward).parameters


def uses_token_types(backbone: nn.Module) -> bool:
    """Whether pair inputs should carry segment ids: the model takes them and has more than one segment
    embedding (BERT: 2; XLM-R: 1, so none are passed, as its own tokenizer does)."""
    return accepts_token_types(backbone) and int(getattr(backbone.config, "type_vocab_size", 0) or 0) > 1


def hidden_dropout(backbone: nn.Module) -> float:
    """The head's dropout, as ``BertForTokenClassification`` / ``…ForSequenceClassification`` take it: the config's
    ``classifier_dropout`` when set, else its hidden dropout (0.0 included: a model trained without dropout keeps
    none), 0.1 when the config names neither."""
    config = getattr(backbone, "config", None)
    for name in ("classifier_dropout", "hidden_dropout_prob", "dropout"):
        value = getattr(config, name, None)
        if value is not None:
            return float(value)
    return 0.1

