#!/usr/bin/env bash
# Regenerates the deep copies of apis/ in a temporary copy of ROOT (default:
# this repository) and fails, naming the first stale file, when they differ
# from the committed ones: a type changed without make generate.
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/hack"
cp "$root/go.mod" "$root/go.sum" "$tmp/"
cp "$root/hack/boilerplate.go.txt" "$tmp/hack/"
cp -R "$root/apis" "$tmp/apis"
find "$tmp/apis" -name zz_generated.deepcopy.go -delete
(cd "$tmp" && GOWORK=off go tool deepcopy-gen --go-header-file hack/boilerplate.go.txt \
	--output-file zz_generated.deepcopy.go ./apis/...)
for f in $( (cd "$root" && find apis -name zz_generated.deepcopy.go); (cd "$tmp" && find apis -name zz_generated.deepcopy.go)); do
	if ! cmp -s "$root/$f" "$tmp/$f"; then
		echo "$f is stale: run make generate" >&2
		exit 1
	fi
done
