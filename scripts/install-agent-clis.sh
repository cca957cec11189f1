#!/usr/bin/env bash
# Installs the pinned agent CLIs Ballet's runtime adapters drive, under
# <checkout>/.ballet-tools/ (git-ignored), never globally:
#   .ballet-tools/npm/node_modules/.bin/{claude,codex,gemini,opencode}
#   .ballet-tools/aider/bin/aider          (its own virtualenv)
# Idempotent: a stamp file records the pinned set; a changed pin reinstalls.
# The contract tests (tests/runtimes/) find the CLIs there; a worker image puts
# the same two directories on PATH.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${BALLET_TOOLS_DIR:-$here/.ballet-tools}"

# The pins: bump them here (and in docs/runtimes.md) after running tests/runtimes/.
NPM_PACKAGES=(
  "@anthropic-ai/claude-code@2.1.332"
  "@openai/codex@0.171.0"
  "@google/gemini-cli@0.61.0"
  "opencode-ai@1.18.33"
)
AIDER_PACKAGE="aider-chat==0.86.2"

pins="${NPM_PACKAGES[*]} $AIDER_PACKAGE"
stamp="$tools/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
  exit 0
fi
mkdir -p "$tools"

if command -v npm >/dev/null 2>&1; then
  echo "ballet: installing agent CLIs into $tools/npm (first run only, ~1 min): ${NPM_PACKAGES[*]}" >&2
  mkdir -p "$tools/npm"
  [ -f "$tools/npm/package.json" ] || echo '{"name": "ballet-agent-clis", "private": true}' >"$tools/npm/package.json"
  npm install --prefix "$tools/npm" --no-audit --no-fund --save-exact --loglevel=error "${NPM_PACKAGES[@]}" >&2
else
  echo "ballet: npm is not installed, so the claude, codex, gemini and opencode CLIs were not;" \
       "their contract tests will fail. Install Node.js 20+ with npm (e.g. apt-get install nodejs npm)" \
       "and run ./run test again." >&2
  npm_missing=1
fi

python="${BALLET_AIDER_PYTHON:-python3}"
if [ ! -x "$tools/aider/bin/aider" ] || ! "$tools/aider/bin/python" -m pip show aider-chat 2>/dev/null \
     | grep -qx "Version: ${AIDER_PACKAGE#*==}"; then
  echo "ballet: installing $AIDER_PACKAGE into $tools/aider (first run only, ~3 min)" >&2
  "$python" -m venv "$tools/aider"
  "$tools/aider/bin/python" -m pip install --quiet --upgrade pip >&2
  "$tools/aider/bin/python" -m pip install --quiet "$AIDER_PACKAGE" >&2
fi

# Without npm the set is incomplete: no stamp, so the next run tries again.
if [ -z "${npm_missing:-}" ]; then
  echo "$pins" >"$stamp"
fi
