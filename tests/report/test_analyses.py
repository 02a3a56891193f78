"""report --table typology / correlation on hand-made records whose answers are computed by hand, the shipped
typology table's facts, and the correlation plot."""

import pytest

from tests.helpers.report_records import rec, write_run
from xeval.cli import main
from xeval.data.typology import base_language, flores_code, language_for_flores, typology
from xeval.report import plots
from xeval.report.build import build
from xeval.report.tables.base import Results
from xeval.report.tables.correlation import correlation_table
from xeval.report.tables.typology_table import typology_tables
from xeval.results.store import load_records

XNLI = {"en": 80.0, "de": 70.0, "fr": 74.0, "hi": 50.0, "ja": 40.0, "qaa": 60.0}  # gaps: de 10, fr 6, hi 30, ja 40
TATOEBA = {"de": 60.0, "fr": 70.0, "hi": 20.0, "ja": 10.0}  # the same order as XNLI's scores


def records(model="alpha@aaaaaaaaaaaa", shift=0.0):
    out = [rec(model, "xnli", lang, {"accuracy": v + shift}) for lang, v in XNLI.items()]
    for layer, bump in ((0, 0.0), (1, 5.0)):
        out += [rec(model, "tatoeba", lang, {"accuracy": v + bump}, layer=layer) for lang, v in TATOEBA.items()]
    out.append(rec(model, "alignment", "de-en", {"aer": 30.0}, layer=1))  # one language: too few for a ρ
    return out


def test_typology_facts():
    facts = typology()
    assert facts.at["ja", "word_order"] == "SOV" and facts.at["tl", "word_order"] == "VSO"
    assert facts.at["de", "word_order"] == "ND" and facts.at["en", "word_order"] == "SVO"
    assert facts.at["eu", "family"] == "isolate" and facts.at["fi", "family"] == "Uralic"
    assert facts.at["ko", "script"] == "Hang" and facts.at["zh-Hant", "script"] == "Hant"
    assert set(facts["word_order"]) <= {"SOV", "SVO", "VSO", "VOS", "OVS", "OSV", "ND"}
    # every language of the shipped cards has a row
    from xeval.cards.catalog import list_cards, load_card

    langs = {base_language(x) for name in list_cards() if not name.startswith("synth")
             for x in load_card(name).languages}
    assert langs <= set(facts.index), sorted(langs - set(facts.index))
    assert base_language("en-de") == base_language("de-en") == "de" and base_language("zh-Hant") == "zh-Hant"
    assert flores_code("de-en") == "deu_Latn" and language_for_flores("zho_Hant") == "zh-Hant"


def test_typology_table_by_hand():
    (table,) = typology_tables(Results(records()))
    m = table.mean
    assert m.at[("family (Glottolog)", "Indo-European"), "XNLI"] == pytest.approx((10 + 6 + 30) / 3)
    assert m.at[("family (Glottolog)", "Indo-European"), "n xnli"] == 3
    assert m.at[("family (Glottolog)", "Japonic"), "XNLI"] == 40
    assert m.at[("script (ISO 15924)", "Latn"), "XNLI"] == 8 and m.at[("script (ISO 15924)", "Latn"), "n xnli"] == 2
    assert m.at[("word order (WALS 81A)", "SOV"), "XNLI"] == 35
    assert m.at[("word order (WALS 81A)", "ND"), "XNLI"] == 10
    assert any("qaa" in note for note in table.notes)  # not in the table: named, left out
    # probes have a per-language "gap" too when English is there; here they have no English: no column
    assert "tatoeba" not in " ".join(map(str, m.columns))


def test_correlation_by_hand(tmp_path):
    table = correlation_table(Results(records()))
    m = table.mean
    score = m.loc[("alpha", "tatoeba (accuracy)", "xnli zero-shot score")]
    gap = m.loc[("alpha", "tatoeba (accuracy)", "xnli gap")]
    assert score["Spearman rho"] == pytest.approx(1.0) and gap["Spearman rho"] == pytest.approx(-1.0)
    assert score["n languages"] == 4  # qaa has no probe score, en is the source
    assert score["95% CI low"] <= 1.0 <= score["95% CI high"] + 1e-12
    assert not any("alignment" in ix[1] for ix in m.index)  # one language pair: below 3 languages
    # two models: a row each and a pooled row over their 8 (model, language) points
    two = correlation_table(Results(records() + records("beta@bbbbbbbbbbbb", shift=-1.0)))
    pooled = two.mean.loc[("pooled", "tatoeba (accuracy)", "xnli zero-shot score")]
    assert pooled["n languages"] == 8 and 0.8 < pooled["Spearman rho"] <= 1.0
    # the CLI and the scatter plot
    run = write_run(tmp_path / "runs", records())
    assert main(["report", str(run), "--table", "correlation", "--plot", "correlation", "--figures",
                 str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "correlation.png").stat().st_size > 5000
    assert main(["report", str(run), "--table", "typology", "--format", "csv"]) == 0
    results = Results(load_records([run]))
    assert {t.key for t in build(results, "all")} >= {"correlation", "typology:alpha"}
    assert plots.plot(results, "correlation", tmp_path / "c.pdf")[1].suffix == ".pdf"
