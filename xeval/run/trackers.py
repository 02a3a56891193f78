"""``--log-to KIND:TARGET``: send a run's ``results.json`` to an experiment tracker. Optional: each tracker is an
extra (``pip install 'xeval[mlflow]'``), imported only when asked for, and checked before the run starts so a missing
package or an unwritable target fails in the first second (one line, exit 2), not after hours of computing.

``mlflow:DIR`` logs into MLflow's local file store in ``DIR`` (no server, works offline; browse it with
``mlflow ui --backend-store-uri DIR``); ``mlflow:URI`` with a scheme (``sqlite:///mlflow.db``, ``http://host:5000``,
``databricks``) uses that tracking server. One MLflow run per xeval run, in the experiment ``$MLFLOW_EXPERIMENT_NAME``
(default ``xeval``):

- params: the run's options (``run.*`` of results.json, the recipe overrides as ``recipe.KEY``) and each model's hash;
- metrics: per summary entry of results.json, ``<task>/<split>/<lang>/<metric>`` (the mean over seeds) and
  ``<task>/<split>/avg/<metric>`` (the mean over languages), prefixed by the model when a run holds several, with
  ``L<k>`` for a probe's layer and the setting, mode and compat mode where they are not the default;
- tags: the model keys, suite, xeval version, git commit; the artifact: results.json itself.
"""

from __future__ import annotations

import importlib.util
import os
import re
import time
from pathlib import Path

from xeval.base.atomic import check_output
from xeval.base.errors import UserError

KINDS = ("mlflow",)
_KEY = re.compile(r"[^\w./ :-]")  # MLflow's allowed characters in metric and param names


def _extra_missing(kind: str, package: str) -> UserError:
    return UserError(f"--log-to {kind}: needs the optional package {package} (pip install 'xeval[{kind}]')")


class MlflowSink:
    """MLflow's tracking client, without touching its process-wide state (``mlflow.set_tracking_uri``)."""

    def __init__(self, target: str):
        if importlib.util.find_spec("mlflow") is None:
            raise _extra_missing("mlflow", "mlflow-skinny")
        if not target:
            raise UserError("--log-to mlflow: expected mlflow:DIR (a local store) or mlflow:URI, e.g. mlflow:mlruns")
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) and not re.match(r"^[A-Za-z]:[\\/]", target):
            self.uri, self.folder = target, None  # a tracking URI: the server checks what it accepts
            if target.startswith("file:"):
                self.folder = Path(target.removeprefix("file:").removeprefix("//"))
        else:
            self.folder = Path(target).expanduser().resolve()
            self.uri = self.folder.as_uri()
        if self.folder is not None:
            check_output(self.folder, "--log-to mlflow", folder=True)
        self.experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or "xeval"

    def describe(self) -> str:
        return f"MLflow {self.uri} (experiment {self.experiment})"

    def log(self, doc: dict, results_path: Path | None) -> str:
        """One MLflow run holding ``doc`` (a results.json document); returns its run id. A failure (a server out of
        reach, a store it cannot write) is one UserError line: the run's results are stored whatever happens here."""
        try:
            return self._log(doc, results_path)
        except Exception as err:  # noqa: BLE001 - MLflow's own exceptions, whatever their class
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(f"--log-to: {self.describe()}: {first} (results.json is written all the same)") from None

    def _log(self, doc: dict, results_path: Path | None) -> str:
        if self.folder is not None:
            # MLflow 3 keeps the file store in maintenance mode and refuses it unless told; it is the store that
            # needs no server and no database package, which is what an offline, optional sink is for
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.uri)
        found = client.get_experiment_by_name(self.experiment)
        experiment = found.experiment_id if found is not None else client.create_experiment(self.experiment)
        models = [m["key"] for m in doc["models"]]
        suite = doc["run"].get("suite")
        names = ", ".join(dict.fromkeys(k.split("@", 1)[0] for k in models)) or "no model"
        run = client.create_run(experiment, run_name=f"{names} on {suite}", tags={
            "mlflow.source.name": "xeval run", "xeval.models": ", ".join(models), "xeval.suite": str(suite),
            "xeval.version": str(doc["versions"].get("xeval")), "xeval.git_commit": str(doc.get("git_commit")),
            "xeval.schema": doc["schema"]})
        run_id = run.info.run_id
        stamp = int(time.time() * 1000)
        metrics = [Metric(key, value, stamp, 0) for key, value in metric_items(doc).items()]
        params = [Param(key, value) for key, value in param_items(doc).items()]
        for start in range(0, max(len(metrics), len(params), 1), 100):  # MLflow takes at most 100 params a batch
            client.log_batch(run_id, metrics=metrics[start:start + 100], params=params[start:start + 100],
                             tags=[RunTag("xeval.results", "results.json")] if start == 0 else [])
        if results_path is not None:
            client.log_artifact(run_id, str(results_path))
        client.set_terminated(run_id)
        return run_id


def _key(*parts, sep: str = "/") -> str:
    return _KEY.sub("_", sep.join(str(p) for p in parts if p not in (None, "")))[:250]


def metric_items(doc: dict) -> dict[str, float]:
    """The metrics of a results.json document, flat (see the module's docstring)."""
    several = len(doc["models"]) > 1
    out: dict[str, float] = {}
    for entry in doc["summary"]:
        scope = [entry["model"] if several else None, entry["task"],
                 None if entry["setting"] == "zero-shot" else entry["setting"],
                 None if entry["mode"] == "finetune" else entry["mode"],
                 None if entry["compat"] == "none" else f"compat-{entry['compat']}",
                 None if entry["layer"] is None else f"L{entry['layer']}", entry["split"]]
        for lang, value in entry["languages"].items():
            if value is not None:
                out[_key(*scope, lang, entry["metric"])] = float(value)
        if entry["mean"] is not None and len(entry["languages"]) > 1:
            out[_key(*scope, "avg", entry["metric"])] = float(entry["mean"])
    out["units_computed"] = float(doc["timings"]["units_computed"])
    out["wall_s"] = float(doc["timings"]["wall_s"])
    return out


def param_items(doc: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in doc["run"].items():
        if key == "recipe":
            out.update({_key("recipe", k, sep="."): str(v)[:6000] for k, v in (value or {}).items()})
        elif value not in (None, [], {}, False):
            out[_key("run", key, sep=".")] = str(value)[:6000]
    for model in doc["models"]:
        out[_key("model", model["key"], "hash", sep=".")] = str(model.get("hash"))
    return out


def parse(spec: str | None):
    """The sink ``--log-to KIND:TARGET`` names, checked (package installed, target writable), or None."""
    if not spec:
        return None
    kind, _, target = spec.partition(":")
    if kind == "mlflow":
        return MlflowSink(target)
    raise UserError(f"--log-to {spec}: unknown tracker {kind!r}; expected one of {', '.join(KINDS)} "
                    "(e.g. --log-to mlflow:mlruns)")
