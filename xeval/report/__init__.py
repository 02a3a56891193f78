"""Reports for papers and CI, built from result records (``xeval.results.store``).

    frame.py           records -> one tidy pandas frame; seeds averaged; which metric is a task's headline and
                       which way is better
    tables/base.py     ``Table`` and ``Results`` (one split per task, one layer per probe), shared by every table
    tables/*_table.py  one table each: per-language, the XTREME summary (XLM-E's main-table layout), transfer
                       gaps, layer sweeps, typology, tokenizer, neutrality; correlation.py, uncertainty.py (CIs)
    build.py           ``--table NAME`` -> the table module that builds it
    formats/           Markdown (GitHub), LaTeX (booktabs, compiles as is), CSV; render.py picks one by name
    plots.py           layer sweep, per-language bars, transfer-gap comparison, ... (PNG + PDF)
    stats.py           bootstrap intervals and paired tests over per-example outcomes
    gate.py            baseline files and the regression gate behind ``xeval compare``
    console_tables.py  the plain-text tables ``xeval run`` prints as each task ends
"""
