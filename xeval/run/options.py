"""``xeval run``'s settings, typed in one place: ``RunOptions`` (what the command line and ``xeval.evaluate`` say,
with every default), the parsers of its text values (``--seeds``, ``--layers``, ``--name``), and ``task_options``,
which turns the recipe flags and ``--set KEY=VALUE`` text into typed ``TaskOptions`` once the suite is known: a
value changes form once, from text to its field's type, and adapters read the typed objects.

    command line / API --> RunOptions --(suite chosen)--> TaskOptions + RunContext fields --> adapters

Which keys a task reads and whether a value is acceptable is checked here too (``xeval.run.checks`` says which keys
are unknown), before any model loads, so a typo fails in a second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xeval.adapters import get_adapter
from xeval.adapters.context import TaskOptions
from xeval.adapters.probes import base as probes
from xeval.adapters.transfer.recipe import RECIPE_FIELDS, Recipe
from xeval.base.errors import UserError
from xeval.cards.types import TASK_TYPES, task_type

MAX_SEEDS = 1000
MODES = ("finetune", "probe")
SETTINGS = ("zero-shot", "translate-train", "few-shot")


@dataclass
class RunOptions:
    model: str
    suite: str
    tasks: list[str] | None = None
    langs: list[str] | None = None
    seeds: list[int] = field(default_factory=lambda: [1])
    data: str | None = None
    out: str | None = "runs"  # None: records kept in memory, nothing written (the Python API's store=None)
    export_predictions: str | None = None
    export_labels: str | None = None
    overwrite: bool = False
    device: str = "auto"
    layers: str | None = None  # "all" | "k,k,..." | None (each card's default)
    setting: str = "zero-shot"  # zero-shot | translate-train | few-shot
    # the recipe flags and --set KEY=VALUE as given (numbers from flags, text from --set); task_options types them
    recipe: dict = field(default_factory=dict)
    max_eval: int | None = None  # --max-eval: the first N examples of each language, every task
    limit: float | None = None  # --limit F (0 < F < 1): the first ceil(F * n) of each language's n examples
    auto_batch: bool = False  # --batch-size auto: the largest fine-tuning micro-batch that fits the accelerator
    shots: list[int] | None = None  # --setting few-shot: target-language examples per language
    control: str | None = None  # "random-init", "charngram" or both comma-separated (xeval.results.controls)
    control_seed: int = 0  # torch seed of the control's weights
    threads: int | None = None  # torch CPU threads (None: torch's default, divided among a node's torchrun ranks)
    shard: tuple[int, int] | None = None  # --shard i/N: this process computes the i-th of N parts of the run
    ddp_finetune: bool = False  # torchrun: every rank trains each fine-tune together (data parallel)
    name: str | None = None  # --name TAG: the name in the model key, so two settings of one model are two rows
    revision: str | None = None  # hub revision (branch, tag or commit) of --model
    dtype: str = "float32"  # float32 | bfloat16 | float16: the weights' and activations' dtype
    trust_remote_code: bool = False  # run the model repository's own Python code (only when asked)
    mode: str = "finetune"  # "finetune" or "probe": the fine-tuning tasks with the encoder frozen (probe_mode)
    no_cache: bool = False  # encode without the on-disk encoding cache (xeval.models.encoding_cache)
    cache: str | None = None  # the encoding cache's folder, over $XEVAL_CACHE and <out>/cache (xeval.evaluate(cache=))
    compat: str = "none"  # "xtreme": the published XTREME pipeline's quirks (xeval.cards.compat), in every unit's config


def parse_seeds(text: str | int) -> list[int]:
    """``3`` -> seeds 1, 2, 3; ``1,5,7`` -> exactly those."""
    text = str(text).strip()
    try:
        if "," in text:
            seeds = [int(s) for s in text.split(",") if s.strip()]
        else:
            count = int(text)
            if count > MAX_SEEDS:  # before building the list: --seeds 99999999999999999999 must not fill the memory
                raise UserError(f"--seeds: expected a count of at most {MAX_SEEDS}, found {text!r}")
            seeds = list(range(1, count + 1))
    except ValueError:
        raise UserError(f"--seeds: expected a count (3) or a list (1,2,5), found {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds: expected at least one seed and no repeats, found {text!r}")
    if "," not in text and len(seeds) > MAX_SEEDS:
        raise UserError(f"--seeds: expected a count of at most {MAX_SEEDS}, found {text!r}")
    bad = [s for s in seeds if not 0 <= s < 2**32]
    if bad:
        raise UserError(f"--seeds: expected seeds in 0..{2**32 - 1} (numpy's range), found {bad[0]}")
    return seeds


def parse_limit(text: str | float | None) -> tuple[float | None, int | None]:
    """``--limit``: (fraction, count): ``0.1`` a tenth of each language's examples (as lm-evaluation-harness's
    ``--limit``), a whole number ``N >= 1`` the first N (as ``--max-eval N``)."""
    if text is None:
        return None, None
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UserError(f"--limit: expected a fraction like 0.1 or a count like 50, found {text!r}") from None
    if 0 < value < 1:
        return value, None
    if value >= 1 and value == int(value) and value < 2**31:
        return None, int(value)
    raise UserError(f"--limit: expected a fraction in (0, 1) or a whole count >= 1, found {text!r}")


def parse_layers(text: str | None, num_layers: int) -> list[int] | None:
    if text is None:
        return None
    if text == "all":
        return list(range(num_layers + 1))
    try:
        layers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--layers: expected 'all' or indices like 0,6,12, found {text!r}") from None
    bad = [k for k in layers if not 0 <= k <= num_layers]
    if bad or not layers:
        raise UserError(f"--layers: layers must lie in 0..{num_layers} (hidden_states indices), found {text!r}")
    return layers


def check_name(name: str | None) -> str | None:
    """``--name TAG``: a label that becomes the name part of the model key (``TAG@<hash>``)."""
    if name is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
        raise UserError(f"--name: expected letters, digits and _ . + - (starting with a letter or digit), found {name!r}")
    return name


def check_choice(flag: str, value: str, choices) -> str:
    if value not in choices:
        raise UserError(f"{flag}: expected one of {', '.join(choices)}, found {value!r}")
    return value


def resolve_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


# ----------------------------------------------------------------------------------- the tasks' options, typed


def probe_defaults(type_names) -> dict:
    """Every probe option the given task types read, with the default that gives its type."""
    out = dict(probes.DEFAULTS)
    for name in type_names:
        if not task_type(name).fine_tunes:
            out.update(getattr(get_adapter(name), "EXTRA_OPTIONS", {}) or {})
    return out


def task_options(raw: dict, type_names=None, max_eval: int | None = None, where: str = "",
                 limit: float | None = None, auto_batch: bool = False) -> TaskOptions:
    """The recipe flags and ``--set`` values ``raw`` (keys with ``-`` or ``_``), typed for the task types
    ``type_names`` (default: every type): the keys that are ``Recipe`` fields become the fine-tuning overrides,
    built together over the recipe defaults so a bad value or combination fails here (``--batch-size 0``,
    ``--learning-rate nan``); the probes' keys become probe options of their defaults' types
    (``--eval-batch-size`` is a probe's encoding batch unless ``--batch-size`` is given, as before). ``max_eval``
    (``--max-eval``) is every task's, and the fine-tuning recipe's unless ``raw`` names its own. Keys no task reads
    are ``xeval.run.checks.check_overrides``'s to report."""
    type_names = list(TASK_TYPES) if type_names is None else list(type_names)
    given = {str(k).replace("-", "_"): v for k, v in (raw or {}).items() if v is not None}
    if max_eval is not None:
        given.setdefault("max_eval", max_eval)
    recipe_keys = [k for k in given if k in RECIPE_FIELDS]
    built = Recipe.build({k: given[k] for k in recipe_keys})  # every value checked, with its neighbours
    recipe = {k: getattr(built, k) for k in recipe_keys}
    defaults = probe_defaults(type_names)
    probe = {}
    if given.get("eval_batch_size") is not None:  # xeval run --eval-batch-size: sentences per forward pass
        probe["batch_size"] = probes.as_option_type("batch_size", given["eval_batch_size"], 0, where or "--set")
    for key, value in given.items():
        if key in defaults:
            probe[key] = probes.as_option_type(key, value, defaults[key], where or "--set")
    for name in type_names:  # values a probe refuses (pooling=max) fail before any model loads
        if not task_type(name).fine_tunes:
            probes.resolve_options({}, probe, defaults, where=where or name)
    cap = given.get("max_eval")
    return TaskOptions(recipe=recipe, probe=probe, max_eval=None if cap is None else int(recipe.get("max_eval", cap)),
                       limit=limit, auto_batch=auto_batch)
