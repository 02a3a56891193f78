"""Stop the forward pass at the deepest layer a probe reads: ``hidden_states[0..k]`` without layers k+1..L.

A Tatoeba probe of a 12-layer model reads ``hidden_states[8]`` by default (XTREME's layer; ``tasks/tatoeba.yaml``),
so a third of a full forward pass computes states nobody reads. ``hidden_states[k]`` depends only on the layers
below it, so running the stack cut after layer k gives the same tensors, bit for bit (the same operations on the
same inputs). That holds where nothing follows the layer stack: BERT-style encoders (post-layer-norm, no final
norm over the stack). Elsewhere (a pre-norm model's final layer norm, the engine's own architecture) the full pass
runs, as before.
"""

from __future__ import annotations

import contextlib

import torch

# model_type values whose backbone is embeddings -> encoder.layer (a ModuleList) and nothing after the stack
CUT_TYPES = frozenset({"bert", "roberta", "xlm-roberta"})


@contextlib.contextmanager
def stack_cut_after(model: torch.nn.Module, layers: int):
    """Within the block, ``model`` runs its first ``layers`` transformer layers only (yields True), or unchanged
    where its architecture is not known to allow it (yields False). The layer list is put back on exit."""
    encoder = getattr(model, "encoder", None)
    stack = getattr(encoder, "layer", None)
    cut = (getattr(model.config, "model_type", None) in CUT_TYPES and isinstance(stack, torch.nn.ModuleList)
           and 0 <= layers < len(stack))
    if not cut:
        yield False
        return
    # transformers >= 5 records hidden states by forward hooks, installed on the modules present at the first
    # forward: installed now, on the whole stack, or layers above the cut would never be recorded again
    try:
        from transformers.utils.output_capturing import maybe_install_capturing_hooks
    except ImportError:  # an older transformers collects them in the layer loop: nothing to install
        pass
    else:
        maybe_install_capturing_hooks(model)
    encoder.layer = stack[:layers]  # the same layer modules (and their hooks), fewer of them
    try:
        yield True
    finally:
        encoder.layer = stack
