#!/usr/bin/env bash
# The Python package (python/) tested with pytest in a virtual environment of its own, made from
# Debian's python3-venv with numpy and pytest from PyPI: against the build's libnanoformer.so and
# nanoformer program. Run by ctest as python_package; exit 77 (ctest: skipped, with the reason
# printed) when PyPI cannot be reached to make the environment.
#   scripts/test-python.sh BUILD_DIR
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
venv=$build/python-venv
if [ ! -x "$venv/bin/pytest" ]; then
  python3 -m venv "$venv" || { echo "test-python: skipped: python3 -m venv failed (install python3-venv)"; exit 77; }
  if ! "$venv/bin/pip" install -q setuptools wheel numpy pytest; then
    rm -rf "$venv"
    echo "test-python: skipped: numpy and pytest could not be installed from PyPI (no network?)"
    exit 77
  fi
fi
"$venv/bin/pip" install -q --no-build-isolation --no-deps --force-reinstall "$source_dir/python" > /dev/null
cd "$build"  # not the checkout: the installed package is what is imported
NANOFORMER_LIBRARY=$build/libnanoformer.so NF_CLI=$build/nanoformer NF_SOURCE_DIR=$source_dir \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$source_dir/python/tests"
