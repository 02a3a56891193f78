"""The Python API: ``xeval.evaluate`` and ``xeval.load_results``, each returning a pandas DataFrame with one row per
unit (model, task, language, split, setting, layer, seed, mode) and one column per metric.

    import xeval
    frame = xeval.evaluate("xlm-roberta-base", suite="xtreme-mini", tasks=["tatoeba"], layers="all")
    frame = xeval.evaluate((model, tokenizer), suite="probes", tasks=["tatoeba"], langs=["de"])   # in memory
    frame = xeval.load_results("runs/")                                                          # a store

``evaluate`` runs what ``python -m xeval run`` runs (same cards, adapters, metrics and records); ``store=None``
(the default) keeps the records in memory and writes nothing, ``store="runs"`` stores and resumes like ``--out``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from xeval.base.errors import UserError

UNIT_COLUMNS = ["model", "task", "lang", "split", "setting", "layer", "seed", "mode", "compat"]


def records_frame(records: Iterable) -> pd.DataFrame:
    """One row per record: the unit's fields, ``n_examples``, then one column per metric (points, as stored;
    NaN where a task has no such metric). ``layer`` is None for fine-tuning tasks. Rows in the given order."""
    rows = []
    for rec in records:
        u = rec.unit
        rows.append({"model": u.model, "task": u.task, "lang": u.lang, "split": u.split, "setting": u.setting,
                     "layer": u.layer, "seed": u.seed, "mode": u.mode,
                     # part of the unit's identity (config hash): without it, rows of --compat xtreme and of xeval's
                     # own pipeline would look like duplicates with other numbers
                     "compat": (rec.config or {}).get("compat", "none"), "n_examples": rec.n_examples,
                     **rec.metrics})
    frame = pd.DataFrame(rows, columns=None if rows else [*UNIT_COLUMNS, "n_examples"])
    if "layer" in frame:
        frame["layer"] = frame["layer"].astype("object").where(frame["layer"].notna(), None)
    return frame


def evaluate(model, tasks: str | list[str] | None = None, langs: str | list[str] | None = None,
             data: str | os.PathLike | None = None, seeds: int | list[int] = 1,
             layers: str | int | list[int] | None = None, store: str | os.PathLike | None = None, *,
             suite: str = "xtreme", device: str = "auto", setting: str = "zero-shot", recipe: dict | None = None,
             max_eval: int | None = None, control: str | None = None, overwrite: bool = False,
             mode: str = "finetune", compat: str = "none", verbose: bool | int = False, threads: int | None = None,
             cache: bool | str | os.PathLike | None = None) -> pd.DataFrame:
    """Evaluate ``model`` on ``tasks`` of ``suite`` and return one row per unit (see ``records_frame``).

    model: a hub id, a local folder (Hugging Face or xeval engine checkpoint), an ``(nn.Module, tokenizer)`` pair in
        memory, or an ``xeval.models.encoder.Encoder``.
    tasks, langs: names (a list or a comma-separated string); default every task of the suite, each its own languages.
    data: the data folder (``--data``); default ``$XEVAL_DATA``, else a ``shared/data`` folder beside the working directory; ``"hub"`` for the hub.
    seeds: a count (3 = seeds 1, 2, 3) or a list of seeds (fine-tuning tasks; probes are deterministic, seed 0).
    layers: probes' hidden_states indices: ``"all"``, an int or a list; default each card's own.
    store: ``None`` writes nothing; a folder stores every record there and reuses stored units (resume), and the
        run's summary as ``<store>/results.json`` (``docs/results.md``).
    recipe: fine-tuning recipe overrides (``{"epochs": 1, "max_train": 1000}``); max_eval: first N examples per
        language; control: ``"random-init"`` adds the random-init control's rows, ``"charngram"`` the char
        n-gram TF-IDF baseline's (sentence retrieval only), ``"random-init,charngram"`` both.
    mode: ``"finetune"`` (XTREME's protocol) or ``"probe"`` (the fine-tuning tasks with the encoder frozen and a
        linear head on every layer's features; rows say ``mode`` and are never to be averaged with fine-tuning's).
    compat: ``"none"`` (xeval's pipeline) or ``"xtreme"`` (``--compat xtreme``: the published XTREME pipeline's
        quirks, see ``xeval.cards.compat``); recorded in every row's ``compat`` column and part of the unit's identity.
    verbose: ``True`` shows what ``xeval run`` shows on stderr while the call runs: its log lines, progress bars on a
        terminal, timestamps and heartbeat lines elsewhere (a notebook, a log file; ``$XEVAL_HEARTBEAT`` seconds
        apart, default 30); ``2`` adds debugging lines. The logging setup is restored after. Default (``False``): xeval's
        logger (``logging.getLogger("xeval")``) as it is, which in a fresh interpreter shows warnings only.
    threads: torch CPU threads while the call runs (``--threads``; restored after). Default: torch's.
    cache: the encoding cache (frozen encoders' hidden states on disk, so a rerun with another layer or head does not
        encode again): ``None`` (default) uses ``$XEVAL_CACHE`` or ``<store>/cache``, none for ``store=None``;
        ``True`` also uses ``~/.cache/xeval/encodings`` (``$XDG_CACHE_HOME``) for ``store=None``; a folder uses that
        folder; ``False`` uses none.

    Like ``xeval run``, the call first tells glibc to keep freed memory in the process (``xeval.base.allocator``:
    fine-tuning ~1.9x faster on a 250k-vocabulary encoder, a few hundred MB more peak memory). It is a process
    setting and stays after the call; glibc's ``MALLOC_*_`` variables set before Python started take precedence
    (``MALLOC_MMAP_MAX_=65536`` keeps glibc's default). ``results.json`` records which held (``host.allocator``).
    """
    import torch

    from xeval.base import allocator, console
    from xeval.models.encoder import Encoder
    from xeval.run import results_file
    from xeval.run.options import RunOptions, parse_seeds, resolve_device
    from xeval.run.runner import RunSummary
    from xeval.run.runner import run as run_suite

    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise UserError(f"threads: expected an integer >= 1, found {threads!r}")
    _check_arguments(tasks=tasks, langs=langs, seeds=seeds, layers=layers, max_eval=max_eval, suite=suite,
                     device=device, setting=setting, recipe=recipe, control=control, overwrite=overwrite, mode=mode,
                     compat=compat)
    allocator.retain_freed_memory()  # before the model is loaded (the CLI's first call too)
    encoder = None
    if isinstance(model, Encoder):
        encoder = model
    elif isinstance(model, tuple):
        if len(model) != 2:
            raise UserError(f"expected a (model, tokenizer) pair, found a tuple of {len(model)}")
        encoder = Encoder.from_objects(*model, device=None if device == "auto" else device)
    elif not isinstance(model, str | os.PathLike):
        raise UserError(f"expected a hub id, a model folder, a (model, tokenizer) pair or an Encoder, found a "
                        f"{type(model).__name__} (pass a model in memory together with its tokenizer)")
    recipe = dict(recipe or {})
    opts = RunOptions(
        model=str(model) if encoder is None else encoder.spec, suite=suite, tasks=_names(tasks), langs=_names(langs),
        seeds=parse_seeds(seeds if isinstance(seeds, int | str) else ",".join(map(str, seeds))),
        data=None if data is None else str(data), out=None if store is None else str(Path(store)),
        overwrite=overwrite, device=resolve_device(device) if encoder is None else str(encoder.device),
        layers=_layers(layers), setting=setting, recipe=recipe,
        max_eval=None if max_eval is None else int(max_eval), control=control, mode=mode,
        compat=compat, threads=threads, no_cache=cache is False, cache=_cache_folder(cache, store),
    )
    saved, torch_threads = console.state(), torch.get_num_threads()
    if verbose:
        console.configure(verbose=int(verbose) - 1)  # True (1): progress lines; 2: debugging
    try:
        started, summary = results_file.now(), RunSummary()
        records = run_suite(opts, encoder=encoder, summary=summary)
        results_file.write_run(records, opts, summary, started, command=None)  # a store: <store>/results.json
        return records_frame(records)
    finally:
        console.restore(saved)
        torch.set_num_threads(torch_threads)


def load_results(path: str | os.PathLike | Iterable[str | os.PathLike], partial: bool = False) -> pd.DataFrame:
    """The records of a store folder (``xeval run --out``), a record file, or several of them, as ``evaluate``
    returns them (one row per unit). A run split into shards must be whole unless ``partial`` (``report --partial``)."""
    from xeval.results.store import load_records

    paths = [path] if isinstance(path, str | os.PathLike) else list(path)
    return records_frame(load_records(paths, partial=partial))


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_arguments(**given) -> None:
    """The argument types ``xeval run``'s parser enforces, for the Python API: ``max_eval=True`` is not one example
    and ``max_eval=16.9`` not sixteen; a wrong type is a UserError naming the argument."""
    def fail(name: str, expected: str):
        raise UserError(f"xeval.evaluate: {name}: expected {expected}, found {given[name]!r:.60} "
                        f"({type(given[name]).__name__})")

    if given["max_eval"] is not None and not (_integer(given["max_eval"]) and given["max_eval"] >= 1):
        fail("max_eval", "an integer >= 1 or None")
    seeds = given["seeds"]
    if not (_integer(seeds) or isinstance(seeds, str)
            or (isinstance(seeds, list | tuple) and seeds and all(_integer(s) for s in seeds))):
        fail("seeds", "a count, a list of integer seeds or a comma-separated string")
    layers = given["layers"]
    if not (layers is None or _integer(layers) or isinstance(layers, str)
            or (isinstance(layers, list | tuple) and layers and all(_integer(k) for k in layers))):
        fail("layers", "'all', an integer or a list of integers")
    for name in ("tasks", "langs"):
        value = given[name]
        if not (value is None or isinstance(value, str)
                or (isinstance(value, list | tuple) and all(isinstance(x, str) for x in value))):
            fail(name, "a name, a comma-separated string or a list of names")
    for name in ("suite", "device", "setting", "mode", "compat"):
        if not isinstance(given[name], str):
            fail(name, "a string")
    if given["control"] is not None and not isinstance(given["control"], str):
        fail("control", "'random-init', 'charngram', both comma-separated, or None")
    if not isinstance(given["overwrite"], bool):
        fail("overwrite", "True or False")
    if given["recipe"] is not None and not (isinstance(given["recipe"], dict)
                                            and all(isinstance(k, str) for k in given["recipe"])):
        fail("recipe", "a dict of recipe fields")


def _cache_folder(cache, store) -> str | None:
    """The encoding cache's folder for ``evaluate(cache=...)``, or None for the run's default (``$XEVAL_CACHE``,
    ``<store>/cache``)."""
    if cache is None or cache is False:
        return None
    if cache is True:
        if os.environ.get("XEVAL_CACHE") or store is not None:
            return None
        return str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xeval" / "encodings")
    if isinstance(cache, str | os.PathLike):
        return str(Path(cache).expanduser())
    raise UserError(f"cache: expected True, False, None or a folder, found {type(cache).__name__}")


def _names(value) -> list[str] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(x).strip() for x in items if str(x).strip()] or None


def _layers(value) -> str | None:
    if value is None or value == "all":
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    return ",".join(str(int(k)) for k in value)
