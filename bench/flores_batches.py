"""The fine-tuning batches the step benchmarks share (``bench/allocator.py``, ``bench/lazy_rows.py``): FLORES-200
English devtest sentences, each batch padded to its longest (so shapes vary from step to step, as in a real
fine-tune), with random token labels (timing only)."""

from __future__ import annotations

from pathlib import Path


def flores_batches(tokenizer, data: str | None, count: int, batch_size: int, num_labels: int = 17) -> list:
    """``count`` batches of ``batch_size`` sentences (``data``: the shared data root, or found as the tests find it)."""
    import torch

    from tests.conftest import find_data_root

    root = Path(data) if data else find_data_root()
    lines = (root / "flores200" / "devtest" / "eng_Latn.devtest").read_text(encoding="utf-8").splitlines()
    batches = []
    for i in range(count):
        enc = tokenizer(lines[i * batch_size:(i + 1) * batch_size], truncation=True, max_length=128, padding=True,
                        return_tensors="pt")
        enc["labels"] = torch.randint(0, num_labels, enc["input_ids"].shape,
                                      generator=torch.Generator().manual_seed(i))
        batches.append(enc)
    return batches
