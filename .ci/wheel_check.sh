#!/usr/bin/env bash
# The package as a user installs it: build a wheel, install it into a fresh virtual environment, and run
# `xeval tasks` and a tiny `xeval run` from it, outside the checkout (so nothing is read from the source tree).
# Fails when a card, suite or preset is missing from the wheel, or the console script does not work.
#
# To stay fast (seconds), the fresh environment borrows the dependencies of the calling environment (a .pth
# file naming its site-packages) and installs the wheel itself with --no-deps; resolving the dependencies is what
# `.ci/run`'s `pip install -e .` checks. Environment: PYTHON (default python), WHEEL_OUT (default .ci-out/wheel).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-python}
OUT=${WHEEL_OUT:-.ci-out/wheel}
rm -rf "$OUT" && mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset PYTHONPATH XEVAL_TASKS

$PY -m pip wheel -q --no-deps --no-build-isolation "$REPO" -w "$OUT/dist"
rm -rf "$REPO/build"   # setuptools' scratch folder; keep the checkout as it was
# Every data file of the package (cards, suites, presets, tables) is in the wheel: package-data lists them by pattern.
$PY - "$REPO" "$OUT"/dist/xeval-*.whl <<'PY'
import sys, zipfile
from pathlib import Path
repo, wheel = Path(sys.argv[1]), sys.argv[2]
shipped = set(zipfile.ZipFile(wheel).namelist())
data = [p.relative_to(repo).as_posix() for p in (repo / "xeval").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
missing = sorted(set(data) - shipped)
if missing:
    sys.exit(f"wheel-check: package data missing from the wheel (add it to [tool.setuptools.package-data]): {missing}")
PY
$PY -m venv "$OUT/venv"
$PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > \
    "$("$OUT/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/ci-deps.pth"
"$OUT/venv/bin/python" -m pip install -q --no-deps --no-index "$OUT"/dist/xeval-*.whl

cd "$OUT"   # not the checkout: `import xeval` must find the installed wheel
"$OUT/venv/bin/python" - <<'PY'
import xeval, sys
assert sys.prefix in xeval.__file__, f"xeval imported from {xeval.__file__}, not from the wheel install"
PY
"$OUT/venv/bin/xeval" tasks > tasks.txt
# Every committed card and suite is listed by the installed package.
for card in "$REPO"/tasks/*.yaml "$REPO"/tasks/suites/*.yaml; do
    name=$(basename "$card" .yaml)
    grep -qE "^  $name( |$)" tasks.txt || { echo "wheel-check: '$name' missing from the installed 'xeval tasks'" >&2; exit 1; }
done
"$OUT/venv/bin/xeval" pretrain --help > /dev/null
"$OUT/venv/bin/python" -c 'from xeval.engine.config import load_config; [load_config(p) for p in
    ("mlm", "xlm", "xlm-e", "xlm-e-no-trtd", "infoxlm", "veco2", "quickstart")]'

# A tiny run: a locally built 2-layer BERT on a synthetic world's Tatoeba-like task.
"$OUT/venv/bin/xeval" synth --out world > synth.log
"$OUT/venv/bin/python" -c "import sys; sys.path.insert(0, '$REPO/tests/helpers'); from pathlib import Path
from tiny import make_tiny_bert; make_tiny_bert(Path('tiny'))"
"$OUT/venv/bin/xeval" run --model tiny --suite synthetic --data world --tasks synth_tatoeba --out runs \
    --device cpu > run.log
grep -q "synth_tatoeba" run.log
echo "wheel-check: $(ls dist) installs; xeval tasks lists $(grep -c '' tasks.txt) lines; tiny run ok"

# The editable install a developer makes (pip install -e .): tasks/ is mapped into xeval._tasks there too, and the
# same cards are listed from outside the checkout.
EDIT="$OUT/editable"
$PY -m venv --without-pip "$EDIT"   # no setuptools of its own: the build below uses the calling environment's
$PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > \
    "$("$EDIT/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/ci-deps.pth"
$PY -m pip --python "$EDIT/bin/python" install -q --no-deps --no-build-isolation -e "$REPO"
rm -rf "$REPO/build"
(cd "$OUT" && "$EDIT/bin/xeval" tasks > tasks-editable.txt)
grep -q "^task cards ($REPO/tasks):" "$OUT/tasks-editable.txt" || \
    { echo "wheel-check: the editable install does not read $REPO/tasks" >&2; exit 1; }
diff <(tail -n +2 "$OUT/tasks.txt") <(tail -n +2 "$OUT/tasks-editable.txt") || \
    { echo "wheel-check: the editable install lists other cards than the wheel" >&2; exit 1; }
"$EDIT/bin/python" -c "import xeval, pathlib; assert pathlib.Path(xeval.__file__).is_relative_to('$REPO'), xeval.__file__"
echo "wheel-check: editable install lists the same $(grep -c '' "$OUT/tasks-editable.txt") lines"
