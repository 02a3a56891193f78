"""``--compat xtreme``: reproduce the quirks of XTREME's published pipeline, for papers that compare against its
tables. The default (``none``) is the correct behaviour; every record names the mode in ``config["compat"]`` and
every table that shows such records says so.

What the mode changes (each a documented behaviour of google-research/xtreme at commit 838c13b and the transformers
commit its ``install_tools.sh`` pins):

- **QA answer text** (``get_final_text``): the predicted span is widened to the whitespace-separated words it
  touches, and the model's de-tokenized subword text is searched in the BERT basic-tokenized words; when it is not
  found, or the two texts do not align character for character, the whole words are the answer. Text without spaces
  between words (Chinese, Japanese, Thai) therefore often answers a whole clause. Default: the predicted characters,
  cut by the tokenizer's offsets.
- **POS chunk types**: seqeval 0.0.x took a chunk's type as the whole tag, so CCONJ and SCONJ are different types;
  seqeval 1.x (the default here, and what ``pip install seqeval`` gives today) reads both as ``CONJ``.
- **XLM-R tagging windows** end in ``</s></s>`` (``utils_tag.py``: ``sep_token_extra`` for RoBERTa-style models),
  one position less for words.
- **Model selection** on English dev at every ``save_steps`` (the cards' ``eval_every``) and on the final weights
  (``--eval_all_checkpoints`` scores the final model too; a tie keeps the earlier checkpoint); no epoch-end
  candidates.
"""

from __future__ import annotations

import unicodedata

from xeval.base.errors import ConfigError

MODES = ("none", "xtreme")
# Recipe fields the mode sets (recorded in each result's recipe like any other field).
# XTREME's RandomSampler draws batches without regard to length: no length grouping.
RECIPES = {"none": {}, "xtreme": {"epoch_end_selection": False, "group_by_length": False}}
# Model families whose tagging windows XTREME closes with two separator tokens.
SEP_TOKEN_EXTRA = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "xmod"})


def check_mode(mode: str | None) -> str:
    mode = mode or "none"
    if mode not in MODES:
        raise ConfigError(f"--compat: expected one of {', '.join(MODES)}, found {mode!r}")
    return mode


def mode_of(ctx) -> str:
    """The compat mode of a run context (``ctx.compat``)."""
    return check_mode(getattr(ctx, "compat", None))


# ------------------------------------------------------------------------------ QA: XTREME's answer text


def _is_whitespace(ch: str) -> bool:
    """SQuAD's ``_is_whitespace`` (the processor that splits a context into ``doc_tokens``)."""
    return ch in " \t\r\n" or ord(ch) == 0x202F


def whole_words(context: str, start: int, end: int) -> str:
    """The whitespace-separated words of ``context`` that characters [start, end) touch, joined by one space
    (``" ".join(example.doc_tokens[orig_doc_start : orig_doc_end + 1])``).

    >>> whole_words("Ann went to 北京大学 yesterday.", 12, 14)
    '北京大学'
    >>> whole_words("Ann went to Paris.", 4, 11)
    'went to'
    """
    words: list[tuple[int, int]] = []
    begin = None
    for i, ch in enumerate(context):
        if _is_whitespace(ch):
            if begin is not None:
                words.append((begin, i))
                begin = None
        elif begin is None:
            begin = i
    if begin is not None:
        words.append((begin, len(context)))
    touched = [w for w in words if w[0] < max(end, start + 1) and w[1] > start]
    if not touched:
        return context[start:end].strip()
    return " ".join(context[a:b] for a, b in words[words.index(touched[0]) : words.index(touched[-1]) + 1])


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    """BERT's rule: ASCII non-alphanumeric symbols count as punctuation, and every Unicode P* character."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    """The CJK Unified Ideographs blocks BERT surrounds with spaces (not Hangul, Hiragana or Katakana)."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokenize(text: str, do_lower_case: bool) -> list[str]:
    """BERT's ``BasicTokenizer.tokenize`` (as in the transformers version XTREME pins): drop NUL, U+FFFD and control
    characters, whitespace to spaces, spaces around CJK ideographs, split on whitespace, lower-case and strip accents
    when ``do_lower_case``, split off every punctuation character.

    >>> basic_tokenize("在北京, Hello World!", False)
    ['在', '北', '京', ',', 'Hello', 'World', '!']
    >>> basic_tokenize("Café", True)
    ['cafe']
    """
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch) or unicodedata.category(ch) == "Zs":
            cleaned.append(" ")
        elif _is_cjk(cp):
            cleaned.append(f" {ch} ")
        else:
            cleaned.append(ch)
    out: list[str] = []
    for token in "".join(cleaned).split():
        if do_lower_case:
            token = "".join(c for c in unicodedata.normalize("NFD", token.lower()) if unicodedata.category(c) != "Mn")
        piece = ""
        for ch in token:
            if _is_punctuation(ch):
                if piece:
                    out.append(piece)
                out.append(ch)
                piece = ""
            else:
                piece += ch
        if piece:
            out.append(piece)
    return out


def _strip_spaces(text: str) -> tuple[str, dict[int, int]]:
    kept, positions = [], {}
    for i, ch in enumerate(text):
        if ch != " ":
            positions[len(kept)] = i
            kept.append(ch)
    return "".join(kept), positions


def get_final_text(pred_text: str, orig_text: str, do_lower_case: bool) -> str:
    """transformers' ``squad_metrics.get_final_text`` (what XTREME's ``run_squad.py`` answers with): find the
    de-tokenized prediction in the basic-tokenized original words and map it back character for character; the whole
    ``orig_text`` when that fails.

    >>> get_final_text("Paris", "(Paris),", False)
    'Paris'
    >>> get_final_text("北京", "他在北京大学读书。", False)  # BERT spaces the ideographs: not found, whole words
    '他在北京大学读书。'
    """
    tok_text = " ".join(basic_tokenize(orig_text, do_lower_case))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1
    orig_ns, orig_map = _strip_spaces(orig_text)
    tok_ns, tok_map = _strip_spaces(tok_text)
    if len(orig_ns) != len(tok_ns):
        return orig_text
    tok_to_ns = {s: ns for ns, s in tok_map.items()}
    if start not in tok_to_ns or tok_to_ns[start] not in orig_map:
        return orig_text
    if end not in tok_to_ns or tok_to_ns[end] not in orig_map:
        return orig_text
    return orig_text[orig_map[tok_to_ns[start]] : orig_map[tok_to_ns[end]] + 1]


def xtreme_answer(tokenizer, token_ids: list[int], context: str, start: int, end: int) -> str:
    """XTREME's answer for a predicted span: tokens ``token_ids`` (start to end token), characters [start, end) of
    ``context``. ``pred_text`` is the tokens de-tokenized by the tokenizer and whitespace-normalised."""
    tokens = tokenizer.convert_ids_to_tokens(token_ids)
    pred_text = " ".join(tokenizer.convert_tokens_to_string(tokens).strip().split())
    return get_final_text(pred_text, whole_words(context, start, end), bool(getattr(tokenizer, "do_lower_case", False)))
