#!/usr/bin/env bash
# readme-check: what a new user does. Clones the repository (its committed
# state) into a temporary directory, runs `make install` there with GOBIN
# inside it, and runs every command of the README's code blocks marked
# <!-- readme-check -->, in order, exactly as written, from the clone's top
# directory. Stops at the first command that fails.
#   scripts/readme-check.sh [KEEP_DIR]
set -euo pipefail
top=$(git rev-parse --show-toplevel)
work=${1:-$(mktemp -d)}
clone="$work/picasso"
rm -rf "$clone"
git clone --quiet "$top" "$clone"
cd "$clone"
export GOBIN="$work/bin" PATH="$work/bin:$PATH"
make install >/dev/null
command -v picasso >/dev/null || { echo "readme-check: make install left no picasso on PATH"; exit 1; }

# The commands: lines of the fenced blocks that follow a marker line, with
# trailing comments removed.
mapfile -t cmds < <(awk '
  /<!-- readme-check -->/ { armed = 1; next }
  armed && /^```/ { if (inblock) { inblock = 0; armed = 0 } else { inblock = 1 }; next }
  inblock && NF { sub(/[ \t]+#.*$/, ""); print }
' README.md)
[ "${#cmds[@]}" -gt 0 ] || { echo "readme-check: no marked commands in README.md"; exit 1; }
for c in "${cmds[@]}"; do
  printf '\n$ %s\n' "$c"
  bash -c "$c" || { echo "readme-check: FAILED: $c"; exit 1; }
done
printf '\nreadme-check: %d commands of README.md ran in a fresh clone (%s)\n' "${#cmds[@]}" "$clone"
