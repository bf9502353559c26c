#!/usr/bin/env bash
# Installs what `make fuzz` needs on top of the build dependencies: Debian's clang 14 with its
# libFuzzer and sanitizer runtimes (libclang-rt-14-dev) and its OpenMP (libomp-14-dev).
# Idempotent, like install-deps.sh (which does the work).
set -euo pipefail
exec bash "$(dirname "$0")/install-deps.sh" clang-14 libclang-rt-14-dev libomp-14-dev
