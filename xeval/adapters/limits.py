"""How many of a language's examples a run scores: ``--max-eval N`` (the first N) and ``--limit F`` (the first
``ceil(F * n)`` of the ``n`` there are, as lm-evaluation-harness's ``--limit 0.1`` takes a tenth of each task). Both
keep file order and are deterministic; both are recorded in every record's config and hashed into its identity
(``RunContext.identity_options``), so a limited run never passes for a whole one (reports mark its cells as
subsampled: ``xeval.report.deviations``)."""

from __future__ import annotations

import math


def limited(examples: list, max_eval: int | None = None, fraction: float | None = None) -> list:
    """The examples scored: the first ``ceil(fraction * len)`` (at least one), then at most ``max_eval``."""
    if fraction is not None and fraction < 1:
        examples = examples[: max(1, math.ceil(fraction * len(examples)))]
    if max_eval:
        examples = examples[: int(max_eval)]
    return examples


def limit_config(ctx) -> dict:
    """The record config entry of ``--limit`` (none without it)."""
    fraction = ctx.tasks.limit
    return {} if fraction is None else {"limit": fraction}
