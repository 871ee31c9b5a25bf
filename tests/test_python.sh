#!/bin/sh
# The Python package ncregions (python/, docs/PYTHON.md): pip-installed
# from this checkout into a cached venv, then its pytest suite
# (python/tests: values against the PyPI netCDF4 wheel, regions, dask,
# bad input).
# usage: test_python.sh SOURCE_DIR BUILD_DIR   (env: PYTHON)
# The venv (numpy, xarray, dask, netCDF4, h5py, pytest, meson-python) is
# made once, under BUILD_DIR/python-venv, from PyPI; no network, pip or
# venv module: skipped (77). The package's own Meson build is kept under
# BUILD_DIR/python-build, so a rerun rebuilds only what changed.
set -u
. "$(dirname "$0")/lib.sh"
src=$1 build=$2

venv="$build/python-venv"
py="$venv/bin/python"
if ! [ -f "$venv/.ready" ]; then
    base=
    for p in "${PYTHON:-}" python3 /usr/bin/python3; do
        [ -n "$p" ] || continue
        if "$p" -m venv --help > /dev/null 2>&1; then base=$p; break; fi
    done
    [ -n "$base" ] || { echo "SKIP: no python3 with the venv module"; exit 77; }
    rm -rf "$venv"
    if ! "$base" -m venv "$venv" > "$tmp/venv.log" 2>&1; then
        echo "SKIP: cannot create a venv with $base:"; tail -3 "$tmp/venv.log"
        rm -rf "$venv"; exit 77
    fi
    if ! timeout 600 "$py" -m pip install --quiet --disable-pip-version-check \
            --only-binary=:all: numpy xarray dask netCDF4 h5py pytest \
            meson-python meson ninja > "$tmp/pip.log" 2>&1; then
        echo "SKIP: pip could not install the test's packages from PyPI:"
        tail -3 "$tmp/pip.log"
        rm -rf "$venv"; exit 77
    fi
    touch "$venv/.ready"
fi
"$py" -c 'import numpy, xarray, dask, netCDF4, pytest, mesonpy' 2>/dev/null ||
    { echo "SKIP: the cached venv $venv is broken; remove it"; exit 77; }

# the package from the checkout: meson-python builds libraster into it
if "$py" -m pip install --quiet --disable-pip-version-check --no-deps \
        --no-build-isolation -Cbuild-dir="$build/python-build" "$src" \
        > "$tmp/install.log" 2>&1; then
    ok
else
    fail "pip install of the checkout"; tail -20 "$tmp/install.log"
    report python; exit 1
fi

# from elsewhere than the checkout: the installed package, not python/
cd "$tmp" || exit 1
if "$py" -m pytest -q -p no:cacheprovider --basetemp="$tmp/pytest" \
        "$src/python/tests" > "$tmp/pytest.log" 2>&1; then
    ok
else
    fail "pytest python/tests"
fi
tail -5 "$tmp/pytest.log"
grep -q ' passed' "$tmp/pytest.log" && ok || fail "pytest ran nothing"
report python
