"""XTREME's submission folder (``<task>/test-<lang>.{tsv,json}``): what ``--export-predictions`` writes (``writer``)
and what ``xeval score`` reads and scores like the official scorer (``scorer``)."""
