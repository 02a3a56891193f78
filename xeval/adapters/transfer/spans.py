"""Answer spans of extractive QA, shared by QA fine-tuning (``xeval.adapters.transfer.qa``) and probe mode
(``xeval.adapters.transfer.probe_mode``): the ``Window`` a context is cut into, the gold answer as token positions
of a window (``answer_span``, ``token_span``: training labels), which window gives a token its maximum context
(``mark_max_context``), and the best predicted span of a window (``best_span``), as XTREME's ``run_squad.py``
decodes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Window:
    """One window of one example: model inputs plus what decoding needs."""

    example: int  # index into the example list
    input_ids: list[int]
    attention_mask: list[int]
    token_type_ids: list[int] | None
    offsets: list[tuple[int, int] | None]  # character span in the context per token; None outside the context
    max_context: list[bool]  # per token: this window gives the token its maximum context
    context_start: int = 0  # position of the window's first context token in the whole tokenized context


def answer_span(example) -> tuple[int, int] | None:
    """Character span [start, end) of the first gold answer (found by text when the file gives no start)."""
    if not example.answers:
        return None
    answer = example.answers[0]
    start = answer.start
    if start < 0 or example.context[start : start + len(answer.text)] != answer.text:
        start = example.context.find(answer.text)
    if start < 0 or not answer.text:
        return None
    return start, start + len(answer.text)


def token_span(offsets: list, char_start: int, char_end: int) -> tuple[int, int]:
    """Token positions of the first and last token overlapping [char_start, char_end), or (0, 0) ([CLS]) when the
    window does not contain the whole answer."""
    inside = [t for t, o in enumerate(offsets) if o is not None]
    if not inside or offsets[inside[0]][0] > char_start or offsets[inside[-1]][1] < char_end:
        return 0, 0
    start = next(t for t in inside if offsets[t][1] > char_start)
    end = next(t for t in reversed(inside) if offsets[t][0] < char_end)
    return start, max(start, end)


def mark_max_context(wins: list[Window]) -> None:
    """run_squad.py's ``_new_check_is_max_context``: a token seen by several windows counts only in the window
    where min(tokens to its left, tokens to its right) + 0.01 * window length is largest (first such window).

    Tokens are identified by their position in the tokenized context, as XTREME does, not by their character
    offsets: byte-fallback and SentencePiece tokenizers give several tokens the same offsets (the 3 byte tokens
    of one CJK character, a lone "▁" before a character)."""
    best: dict[tuple[int, int], tuple[float, int]] = {}
    seen: dict[tuple[int, int], tuple[int, int]] = {}
    for k, win in enumerate(wins):
        inside = [t for t, o in enumerate(win.offsets) if o is not None]
        n = len(inside)
        for i, t in enumerate(inside):
            key = (win.example, win.context_start + i)
            if seen.setdefault(key, win.offsets[t]) != win.offsets[t]:  # the tokenizer's windows are not slices
                raise RuntimeError(f"QA windows of example {win.example}: context token {key[1]} has offsets "
                                   f"{seen[key]} in one window and {win.offsets[t]} in another")
            score = min(i, n - 1 - i) + 0.01 * n
            if key not in best or score > best[key][0]:
                best[key] = (score, k)
    for k, win in enumerate(wins):
        flags, i = [], 0
        for o in win.offsets:
            flags.append(o is not None and best[(win.example, win.context_start + i)][1] == k)
            i += o is not None
        win.max_context = flags


def best_span(win: Window, start_logits: list[float], end_logits: list[float], n_best: int, max_answer: int):
    """(score, (char start, char end), (start token, end token)) of the best valid span in one window, or None."""

    def top(values):
        return sorted(range(len(values)), key=values.__getitem__, reverse=True)[:n_best]  # no Python-level key call

    found = None
    for s in top(start_logits):
        if win.offsets[s] is None or not win.max_context[s]:
            continue
        for e in top(end_logits):
            if win.offsets[e] is None or e < s or e - s + 1 > max_answer:
                continue
            score = start_logits[s] + end_logits[e]
            if found is None or score > found[0]:
                found = (score, (win.offsets[s][0], win.offsets[e][1]), (s, e))
    return found
