"""Reports for papers and CI, built from result records (``xeval.results.store``).

    frame.py    records -> one tidy pandas frame; seeds averaged; which metric is a task's headline and
                which way is better
    tables.py   per-language tables, the XTREME summary (XLM-E's main-table layout), transfer gaps, layer sweeps
    render.py   Markdown (GitHub), LaTeX (booktabs, compiles as is), CSV
    plots.py    layer sweep, per-language bars, transfer-gap comparison (PNG + PDF)
    compare.py  baseline files and the regression gate behind ``xeval compare``
"""
