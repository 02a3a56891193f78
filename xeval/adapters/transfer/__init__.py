"""Fine-tuning task types (``tagging``, ``classification``, ``qa``: a ``base.Family`` each), run by ``dispatch`` in
one of the modes ``zero_shot`` (and translate-train), ``few_shot`` or ``probe_mode`` (frozen encoder)."""
