#!/usr/bin/env bash
# Fails when a workflow's `uses:` names an action by a tag or branch, which
# its owner can move: every action is pinned by its full commit SHA, the tag
# it stands for in a comment (uses: owner/repo@<40 hex> # vX.Y.Z).
# Actions of this repository (uses: ./path) go with the commit and pass.
#
#	hack/check-action-pins.sh .github/workflows/*.yml
set -euo pipefail
(($# > 0)) || { echo "usage: $0 WORKFLOW.yml..." >&2; exit 2; }
status=0
for f in "$@"; do
	while IFS= read -r hit; do
		echo "$f:$hit: pin the action by its full commit SHA with the tag in a comment (uses: owner/repo@<40 hex> # vX.Y.Z)" >&2
		status=1
	done < <(grep -nE '^[[:space:]]*(-[[:space:]]+)?uses:' "$f" |
		grep -vE 'uses:[[:space:]]+(\./[^[:space:]]+|[^@[:space:]]+@[0-9a-f]{40}[[:space:]]+#[[:space:]]*[^[:space:]].*)$' || true)
done
exit "$status"
