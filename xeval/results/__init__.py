"""Result records and where they live: the unit and its identity, provenance, the on-disk and in-memory stores,
per-example outcomes, controls (random-init twins) and the choice of a layer from records."""
