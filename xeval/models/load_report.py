"""transformers' loading report, said in one line where it matters.

``AutoModel.from_pretrained`` logs a multi-line "LOAD REPORT" table whenever a checkpoint's weights and the backbone
differ in any way, most often for heads that do not matter to an encoder: the pre-training heads a checkpoint
carries and ``AutoModel`` drops (``cls.*``, ``lm_head.*``, an ELECTRA generator), or a pooler the checkpoint never
had (sentence-transformers folders such as multilingual-e5 or MiniLM; ``AutoModel`` initialises it at random, as
``BertForSequenceClassification`` would). ``quiet_report`` drops that table; ``unexpected_line`` turns what is left,
weights missing or unused *outside* those known heads (a renamed layer, a truncated file), into one warning line of
xeval's. Mismatched shapes and conversion errors are left to transformers: it prints its table and raises.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections import Counter

# Weights an encoder backbone may lack in a checkpoint without harm: the pooler (a fresh one is trained by the pair
# classifiers that read it, as transformers' own sequence classifiers do).
KNOWN_MISSING = ("pooler.",)
# Checkpoint weights AutoModel leaves out: pre-training and task heads of the families xeval evaluates (BERT's
# cls.*, RoBERTa/XLM-R's lm_head.*, ELECTRA's generator and discriminator head, XLM's pred_layer, ALBERT's
# predictions and sop_classifier, DistilBERT's vocab_*), fine-tuned heads, and a pooler the backbone has not.
KNOWN_UNEXPECTED = ("cls.", "lm_head.", "generator", "discriminator_predictions.", "pred_layer.", "predictions.",
                    "sop_classifier.", "vocab_transform.", "vocab_layer_norm.", "vocab_projector.", "qa_outputs.",
                    "classifier.", "pre_classifier.", "score.", "pooler.", "seq_relationship.")
_HF_LOGGER = "transformers.modeling_utils"
_SHOWN = 4  # key patterns named in the line; the rest are counted


class _DropReport(logging.Filter):
    """Drops transformers' LOAD REPORT record unless it tells of a problem transformers is about to raise on."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record we cannot read is left to transformers
            return True
        return "LOAD REPORT" not in text or "MISMATCH" in text or "CONVERSION" in text


@contextlib.contextmanager
def quiet_report():
    """While loading: no LOAD REPORT table (mismatched shapes and conversion errors excepted)."""
    logger = logging.getLogger(_HF_LOGGER)
    dropped = _DropReport()
    logger.addFilter(dropped)
    try:
        yield
    finally:
        logger.removeFilter(dropped)


def outside_known_heads(info: dict) -> tuple[list[str], list[str]]:
    """(missing, unexpected) weight names of ``from_pretrained(..., output_loading_info=True)``'s info that are not
    those of a known head, sorted."""
    missing = sorted(k for k in info.get("missing_keys") or () if not k.startswith(KNOWN_MISSING))
    unexpected = sorted(k for k in info.get("unexpected_keys") or () if not k.startswith(KNOWN_UNEXPECTED))
    return missing, unexpected


def compact(keys: list[str]) -> str:
    """``encoder.layer.*.output.dense.weight (12)``-style patterns, the first few named, the rest counted.

    >>> compact(["encoder.layer.0.output.dense.weight", "encoder.layer.1.output.dense.weight", "embeddings.x"])
    'encoder.layer.*.output.dense.weight (2), embeddings.x'
    """
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(re.sub(r"\.\d+(?=\.|$)", ".*", key), []).append(key)
    patterns = Counter({pattern if len(members) > 1 else members[0]: len(members) for pattern, members in groups.items()})
    named = [f"{p} ({n})" if n > 1 else p for p, n in patterns.most_common(_SHOWN)]
    rest = len(patterns) - len(named)
    return ", ".join(named) + (f" and {rest} more pattern{'s' * (rest != 1)}" if rest > 0 else "")


def unexpected_line(spec: str, info: dict) -> str | None:
    """The one warning line for weights missing or unused outside the known heads, or None when there are none."""
    missing, unexpected = outside_known_heads(info)
    parts = []
    if missing:
        parts.append(f"{len(missing)} weight{'s' * (len(missing) != 1)} not in the checkpoint, initialised at "
                     f"random: {compact(missing)}")
    if unexpected:
        parts.append(f"{len(unexpected)} checkpoint weight{'s' * (len(unexpected) != 1)} the model does not use: "
                     f"{compact(unexpected)}")
    if not parts:
        return None
    return f"{spec}: {'; '.join(parts)} (is this the architecture the checkpoint was trained as?)"


def known_heads_line(spec: str, info: dict) -> str | None:
    """A debugging line (``-v``) naming the known heads that were missing or left out, or None."""
    missing, unexpected = outside_known_heads(info)
    known_missing = sorted(set(info.get("missing_keys") or ()) - set(missing))
    known_unused = sorted(set(info.get("unexpected_keys") or ()) - set(unexpected))
    parts = ([f"initialised at random: {compact(known_missing)}"] if known_missing else []) + \
            ([f"left out: {compact(known_unused)}"] if known_unused else [])
    return f"{spec}: known heads {'; '.join(parts)}" if parts else None
