#!/usr/bin/env bash
# Installs what is missing, builds Loom and runs the flagship example: the
# attention app (FlashAttention-style fusion derived from plain attention).
# Only the demo and what it links are built, not the test suite.
# Environment: as for scripts/test.sh. Extra arguments go to the demo
# (attention_demo --help lists them; --quick is a small size).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

loom_install_deps
loom_configure
loom_build attention_demo

demo="$LOOM_BUILD_DIR/apps/attention/attention_demo"
if [ ! -x "$demo" ]; then
    echo "error: $demo was not built (is LOOM_BUILD_APPS on?)" >&2
    exit 1
fi
loom_log "running $demo"
exec "$demo" "$@"
