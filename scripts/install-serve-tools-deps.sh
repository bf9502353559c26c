#!/usr/bin/env bash
# Installs what the serving scripts of tools/serve/ need on top of the build dependencies:
# Debian's Chromium, which tools/serve/browser_check.py drives headless. (Their Python packages,
# openai and websocket-client, come with scripts/install-python.sh.) Idempotent, like
# install-deps.sh (which does the work). `make test` needs none of it.
set -euo pipefail
exec bash "$(dirname "$0")/install-deps.sh" chromium
