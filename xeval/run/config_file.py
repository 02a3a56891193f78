"""``xeval run --config run.yaml``: the settings of a run in a file, under the command line.

A run config is a YAML mapping (read with ``yaml.safe_load``) whose keys are ``xeval run``'s own flags without the
dashes (``-`` or ``_`` alike), plus ``set:`` for what ``--set KEY=VALUE`` takes, one key each::

    # run.yaml
    model: ckpt/
    suite: xtreme-mini
    tasks: [udpos, xnli]          # a list or "udpos,xnli"
    seeds: 3
    epochs: 2
    learning-rate: 1.0e-4
    limit: 0.1
    set: {warmup_ratio: 0.1, weight_decay: 0.01}

    python -m xeval run --config run.yaml --seeds 1     # the command line wins: one seed

Values are merged *under* the command line: a flag given on the command line keeps its value, a ``--set KEY=..``
beats the file's ``set: {KEY: ..}``; the merged settings then go through the same checks as typed flags. An
unknown key, a value of the wrong shape (a mapping where a flag takes one value) or bad YAML is one error naming the
file and the line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from xeval.base.errors import ConfigError, did_you_mean
from xeval.base.textfile import read_utf8

SET_KEYS = ("set",)


def read_run_config(path: str | Path, known: set[str]) -> dict[str, tuple[object, str]]:
    """{key (``_`` spelling): (value, "file:line")} of the run config ``path``; ``known``: the keys a run accepts
    (``set`` among them)."""
    path = Path(path)
    try:
        text = read_utf8(path, "YAML")
    except OSError as err:
        raise ConfigError(f"--config {path}: cannot read ({err.strerror})") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: expected valid YAML, found {getattr(err, 'problem', err)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not isinstance(root, yaml.MappingNode):
        raise ConfigError(f"{path}:1: expected a mapping of xeval run settings (model: ..., suite: ...), found "
                          f"{type(data).__name__}")
    lines = {str(key.value): key.start_mark.line + 1 for key, _ in root.value}
    out: dict[str, tuple[object, str]] = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        where = f"{path}:{lines.get(str(key), 1)}"
        if name not in known:
            raise ConfigError(f"{where}: unknown key {key!r}{did_you_mean(name, known)}; expected xeval run's flags "
                              "without the dashes (model, suite, tasks, seeds, epochs, ...) or set: {KEY: VALUE}")
        if name in SET_KEYS:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected 'set:' to map recipe or probe keys to values, found "
                                  f"{type(value).__name__}")
        elif isinstance(value, dict):
            raise ConfigError(f"{where}: expected one value for {key!r}, found a mapping")
        elif isinstance(value, list) and not all(isinstance(v, str | int | float) for v in value):
            raise ConfigError(f"{where}: expected {key!r} to be a value or a list of values")
        out[name] = (value, where)
    return out
