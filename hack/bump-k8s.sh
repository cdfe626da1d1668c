#!/usr/bin/env bash
# hack/bump-k8s.sh vX.Y.Z (make bump-k8s VERSION=vX.Y.Z): move the pinned
# Kubernetes to another patch release of the same minor.
#
#   - go.mod: k8s.io/kubernetes to vX.Y.Z and every staging module
#     (k8s.io/api, client-go, component-helpers, kube-scheduler, ...) to
#     v0.Y.Z, both its replace and its require. The staging list is read
#     from k8s.io/kubernetes@vX.Y.Z's own go.mod, so a staging module new in
#     that release gets its replace too. Then go mod tidy.
#   - the other modules (tools/*, test/alerts): a k8s.io module they pin
#     themselves (a direct require or a replace) moves the same way; the
#     indirect ones are chosen by the tool they build (Helm, Prometheus) and
#     stay as that tool was released.
#   - the tracked text that names the pinned version (README.md, docs/,
#     comments that say which upstream the plugins mirror, the chart's
#     kubectl test image): vOLD becomes vX.Y.Z. CHANGELOG.md keeps its
#     history; the files it changed are listed for review.
#
# The Makefile stamps binaries from go.mod (K8S_VERSION), so nothing there
# names the version. What the script cannot do is the review: read upstream's
# diff between the two patch releases for what the plugins mirror, then run
# the equivalence suites (docs/releasing.md, "Moving to a Kubernetes patch
# release").
set -euo pipefail

die() {
	echo "bump-k8s: $*" >&2
	exit 1
}

new=${1:-}
[[ $new =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] ||
	die "VERSION must be a Kubernetes release vX.Y.Z, e.g. make bump-k8s VERSION=v1.37.2 (got '${new}')"
new_minor=${BASH_REMATCH[1]}
new_staging=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}

cd "$(dirname "$0")/.."
go=${GO:-go}

old=$($go list -m -f '{{.Version}}' k8s.io/kubernetes)
[[ $old =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] ||
	die "go.mod pins k8s.io/kubernetes at '${old}', not a release vX.Y.Z; fix go.mod by hand first"
old_minor=${BASH_REMATCH[1]}
[[ $new_minor == "$old_minor" ]] ||
	die "VERSION ${new} is another minor than the pinned ${old}; this moves patch releases only (a new minor means re-reading upstream's plugins, docs/releasing.md)"
if [[ $new == "$old" ]]; then
	echo "bump-k8s: k8s.io/kubernetes is already at ${new}; nothing to do"
	exit 0
fi

# The release must exist; its go.mod names the staging modules.
dl=$($go mod download -json "k8s.io/kubernetes@${new}" 2>&1) || {
	err=$(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$dl" | head -n1)
	err=${err//\\n\\t/: }
	die "k8s.io/kubernetes@${new} cannot be downloaded: ${err:-$(head -n1 <<<"$dl")}"
}
upstream_mod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$dl")
[[ -f $upstream_mod ]] || die "no go.mod for k8s.io/kubernetes@${new} in the module cache (go mod download said: $(head -n1 <<<"$dl"))"
# (No mapfile: macOS ships bash 3.2.)
staging=()
while read -r m; do staging+=("$m"); done < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// { print $1 }' "$upstream_mod")
((${#staging[@]} > 0)) || die "k8s.io/kubernetes@${new}'s go.mod replaces no staging module; is ${upstream_mod} complete?"

is_staging() {
	local m
	for m in "${staging[@]}"; do [[ $m == "$1" ]] && return 0; done
	return 1
}

# bump_module DIR ALL: go mod edit + tidy in DIR. With ALL, every staging
# module gets a replace (the main module, which builds upstream's commands);
# otherwise only what DIR already pins directly moves.
bump_module() {
	local dir=$1 all=$2 args=() path ver rest
	while read -r path ver rest; do
		if [[ $path == k8s.io/kubernetes && $ver =~ ^v1\.${old_minor}\. ]]; then
			args+=("-require=k8s.io/kubernetes@${new}")
		elif is_staging "$path" && [[ $ver =~ ^v0\.${old_minor}\.[0-9]+$ ]] && { [[ $all == all ]] || [[ $rest != *indirect* ]]; }; then
			args+=("-require=${path}@${new_staging}")
		fi
	done < <(awk '/^require \($/ { in_req = 1; next } in_req && /^\)$/ { in_req = 0 }
		in_req { print } /^require [^(]/ { $1 = ""; print }' "$dir/go.mod")
	while read -r path arrow rpath rver; do
		if is_staging "$path" && [[ $arrow == "=>" && $rpath == "$path" && $rver =~ ^v0\. ]]; then
			args+=("-replace=${path}=${path}@${new_staging}")
		fi
	done < <(awk '/^replace \($/ { in_rep = 1; next } in_rep && /^\)$/ { in_rep = 0 }
		in_rep { print } /^replace [^(]/ { $1 = ""; print }' "$dir/go.mod")
	if [[ $all == all ]]; then
		local m
		for m in "${staging[@]}"; do args+=("-replace=${m}=${m}@${new_staging}"); done
	fi
	((${#args[@]} > 0)) || return 0
	echo "bump-k8s: ${dir}/go.mod -> k8s.io/kubernetes ${new}, staging ${new_staging}; go mod tidy"
	(cd "$dir" && $go mod edit "${args[@]}" && $go mod tidy) ||
		die "go mod tidy failed in ${dir} at ${new}; go.mod and go.sum are half-moved there, git checkout them and see the error above"
}

bump_module . all
for mod in tools/*/go.mod test/*/go.mod; do
	[[ -f $mod ]] && bump_module "$(dirname "$mod")" own
done

# The text naming the pinned version; CHANGELOG.md is history, the go.mod /
# go.sum files are the module graph (done above), this script's test pins
# its own fixture versions.
old_re=${old//./\\.}
while read -r f; do
	perl -pi -e "s/(?<![0-9.])${old_re}(?![0-9])/${new}/g" "$f"
	echo "bump-k8s: ${f}: ${old} -> ${new}"
done < <(git grep -lIP "(?<![0-9.])${old_re}(?![0-9])" -- . \
	':!CHANGELOG.md' ':!*go.mod' ':!*go.sum' ':!**/testdata/**' ':!hack/bump_k8s_test.go' || true)
echo "bump-k8s: k8s.io/kubernetes ${old} -> ${new}. Next: read upstream's diff for what the plugins mirror, add a CHANGELOG entry, run the equivalence suites (docs/releasing.md)"
