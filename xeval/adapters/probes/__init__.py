"""Probe task types (no training): retrieval, heldout, mining, alignment, lexicon, tokenization, neutrality, each on
``base`` (layers, resume, records, options, pooled sentence vectors)."""
