"""``--device``: checked before anything loads, so a machine without CUDA or a typo is one line, not a torch
traceback (``AssertionError: Torch not compiled with CUDA enabled``, ``RuntimeError: Expected one of cpu, ...``)."""

from __future__ import annotations

import re

from xeval.base.errors import UserError

DEVICES = ("auto", "cpu", "cuda", "mps")
DTYPES = ("float32", "bfloat16", "float16")


def check_device(name: str) -> str:
    """``name`` when this machine can run on it (``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``); else a
    UserError naming what is there."""
    import torch

    from xeval.base.errors import did_you_mean

    text = str(name).strip()
    match = re.fullmatch(r"cuda(?::(\d+))?", text)
    if text in ("auto", "cpu"):
        return text
    if match:
        if not torch.cuda.is_available():
            why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA device is visible"
            raise UserError(f"--device {text}: {why} (torch {torch.__version__}); use --device cpu or auto")
        count = torch.cuda.device_count()
        if match.group(1) is not None and int(match.group(1)) >= count:
            raise UserError(f"--device {text}: this machine has {count} CUDA device{'s' * (count != 1)} "
                            f"(cuda:0..cuda:{count - 1})")
        return text
    if text == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise UserError("--device mps: Apple's MPS backend is not available here; use --device cpu or auto")
        return text
    gpu = text.lower() in {"gpu", "gpus", "nvidia"} or text.lower().startswith("gpu:")
    hint = " (did you mean 'cuda'?)" if gpu else did_you_mean(text, DEVICES)
    raise UserError(f"--device {text}: unknown device{hint}; expected auto, cpu, cuda, cuda:N or mps")


def check_dtype(name: str | None):
    """The torch dtype for ``--dtype`` (default float32)."""
    import torch

    from xeval.base.errors import did_you_mean

    name = name or "float32"
    if name not in DTYPES:
        raise UserError(f"--dtype {name}: expected one of {', '.join(DTYPES)}{did_you_mean(name, DTYPES)}")
    return getattr(torch, name)
