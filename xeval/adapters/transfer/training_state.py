"""A long fine-tune's state on disk, so that a stopped run continues where it was instead of training again.

XTREME's recipes run for hours on a CPU (PAN-X: 6,250 steps of 32 sentences; TyDiQA-GoldP on multilingual-e5-small:
1 h 38 min on two cores), and a run stopped by a closed laptop, a job limit or an out-of-memory kill used to start
over. ``fine_tune`` now writes its whole state every ``SAVE_EVERY_S`` seconds of training (at the next step boundary
that is not an epoch's last step): the weights, AdamW's moments and step counts (and ``LazyRowsAdamW``'s record of
the rows it steps), the schedule's position, the batch order's generator as it was when the epoch began and how many
of the epoch's batches are done, and model selection so far (the best weights, their step and score, the dev curve).
Every random draw of a step is seeded from (seed, step, micro-batch), so the resumed run computes the same steps: on a
CPU the same weights, bit for bit, as a run that was never stopped (``test_training_state``). When training ends,
having run longer than the interval, the selected weights and the training report are kept the same way until every
unit of the fine-tune is stored, so a stop during the evaluation of 40 languages does not train again either.

A rerun of the same command finds the state by the training key (``shared_training.training_key``: encoder, seed,
family options, whole recipe, every training feature and the selection set -- what decides the weights), so a state
is only ever continued by the fine-tune that wrote it. Files: ``<out>/<model>/<task>/training/s<seed>-<key>.json``
and ``.safetensors`` (tensors only: nothing is unpickled), each written to a temporary file and renamed; the
tensors go to the other of two files (``.safetensors`` / ``.b.safetensors``) and the json, written last, names that
one and its SHA-256, so a stop in the middle of a save leaves the previous state whole. A state that does not check
out (unreadable, another key or format, a hash that does not match, tensors missing) is not used: a warning names
the file and why, and training starts from step 0 -- it is xeval's own cache, and a wrong one must not decide a
number.

Not kept: fine-tunes shorter than the interval (they never save), in-memory stores (``store=None``), and
data-parallel fine-tunes (``--ddp-finetune``: every rank would have to agree on one state).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from xeval.base.atomic import atomic_path, write_json
from xeval.base.console import log

SAVE_EVERY_S = 1800.0  # a stop loses at most this much training (a save: 8-12 s for e5-small's 1.9 GB, busy CPU)
FORMAT = 1
SLOTS = ("", "b")  # two tensors files taken in turn: the json names the complete one


@dataclass
class TrainingState:
    """Where one fine-tune keeps its state (``folder/s<seed>-<key[:16]>``), and how often it saves."""

    folder: Path
    key: str  # shared_training.training_key: what decides the weights
    seed: int
    every_s: float = SAVE_EVERY_S

    @property
    def stem(self) -> Path:
        return Path(self.folder) / f"s{self.seed}-{self.key[:16]}"

    @property
    def meta_path(self) -> Path:
        return self.stem.with_suffix(".json")

    def slot_path(self, slot: str) -> Path:
        """The tensors file of ``slot``: ``""`` (``<stem>.safetensors``) or ``"b"`` (``<stem>.b.safetensors``)."""
        return self.stem.parent / f"{self.stem.name}{'.' + slot if slot else ''}.safetensors"

    @property
    def tensors_path(self) -> Path:
        """The tensors file the saved json names (the first slot when nothing is saved)."""
        try:
            slot = json.loads(self.meta_path.read_text(encoding="utf-8")).get("tensors", "")
        except (OSError, ValueError, AttributeError):
            slot = ""
        return self.slot_path(slot if slot in SLOTS else "")

    def save(self, tensors: dict[str, torch.Tensor], meta: dict) -> None:
        """Write ``tensors`` and ``meta`` (JSON-able) as this fine-tune's state, replacing any earlier one. The tensors
        go to the slot the current json does not name, then the json names them: a stop at any moment leaves the
        last complete state readable."""
        from safetensors.torch import save_file

        Path(self.folder).mkdir(parents=True, exist_ok=True)
        old = self.tensors_path if self.meta_path.is_file() else None
        slot = "b" if old is not None and old == self.slot_path("") else ""
        path = self.slot_path(slot)
        with atomic_path(path) as tmp:
            mode = tmp.stat().st_mode & 0o777  # as readable as the store's other files (safetensors makes its own)
            save_file(_unshared(tensors), str(tmp))
            os.chmod(tmp, mode)
        write_json(self.meta_path, {"format": FORMAT, "key": self.key, "seed": self.seed, "tensors": slot,
                                    "tensors_sha256": _sha256(path), **meta})
        if old is not None and old != path:
            old.unlink(missing_ok=True)

    def load(self) -> tuple[dict[str, torch.Tensor], dict] | None:
        """(tensors, meta) of a state that checks out, or None (nothing saved, or a warning says why not)."""
        if not self.meta_path.is_file():
            return None
        from safetensors.torch import load_file

        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
            problem = _problem(meta, self)
            tensors = None if problem else load_file(str(self.slot_path(meta.get("tensors", ""))))
        except (OSError, ValueError, RuntimeError) as err:  # unreadable json or tensors (safetensors: RuntimeError)
            problem, tensors = f"unreadable ({type(err).__name__}: {str(err)[:120]})", None
        if problem:
            log.warning(f"warning: {self.meta_path}: training state not used ({problem}); training from step 0")
            return None
        return tensors, meta

    def clear(self) -> None:
        """Remove the state (the json first: a tensors file without it is never read)."""
        for path in (self.meta_path, *(self.slot_path(slot) for slot in SLOTS)):
            path.unlink(missing_ok=True)


def _problem(meta: dict, state: TrainingState) -> str | None:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return f"expected format {FORMAT}, found {meta.get('format') if isinstance(meta, dict) else meta!r}"
    if meta.get("key") != state.key or meta.get("seed") != state.seed:
        return "written by another fine-tune (its training key or seed differs)"
    if meta.get("phase") not in {"training", "done"}:
        return f"expected phase training or done, found {meta.get('phase')!r}"
    if meta.get("tensors", "") not in SLOTS:
        return f"expected tensors in one of {SLOTS}, found {meta.get('tensors')!r}"
    path = state.slot_path(meta.get("tensors", ""))  # the meta in hand names it: no second read of the json
    if not path.is_file():
        return f"its tensors file {path.name} is missing"
    if _sha256(path) != meta.get("tensors_sha256"):
        return f"{path.name} does not match the SHA-256 the state names"
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def _unshared(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """CPU, contiguous tensors, those sharing storage with an earlier one copied (safetensors refuses shared
    storage: a tied output layer is the embedding's weight under a second name)."""
    seen: set[int] = set()
    out = {}
    for name, tensor in tensors.items():
        tensor = tensor.detach().to("cpu").contiguous()
        pointer = tensor.untyped_storage().data_ptr()
        if pointer in seen and tensor.numel():
            tensor = tensor.clone()
        seen.add(pointer)
        out[name] = tensor
    return out


# --------------------------------------------------------------------------------------------------- optimiser


def optimizer_state(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    """AdamW's state as (tensors named ``optim.<param index>.<name>``, JSON-able rest): its parameter groups (rates,
    betas, decay) and, for ``LazyRowsAdamW``, which embedding rows it steps."""
    full = optimizer.state_dict()
    tensors = {f"optim.{index}.{name}": value for index, entries in full["state"].items()
               for name, value in entries.items()}
    meta = {"param_groups": full["param_groups"]}
    touched = getattr(optimizer, "touched", None)
    if touched is not None:  # xeval.adapters.transfer.lazy_rows.LazyRowsAdamW
        tensors["optim.lazy.touched"] = touched
        meta["lazy"] = {"dense": optimizer.dense, "checked": optimizer._checked}
    return tensors, meta


def load_optimizer_state(optimizer: torch.optim.Optimizer, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    """Put back what ``optimizer_state`` took (the tensors onto each parameter's device)."""
    state: dict[int, dict] = {}
    for name, value in tensors.items():
        parts = name.split(".")
        if parts[0] == "optim" and parts[1].isdigit():
            state.setdefault(int(parts[1]), {})[parts[2]] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
    if hasattr(optimizer, "touched"):
        optimizer.touched.copy_(tensors["optim.lazy.touched"])
        optimizer.dense, optimizer._checked = meta["lazy"]["dense"], meta["lazy"]["checked"]
        # load_state_dict makes new group dicts: the one holding the embedding is found again
        optimizer.group = next(g for g in optimizer.param_groups if any(p is optimizer.weight for p in g["params"]))
