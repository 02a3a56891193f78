"""Task cards and suites (the YAML of ``tasks/``): what a card is (``card``), where cards are found and how they load
(``catalog``), the task types they name (``types``), XTREME's pipeline quirks (``compat``) and the label-free rule."""
