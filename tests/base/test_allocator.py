"""xeval.base.allocator: large CPU buffers on huge pages, measured in page faults (not in time)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from xeval.base import allocator

# A training step's pattern: allocate a 256 MB buffer, write it, free it; the second round's minor faults counted.
PROBE = textwrap.dedent("""
    import resource, sys
    from xeval.base.allocator import prefer_huge_pages
    on = prefer_huge_pages()
    import torch
    def cycle():
        buf = torch.empty(64 * 1024 * 1024, dtype=torch.float32)  # 256 MB, 65,536 pages of 4 KiB
        buf.fill_(1.0)
        del buf
    cycle()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    cycle()
    print(int(on), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")

HUGE_PAGES = sys.platform.startswith("linux") and allocator.kernel_allows_huge_pages()


def _faults(env_value: str | None) -> tuple[bool, int]:
    env = {k: v for k, v in os.environ.items() if k != allocator.ENV}
    if env_value is not None:
        env[allocator.ENV] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    on, faults = out.stdout.split()
    return bool(int(on)), int(faults)


@pytest.mark.skipif(not HUGE_PAGES, reason="the kernel's transparent huge pages are off (or not Linux)")
def test_a_large_buffer_is_faulted_in_huge_pages():
    on, faults = _faults(None)
    assert on
    assert faults < 5_000  # 128 huge pages (and a few small ones), not 65,536


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_a_value_already_set_is_left_alone():
    on, faults = _faults("0")
    assert not on
    assert faults > 30_000  # torch's default: 4 KiB pages, each faulted in when written


def test_not_after_torch_is_imported(monkeypatch):
    monkeypatch.setenv(allocator.ENV, "1")
    import torch  # noqa: F401  (imported by the test session already; the setting would come too late)

    assert allocator.prefer_huge_pages() is False


def test_the_command_line_asks_before_any_verb_imports_torch(monkeypatch):
    from xeval import cli

    calls = []
    monkeypatch.setattr(cli.allocator, "prefer_huge_pages", lambda: calls.append("asked"))
    monkeypatch.setattr(cli, "_main", lambda argv: calls.append("verb") or 0)
    assert cli.main(["tasks"]) == 0
    assert calls == ["asked", "verb"]
