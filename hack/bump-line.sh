#!/usr/bin/env bash
# hack/bump-line.sh 1.X v1.X.Z (make bump-k8s LINE=1.X VERSION=v1.X.Z for an
# older line): move lines/k8s-1.X/go.work to another patch release of its
# minor: the k8s.io/kubernetes replace to v1.X.Z and every staging module's
# to v0.X.Z. The staging list is read from that release's own go.mod, so a
# staging module the line's workspace lacks is named for review rather than
# guessed. The newest line lives in go.mod: hack/bump-k8s.sh moves it.
set -euo pipefail

die() {
	echo "bump-k8s: $*" >&2
	exit 1
}

line=${1:-}
new=${2:-}
work=lines/k8s-${line}/go.work
cd "$(dirname "$0")/.."
[[ -f $work ]] || die "LINE=${line} has no ${work}; the lines are: $(ls lines | sed 's/^k8s-//' | tr '\n' ' ')"
[[ $new =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "VERSION must be a Kubernetes release v${line}.Z (got '${new}')"
[[ 1.${BASH_REMATCH[1]} == "$line" ]] || die "VERSION ${new} is not a release of the ${line} line"
staging_ver=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
go=${GO:-go}

dl=$(GOWORK=off $go mod download -json "k8s.io/kubernetes@${new}" 2>&1) || die "k8s.io/kubernetes@${new} cannot be downloaded: $(head -n1 <<<"$dl")"
upstream_mod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$dl")
[[ -f $upstream_mod ]] || die "no go.mod for k8s.io/kubernetes@${new} in the module cache"

perl -pi -e "s{(k8s\.io/kubernetes => k8s\.io/kubernetes )v1\.[0-9]+\.[0-9]+}{\${1}${new}}" "$work"
while read -r m; do
	if grep -q "^[[:space:]]*${m//./\\.} => " "$work"; then
		perl -pi -e "s{^(\s*\Q${m}\E => \Q${m}\E )v0\.[0-9]+\.[0-9]+}{\${1}${staging_ver}}" "$work"
	else
		echo "bump-k8s: ${m} is a staging module of ${new} that ${work} does not replace; add it if the build needs it"
	fi
done < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// { print $1 }' "$upstream_mod")
echo "bump-k8s: ${work} -> k8s.io/kubernetes ${new}, staging ${staging_ver}"
GOWORK=$PWD/$work $go list -m k8s.io/kubernetes >/dev/null || die "the workspace does not resolve at ${new}; see the error above and ${work}"
echo "bump-k8s: next: read upstream's diff for what the plugins mirror, make test-line K8S=${line}, and the long equivalence runs (docs/releasing.md)"
