"""Checkpoints without pickle.

- The *model* is the output directory itself: ``config.json`` + ``model.safetensors`` (the encoder only; for XLM-E
  the discriminator) + the tokenizer files, loadable by ``AutoModel.from_pretrained`` and xeval's Encoder. Each file
  is replaced atomically.
- The *training state* lives in ``state/step-NNNNNNN/``: ``model.safetensors`` (every module: heads, generator,
  momentum encoder, queue), ``optimizer.safetensors`` (AdamW moments and step per parameter name), ``rng.safetensors``
  (torch RNG states) and ``state.json`` (step, resolved config, data-stream positions with their numpy RNG states).
  A state directory is written under a temporary name and renamed when complete; ``state/latest`` (written
  atomically) names the newest, so an interrupted save never corrupts the state ``--resume`` reads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, load_model, save_file, save_model

from xeval.base.atomic import write_json, write_text
from xeval.base.errors import DataError, UserError
from xeval.base.safe_files import check_safetensors
from xeval.base.textfile import read_json


def export_model(encoder, out: Path) -> None:
    """config.json + model.safetensors of the encoder into ``out`` (each file renamed into place)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=".export-") as tmp:
        encoder.save_pretrained(tmp, safe_serialization=True)
        for name in ("config.json", "model.safetensors"):
            os.replace(Path(tmp) / name, out / name)


STEP_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "xeval_tokenizer.json")


def step_dir(out: Path, step: int) -> Path:
    """Where ``train.export_every`` puts the encoder of ``step``: ``<out>/steps/step-NNNNNNN/``."""
    return Path(out) / "steps" / f"step-{step:07d}"


def export_step(encoder, out: Path, step: int, card: dict) -> Path:
    """A loadable checkpoint of ``step`` in ``step_dir``: config.json, model.safetensors, the tokenizer files of
    ``out`` and ``xeval_pretrain.json`` (``card`` with the step). Written under a temporary name and renamed, so
    a series never holds a half-written step; an existing step (a resumed run passing it again) is replaced."""
    final = step_dir(out, step)
    with folder_into_place(final) as tmp:
        export_model(encoder, tmp)
        for name in STEP_FILES:
            if (out / name).is_file():
                shutil.copyfile(out / name, tmp / name)
        write_json(tmp / "xeval_pretrain.json", {**card, "step": step})
    return final


@contextlib.contextmanager
def folder_into_place(final: Path):
    """Yield a temporary folder beside ``final`` (named ``.<final>-*``); on success it replaces ``final`` in one
    rename, on any error it is removed: readers never see a half-written folder."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}-"))
    try:
        yield tmp
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def save_state(out: Path, step: int, model, optimizer, extra: dict, keep: int = 2) -> Path:
    state_root = out / "state"
    final = state_root / f"step-{step:07d}"
    with folder_into_place(final) as tmp:  # .step-NNNNNNN-*: what clean_partial_states removes after a kill
        save_model(model, str(tmp / "model.safetensors"))  # drops aliases of shared tensors (tied embeddings)
        save_file(optimizer_tensors(model, optimizer), str(tmp / "optimizer.safetensors"))
        rng = {"torch_cpu": torch.get_rng_state()}
        if torch.cuda.is_available():
            for i, s in enumerate(torch.cuda.get_rng_state_all()):
                rng[f"torch_cuda_{i}"] = s
        save_file(rng, str(tmp / "rng.safetensors"))
        write_json(tmp / "state.json", {"step": step, **extra})
    write_text(state_root / "latest", final.name + "\n")
    steps = sorted(p for p in state_root.glob("step-*") if p.is_dir())
    for old in steps[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_state(out: Path) -> Path | None:
    pointer = out / "state" / "latest"
    if not pointer.is_file():
        return None
    path = out / "state" / pointer.read_text(encoding="utf-8").strip()
    if not (path / "state.json").is_file():
        raise UserError(f"{pointer}: names {path.name}, which is incomplete; delete it or start a new --out")
    return path


def clean_partial_states(out: Path) -> list[Path]:
    """Remove ``state/.step-*`` folders a kill during a save left behind (never named by ``state/latest``)."""
    stale = sorted(p for p in (out / "state").glob(".step-*") if p.is_dir())
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale


def read_state_json(path: Path) -> dict:
    file = path / "state.json"
    obj, _ = read_json(file, f"the training state's JSON (delete {path.name} to resume from the one before)")
    if not isinstance(obj, dict) or not isinstance(obj.get("step"), int):
        raise DataError(file, 1, "expected a training state object with an integer 'step'")
    return obj


def load_state(path: Path, model, optimizer) -> dict:
    """Restore model, optimizer and torch RNG from ``path``; returns state.json's content."""
    for name in ("model.safetensors", "optimizer.safetensors", "rng.safetensors"):
        if not (path / name).is_file():
            raise DataError(path / name, None, "expected a file of the training state, found none")
        check_safetensors(path / name)
    missing, unexpected = load_model(model, str(path / "model.safetensors"), strict=False)
    if unexpected or missing:
        raise UserError(f"{path}: state does not match the model (missing {missing[:3]}, unexpected {unexpected[:3]})")
    load_optimizer_tensors(model, optimizer, load_file(str(path / "optimizer.safetensors")))
    rng = load_file(str(path / "rng.safetensors"))
    torch.set_rng_state(rng["torch_cpu"])
    if torch.cuda.is_available():
        states = [rng[k] for k in sorted(rng) if k.startswith("torch_cuda_")]
        if states:
            torch.cuda.set_rng_state_all(states)
    return read_state_json(path)


def optimizer_tensors(model, optimizer) -> dict[str, torch.Tensor]:
    """AdamW state keyed by parameter name: ``<name>::exp_avg``, ``::exp_avg_sq``, ``::step``."""
    out = {}
    for name, p in model.named_parameters():
        for k, v in optimizer.state.get(p, {}).items():
            t = v if isinstance(v, torch.Tensor) else torch.tensor(v)
            out[f"{name}::{k}"] = t.detach().cpu().contiguous()
    return out


def load_optimizer_tensors(model, optimizer, tensors: dict[str, torch.Tensor]) -> None:
    by_name: dict[str, dict] = {}
    for key, t in tensors.items():
        name, k = key.rsplit("::", 1)
        by_name.setdefault(name, {})[k] = t
    for name, p in model.named_parameters():
        if name in by_name:
            state = {}
            for k, t in by_name[name].items():
                state[k] = t.to(p.device) if k != "step" else t.clone()
            optimizer.state[p] = state
