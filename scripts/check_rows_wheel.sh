#!/bin/sh
# The ubunye-rows wheel in DIST, installed into a fresh venv from that folder alone (a wheel, no
# sdist, no index), passes the rows-v1 conformance suite (tests/unit/test_conformance_arrow.py and
# tests/unit/test_conformance_pandas.py) on its native kernel: a missing kernel's warning is an error.
# The release workflow runs it on each platform's wheel. POSIX sh, for Alpine's too.
#   sh scripts/check_rows_wheel.sh DIST        (PYTHON names the interpreter; default python)
set -eu
[ $# -eq 1 ] || { echo "usage: sh scripts/check_rows_wheel.sh DIST" >&2; exit 2; }
dist="$(cd "$1" && pwd)"
tests="$(cd "$(dirname "$0")/../tests" && pwd)"
work="$(mktemp -d)"
"${PYTHON:-python}" -m venv "$work/venv"
bin="$work/venv/bin"
[ -d "$work/venv/Scripts" ] && bin="$work/venv/Scripts"
"$bin/python" -m pip install --quiet --no-index --no-deps --only-binary :all: \
    --find-links "$dist" ubunye-rows
# Its dependencies (pyarrow, numpy) and the suite's (pytest, pandas), from the index.
"$bin/python" -m pip install --quiet ubunye-rows pytest pandas
cp "$tests/unit/test_conformance_arrow.py" "$tests/unit/test_conformance_pandas.py" "$work/"
cd "$work"
"$bin/python" -m pytest -p no:cacheprovider \
    -W error::ubunye_rows.hashing.native.KernelMissingWarning \
    -W ignore::pytest.PytestUnknownMarkWarning \
    test_conformance_arrow.py test_conformance_pandas.py
