"""``xeval run`` as a library: options to a plan of work items to units (``runner``), the checks that fail before any
model loads (``checks``), work split over torchrun ranks and shards with locks (``distributed``), the quickstart."""
