# placement-scheduler entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO         ?= go

# Kubernetes lines (docs/compatibility.md): one build per supported minor,
# all from this tree. K8S picks the line; the newest is the default and
# builds from go.mod; an older one builds the same packages from
# lines/k8s-$(K8S)/go.work (every k8s.io module at that minor) with the build
# tag k8s$(K8S), which selects that minor's files (internal/k8sline and the
# plugins' minor_*.go). The chart's list of lines must match K8S_LINES.
K8S_LINES  := 1.35 1.36 1.37
K8S_NEWEST := $(lastword $(K8S_LINES))
K8S        ?= $(K8S_NEWEST)
ifeq ($(filter $(K8S),$(K8S_LINES)),)
$(error K8S=$(K8S) is not a supported line; use one of: $(K8S_LINES))
endif
# Line-independent tools (Helm, krew, benchstat, the SBOM tool) live in
# bin/; each line's binaries and control plane in its own folder: bin/ for
# the newest, bin/k8s-<minor>/ for an older one. MANIFESTS is the line's
# kustomization (manifests/ or its overlay manifests/lines/k8s-<minor>/).
TOOLBIN := $(CURDIR)/bin
ifeq ($(K8S),$(K8S_NEWEST))
BIN       := $(CURDIR)/bin
LINE_DEPS := go.mod go.sum
MANIFESTS := manifests
export GOWORK := off
else
BIN       := $(CURDIR)/bin/k8s-$(K8S)
LINE_DEPS := go.mod go.sum lines/k8s-$(K8S)/go.work lines/k8s-$(K8S)/go.work.sum
MANIFESTS := manifests/lines/k8s-$(K8S)
export GOWORK := $(CURDIR)/lines/k8s-$(K8S)/go.work
export GOFLAGS := $(strip $(shell GOWORK=off $(GO) env GOFLAGS) -tags=k8s$(K8S))
endif
# Tools built from their own modules (tools/*, test/alerts) ignore the line,
# and so do the release's packers (hack/image, hack/krew, hack/kustomize):
# built once from go.mod, not once per line.
TOOLGO := GOWORK=off GOFLAGS='$(shell GOWORK=off $(GO) env GOFLAGS)' $(GO)
VERSION    ?= v0.1.0-dev
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# The commit's time, not the clock's: the same tree links the same binary,
# so go build's cache can tell a rebuild is not needed (make run relinks
# nothing when nothing changed).
BUILD_DATE := $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || echo unknown)
# The Kubernetes version we embed, stamped where upstream stamps it: the
# component-base version decides the binary's feature-gate set, so it must be
# the real one (see cmd/scheduler/main.go).
k8s-version = $(shell GOWORK=$(if $(filter $(1),$(K8S_NEWEST)),off,$(CURDIR)/lines/k8s-$(1)/go.work) $(GO) list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes)
K8S_VERSION := $(call k8s-version,$(K8S))
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION)))
LDFLAGS := -X main.version=$(VERSION) -X main.gitCommit=$(GIT_COMMIT) -X main.buildDate=$(BUILD_DATE) $(K8S_LDFLAGS)

# envtest finds kube-apiserver and etcd here; scheduler_perf finds etcd on PATH.
export KUBEBUILDER_ASSETS := $(BIN)
export PLACEMENT_SCHEDULER_BIN := $(BIN)/placement-scheduler
export PLACEMENT_ENFORCER_BIN := $(BIN)/placement-enforcer
export PLACEMENT_HELM := $(TOOLBIN)/helm
export PLACEMENT_HELM3 := $(TOOLBIN)/helm3

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

# Static (no cgo), as upstream builds kube-scheduler: the image has no libc,
# and `make image` ships this very binary, the one the integration tests run.
.PHONY: build
build: ## Build bin/placement-scheduler, bin/placement-enforcer and bin/kubectl-placement (static).
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/placement-scheduler ./cmd/scheduler
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/placement-enforcer ./cmd/enforcer
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/kubectl-placement ./cmd/kubectl-placement

# The container image, assembled by hack/image without Docker or network;
# IMAGE is the reference recorded in the tarball (push it with crane, skopeo
# or docker load + docker push; see README).
#
# `make image`: one OCI image index for linux/amd64 and linux/arm64
# (PLATFORMS), cross-built into bin/linux-<arch>/, as an OCI layout tarball.
# `make image-single`: one image as a `docker save` tarball; for the build
# host's architecture it packs bin/placement-scheduler itself, the binary
# the integration tests run (IMAGE_ARCH=arm64 etc. cross-build).
IMAGE           ?= ghcr.io/placement-scheduler/placement-scheduler:$(VERSION)-k8s$(K8S)
PLATFORMS       ?= amd64 arm64
IMAGE_INDEX_TAR ?= $(BIN)/placement-scheduler-image-index.tar
GO_HOST         := $(shell $(GO) env GOOS GOARCH)
IMAGE_ARCH      ?= $(word 2,$(GO_HOST))
IMAGE_TAR       ?= $(BIN)/placement-scheduler-image.tar
ifeq ($(GO_HOST),linux $(IMAGE_ARCH))
IMAGE_BIN  := $(BIN)/placement-scheduler
IMAGE_TOOL := $(BIN)/kubectl-placement
IMAGE_ENFORCER := $(BIN)/placement-enforcer
else
IMAGE_BIN  := $(BIN)/linux-$(IMAGE_ARCH)/placement-scheduler
IMAGE_TOOL := $(BIN)/linux-$(IMAGE_ARCH)/kubectl-placement
IMAGE_ENFORCER := $(BIN)/linux-$(IMAGE_ARCH)/placement-enforcer
endif
IMAGE_META = -version $(VERSION) -kubernetes $(K8S_VERSION) -revision $$(git rev-parse HEAD 2>/dev/null || echo unknown) \
	-created $$(git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
comma := ,
empty :=
space := $(empty) $(empty)

.PHONY: image
image: ## Build the multi-arch image index tarball bin/placement-scheduler-image-index.tar (IMAGE=repo:tag, PLATFORMS="amd64 arm64"); no Docker needed.
	for arch in $(PLATFORMS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/linux-$$arch/placement-scheduler ./cmd/scheduler; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/linux-$$arch/kubectl-placement ./cmd/kubectl-placement; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/linux-$$arch/placement-enforcer ./cmd/enforcer; done
	$(TOOLGO) run ./hack/image -image $(IMAGE) -out $(IMAGE_INDEX_TAR) $(IMAGE_META) -index \
		$(subst $(space),$(comma),$(foreach a,$(PLATFORMS),$(a)=$(BIN)/linux-$(a)/placement-scheduler+$(BIN)/linux-$(a)/kubectl-placement+$(BIN)/linux-$(a)/placement-enforcer))

.PHONY: image-single
image-single: build ## Build the single-arch image tarball bin/placement-scheduler-image.tar (IMAGE_ARCH=arm64 to cross-build).
	if [ "$(IMAGE_BIN)" != "$(BIN)/placement-scheduler" ]; then \
		CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_BIN) ./cmd/scheduler; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_TOOL) ./cmd/kubectl-placement; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_ENFORCER) ./cmd/enforcer; fi
	$(TOOLGO) run ./hack/image -binary $(IMAGE_BIN) -tool $(IMAGE_TOOL) -tool $(IMAGE_ENFORCER) -arch $(IMAGE_ARCH) -image $(IMAGE) -out $(IMAGE_TAR) $(IMAGE_META)

# The control plane, built from the module graph (go.mod `tool` directives),
# never downloaded, in two parts so each target builds only what it runs:
#   controlplane-envtest  kube-apiserver, etcd, kubectl: test/framework's
#                         envtest control plane (integration and reliability
#                         tests) and the installs it runs with kubectl;
#   controlplane-cluster  those plus kube-controller-manager, the upstream
#                         kube-scheduler and KWOK (v0.8.0, built against our
#                         pinned staging modules): the full cluster of
#                         `make run`, `make demo` and test/examples.
# `controlplane` is both. The first compile is long (it compiles Kubernetes,
# kube-controller-manager the largest). Each binary is a file
# target: its sources are modules that go.sum pins, so it is rebuilt only
# when go.mod or go.sum is newer (or the file is missing), and a second
# `make run` links none of them. After changing the Go toolchain, remove
# bin/ (or `make -B controlplane`).
CONTROLPLANE_ENVTEST := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kubectl
CONTROLPLANE_CLUSTER := $(CONTROLPLANE_ENVTEST) $(BIN)/kube-controller-manager $(BIN)/kube-scheduler $(BIN)/kwok

# go build leaves an up-to-date binary untouched; touch makes its time say
# when it was last checked against go.mod and go.sum.
$(BIN)/etcd: $(LINE_DEPS)
	$(GO) build -o $@ go.etcd.io/etcd/server/v3
	@touch $@
# kube-apiserver is stamped with the pinned version, as a release is:
# unstamped it reports v0.0.0-master, and the chart's kubeVersion guard
# (which `helm install` checks against the apiserver) would refuse it.
$(BIN)/kube-apiserver: $(LINE_DEPS)
	$(GO) build -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@
$(BIN)/kubectl: $(LINE_DEPS)
	$(GO) build -o $@ k8s.io/kubernetes/cmd/kubectl
	@touch $@
$(BIN)/kube-controller-manager: $(LINE_DEPS)
	$(GO) build -o $@ k8s.io/kubernetes/cmd/kube-controller-manager
	@touch $@
$(BIN)/kube-scheduler: $(LINE_DEPS)
	$(GO) build -o $@ k8s.io/kubernetes/cmd/kube-scheduler
	@touch $@
# KWOK builds from the line's module graph, except where no served KWOK
# builds against that minor's modules (lines/k8s-1.35/go.work says why):
# then from a copy of the line's workspace with KWOK_REPLACE_<line>'s
# replaces added, for KWOK alone.
KWOK_REPLACE_1.35 := k8s.io/cri-api=k8s.io/cri-api@v0.36.3 k8s.io/cri-client=k8s.io/cri-client@v0.36.3
KWOK_REPLACE := $(KWOK_REPLACE_$(K8S))
$(BIN)/kwok: $(LINE_DEPS)
ifeq ($(KWOK_REPLACE),)
	$(GO) build -o $@ sigs.k8s.io/kwok/cmd/kwok
else
	mkdir -p $(BIN)/kwok-work
	cp lines/k8s-$(K8S)/go.work $(BIN)/kwok-work/go.work
	cp lines/k8s-$(K8S)/go.work.sum $(BIN)/kwok-work/go.work.sum
	$(GO) work edit -dropuse=../.. -use=$(CURDIR) $(foreach r,$(KWOK_REPLACE),-replace=$(r)) $(BIN)/kwok-work/go.work
	GOWORK=$(BIN)/kwok-work/go.work $(GO) build -o $@ sigs.k8s.io/kwok/cmd/kwok
endif
	@touch $@

.PHONY: etcd
etcd: $(BIN)/etcd ## Build bin/etcd (scheduler_perf, in test/perf and make bench, starts its own from PATH).

.PHONY: controlplane-envtest
controlplane-envtest: $(CONTROLPLANE_ENVTEST) ## Build bin/{kube-apiserver,etcd,kubectl}: envtest's control plane (integration, reliability tests).

.PHONY: controlplane-cluster
controlplane-cluster: $(CONTROLPLANE_CLUSTER) ## Add bin/{kube-controller-manager,kube-scheduler,kwok}: the full cluster (make run, make demo, test/examples).

.PHONY: controlplane
controlplane: controlplane-cluster ## Build the whole control plane into bin/ (controlplane-envtest + controlplane-cluster).

# Moving to another Kubernetes patch release (docs/releasing.md): go.mod's
# k8s.io/kubernetes and every staging module, go mod tidy, and the docs that
# name the pinned version; K8S_VERSION above follows go.mod by itself.
.PHONY: bump-k8s
bump-k8s: ## Move one line to a patch release (VERSION=vX.Y.Z required; LINE=1.36 for an older line, default the newest: go.mod, go mod tidy, the docs naming it).
	@if [ -n '$(LINE)' ] && [ '$(LINE)' != '$(K8S_NEWEST)' ]; then \
		hack/bump-line.sh '$(LINE)' '$(if $(filter file,$(origin VERSION)),,$(VERSION))'; \
	else hack/bump-k8s.sh '$(if $(filter file,$(origin VERSION)),,$(VERSION))'; fi

# The scheduler config `make run` and `make demo` run placement-scheduler
# with: the shipped profile plus the profile-pool example's second profile,
# as the line has it (an older line's folder overrides the example).
RUN_CONFIG ?= $(if $(filter $(K8S),$(K8S_NEWEST)),manifests,$(MANIFESTS))/examples/profile-pool/scheduler-config.yaml

# Helm from its own module (tools/helm/go.mod): its dependencies are newer
# than ours, so it stays out of the main module graph. Stamped with the
# module's version so `helm version` tells the truth.
HELM_VERSION := $(shell cd tools/helm && $(TOOLGO) list -m -f '{{.Version}}' helm.sh/helm/v4)
.PHONY: helm
helm: ## Build bin/helm from tools/helm/go.mod.
	cd tools/helm && CGO_ENABLED=0 $(TOOLGO) build -trimpath -ldflags '-X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)' -o $(TOOLBIN)/helm helm.sh/helm/v4/cmd/helm

# Helm 3 (tools/helm3/go.mod), which users still run: the chart is linted and
# rendered with it too. Stamped as Helm's own release build stamps it: its
# version, and the Kubernetes version of its client-go as the default
# .Capabilities.KubeVersion (unstamped, Helm 3 would say v1.20.0).
HELM3_VERSION := $(shell cd tools/helm3 && $(TOOLGO) list -m -f '{{.Version}}' helm.sh/helm/v3)
HELM3_K8S_MINOR := $(word 2,$(subst ., ,$(shell cd tools/helm3 && $(TOOLGO) list -m -f '{{.Version}}' k8s.io/client-go)))
HELM3_LDFLAGS := -X helm.sh/helm/v3/internal/version.version=$(HELM3_VERSION) \
	$(foreach p,chartutil lint/rules,-X helm.sh/helm/v3/pkg/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$(p).k8sVersionMinor=$(HELM3_K8S_MINOR))
.PHONY: helm3
helm3: ## Build bin/helm3 from tools/helm3/go.mod.
	cd tools/helm3 && CGO_ENABLED=0 $(TOOLGO) build -trimpath -ldflags '$(HELM3_LDFLAGS)' -o $(TOOLBIN)/helm3 helm.sh/helm/v3/cmd/helm

.PHONY: run
run: build controlplane-cluster ## Start a local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK) and placement-scheduler; Ctrl-C stops all.
	$(GO) build -o $(BIN)/devcluster ./hack/devcluster
	$(BIN)/devcluster -scheduler $(BIN)/placement-scheduler -enforcer $(BIN)/placement-enforcer -config $(RUN_CONFIG) -dir .run -- $(ARGS)

.PHONY: demo
demo: build controlplane-cluster ## make run's cluster, a node fleet and every manifests/examples scenario applied and checked; prints the placement table.
	$(GO) build -o $(BIN)/devcluster ./hack/devcluster
	$(BIN)/devcluster -scheduler $(BIN)/placement-scheduler -enforcer $(BIN)/placement-enforcer -config $(RUN_CONFIG) -dir .run/demo -demo

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -s -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')

.PHONY: fmt-check
fmt-check: ## Fail if any Go file is not gofmt'ed.
	@out=$$(gofmt -s -l $$(find . -name '*.go' -not -path './bin/*' -not -path './.run/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The deep copies of the API types in apis/ are generated by deepcopy-gen
# (a tool of go.mod); verify-generated regenerates them in a temporary copy
# and fails when a committed one is stale.
.PHONY: generate
generate: ## Write apis/*/*/zz_generated.deepcopy.go.
	GOWORK=off $(GO) tool deepcopy-gen --go-header-file hack/boilerplate.go.txt --output-file zz_generated.deepcopy.go ./apis/...

.PHONY: verify-generated
verify-generated: ## Fail when a generated deep copy in apis/ is stale.
	hack/verify-generated.sh

.PHONY: vet
vet: ## go vet every package.
	$(GO) vet ./...

# The chart's own checks: helm lint (strict: warnings fail too), with the
# defaults, with the namespace rendered and with monitoring on, by Helm 4
# and by Helm 3.
.PHONY: lint-chart
lint-chart: helm helm3 ## helm lint charts/placement-scheduler, with Helm 4 and Helm 3.
	for h in $(TOOLBIN)/helm $(TOOLBIN)/helm3; do \
		$$h lint --strict charts/placement-scheduler; \
		$$h lint --strict charts/placement-scheduler --set namespace.create=true; \
		$$h lint --strict charts/placement-scheduler --set monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.grafanaDashboard.enabled=true; \
	done

# The workflows' checks: every action pinned by its commit SHA
# (hack/check-action-pins.sh), then actionlint, built from its own module
# (tools/actionlint/go.mod). actionlint checks the `run:` scripts with
# shellcheck when one is on PATH (GitHub's runners have it) and says so when
# not; pyflakes is off (no workflow runs Python).
.PHONY: actionlint
actionlint: ## Build bin/actionlint from tools/actionlint/go.mod.
	cd tools/actionlint && $(TOOLGO) build -o $(TOOLBIN)/actionlint github.com/rhysd/actionlint/cmd/actionlint

.PHONY: lint-workflows
lint-workflows: actionlint ## Every action in .github/ pinned by commit SHA, and actionlint (part of make test).
	hack/check-action-pins.sh .github/workflows/*.yml .github/actions/*/action.yml
	@sc=$$(command -v shellcheck || true); \
	if [ -z "$$sc" ]; then echo "lint-workflows: no shellcheck on PATH: the run: scripts are not shellchecked here (CI's runner does)"; fi; \
	echo "$(TOOLBIN)/actionlint -shellcheck=$$sc -pyflakes= .github/workflows/*.yml"; \
	$(TOOLBIN)/actionlint -shellcheck="$$sc" -pyflakes= .github/workflows/*.yml

# govulncheck (tools/vuln/go.mod) over the main module. By default offline:
# the vulnerability data is the OSV files of the golang.org/x/vulndb module
# at VULNDB_VERSION (its data/osv, read as a flat OSV directory by
# -db file://), as old as that pseudo-version's date: move it forward to
# take newer reports. VULNDB=https://vuln.go.dev takes the live database (the
# workflows do both). hack/vulncheck fails on every vulnerable symbol the
# code calls but those tools/vuln/accepted.txt accepts, with the reason.
# Not part of make test: its call-graph analysis of the Kubernetes tree does
# not fit make test's budget (docs/performance.md has its cost); the
# workflows run it as a job of its own on every change.
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
VULNDB ?=
.PHONY: govulncheck
govulncheck: ## Build bin/govulncheck from tools/vuln/go.mod.
	cd tools/vuln && $(TOOLGO) build -o $(TOOLBIN)/govulncheck golang.org/x/vuln/cmd/govulncheck

.PHONY: vuln
vuln: govulncheck ## govulncheck over the main module, offline against golang.org/x/vulndb@VULNDB_VERSION (VULNDB=https://vuln.go.dev: live); CI runs it on every change, beside make test.
	db='$(VULNDB)'; if [ -z "$$db" ]; then \
		$(TOOLGO) mod download golang.org/x/vulndb@$(VULNDB_VERSION); \
		db=file://$$($(TOOLGO) env GOMODCACHE)/golang.org/x/vulndb@$(VULNDB_VERSION)/data/osv; fi; \
	$(TOOLBIN)/govulncheck -db "$$db" -format json ./... | $(GO) run ./hack/vulncheck -accept tools/vuln/accepted.txt

.PHONY: test-unit
test-unit: etcd helm helm3 ## Unit tests, the equivalence suite, the chart-vs-manifests check and the scheduler_perf wiring check (needs bin/etcd, bin/helm, bin/helm3).
	$(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -v -e /test/integration -e /test/examples -e /test/reliability -e /test/release)

# The inner loop: gofmt, vet, then every package test-unit runs except the
# two that need binaries (test/chart: helm and helm3; test/perf's wiring check: etcd,
# which -short skips), with -short: the equivalence suite runs its short
# batches (2,000 one-cycle scenarios, 10 sequences, ...; its full batches
# are make test's). Nothing is built into bin/ and go test's result cache
# stays on, so a second run only re-tests what changed.
.PHONY: test-fast
test-fast: fmt-check vet verify-generated ## The inner loop: gofmt, vet, unit tests and the short equivalence batches; no bin/, no control plane.
	$(GO) test -short $$($(GO) list ./... | grep -v -e /test/integration -e /test/examples -e /test/reliability -e /test/chart -e /test/release)

.PHONY: test-integration
test-integration: build controlplane-envtest helm image-single ## Integration tests: the real binary (its image, the chart) against envtest.
	PLACEMENT_SCHEDULER_IMAGE_TAR=$(IMAGE_TAR) PLACEMENT_SCHEDULER_IMAGE=$(IMAGE) \
		$(GO) test -count=1 -timeout 30m ./test/integration/...

# Every manifests/examples folder applied to a full local cluster (make run's)
# with the real binary, asserting what its check/expect.yaml / README.md promise.
.PHONY: test-examples
test-examples: build controlplane-cluster ## The examples as fixtures: each folder's promised placement, on a full cluster.
	$(GO) test -count=1 -timeout 10m ./test/examples/...

# The enforcer's storm at full size: TestEnforcement/Storm of test/examples
# (make test runs it at 200/40/120), 1000 of 5000 KWOK nodes relabelled at
# once under 3000 opted-in pods. It logs the enforcer's CPU, peak memory,
# list and first-pass time, and how long the moves took.
STORM ?= 5000/1000/3000
.PHONY: test-storm
test-storm: build controlplane-cluster ## The enforcer's storm at full size on a full cluster (STORM=nodes/relabelled/pods, default 5000/1000/3000); logs its cost.
	ENFORCER_STORM=$(STORM) $(GO) test -count=1 -timeout 60m -v -run '^TestEnforcement$$/^Storm$$' ./test/examples/

# Hostile-input fuzzing (test/equivalence/hostile_test.go): one target,
# FuzzHostile, compares a plugin of ours with upstream's on objects decoded
# from the fuzzer's bytes, for every row of pkg/plugins.Set() (the input
# names the row; no list of plugins here). FUZZTIME is go test's -fuzztime:
# a duration (10m) or an exec count (1000000x); FUZZ_PLUGIN=<in-tree name>
# (e.g. NodeAffinity) spends it all on one row. Findings are written to
# test/equivalence/testdata/fuzz/FuzzHostile/, which plain `go test`
# (make test) then replays as seeds.
FUZZTIME    ?= 4m
FUZZ_PLUGIN ?=
.PHONY: fuzz
fuzz: ## Fuzz every plugin against upstream's on hostile input (FUZZTIME=4m or e.g. 1000000x execs; FUZZ_PLUGIN=NodeAffinity pins one).
	EQUIVALENCE_FUZZ_PLUGIN=$(FUZZ_PLUGIN) $(GO) test ./test/equivalence -run '^$$' -fuzz '^FuzzHostile$$' -fuzztime $(FUZZTIME)

# test/reliability: leader churn under load, kube-apiserver / etcd / network
# outages, a soak of pods in waves. `make test` runs the short variants (a few
# kills, outages of seconds, a few hundred pods); test-reliability the long
# ones at full size (2,000 pods and 20 leader kills, 20s outages,
# 20,000 pods against 500 nodes for 15 minutes; over half an hour in all,
# docs/performance.md),
# niced, each test appending its result row to RELIABILITY_REPORT. Every size
# is a RELIABILITY_* knob (test/reliability/doc.go); RELIABILITY_RUN picks
# tests (go test -run).
RELIABILITY_REPORT ?= $(CURDIR)/results/reliability-$(shell date -u +%Y%m%d-%H%M%S).md
RELIABILITY_RUN    ?= .

.PHONY: test-reliability-short
# Every reliability test, TestControlPlaneOutages included: its checks no
# longer wait on best-effort records with a hard deadline. Pod state proves a
# pod bound; the audit log proves it bound once, except for a binding whose
# record a SIGKILLed kube-apiserver lost, which passes only if the test's own
# watch first saw the pod bound (on one node only) around the kill and
# restart; Scheduled events are required only for binds 30 s after the
# apiserver answers again (test/reliability/README.md).
test-reliability-short: build controlplane-envtest ## The reliability tests' short variants (part of make test).
	$(GO) test -count=1 -timeout 20m ./test/reliability/...

.PHONY: test-reliability
test-reliability: build controlplane-envtest ## The reliability tests' long variants (full size), results in RELIABILITY_REPORT.
	@mkdir -p $(dir $(RELIABILITY_REPORT))
	RELIABILITY_LONG=1 RELIABILITY_REPORT=$(RELIABILITY_REPORT) nice -n 10 \
		$(GO) test -count=1 -timeout 3h -v -run '$(RELIABILITY_RUN)' ./test/reliability/... 2>&1 | tee $(RELIABILITY_REPORT:.md=.log)
	@echo "results: $(RELIABILITY_REPORT)"

# The chart's alerts evaluated by Prometheus' rule engine over synthetic
# series (test/alerts, a module of its own: Prometheus' dependencies are not
# ours). Its first compile is the cost (minutes with an empty build cache,
# seconds a run once cached; docs/performance.md has the figures).
.PHONY: test-alerts
test-alerts: helm ## The chart's PrometheusRule evaluated with Prometheus' engine (test/alerts).
	cd test/alerts && $(TOOLGO) vet ./... && $(TOOLGO) test -count=1 ./...

.PHONY: test
test: fmt-check vet verify-generated lint-chart lint-workflows test-alerts test-unit test-release test-integration test-reliability-short test-examples test-older-lines ## Everything CI runs: the newest line in full; every older line's test-line-smoke (build, unit, short equivalence, integration, examples and an enforcer move).

# An older line in make test (test-line-smoke): test-line, then the line
# run against its own control plane. test-line builds the line's binaries,
# then runs vet and the unit tests of the packages whose tests hold on every
# minor, and the equivalence suite's -short batches against that minor's
# in-tree plugins (under a minute). test-line-smoke adds the binary against
# the line's own apiserver (test-integration: leases, the chart's
# rendering, the image) and, on the line's own full cluster, the examples'
# placements and an enforcer move (LINE_EXAMPLES: a relabel evicts through
# the Eviction API, under a PDB, and the replacement lands).
# test-line-full adds the equivalence suite's full batches (our plugins
# against that minor's in-tree plugins) and scheduler_perf's wiring check. The plugin packages' own unit tests state the newest line's
# rules (its gates, extension points and event resources), so they run on
# the newest line; an older line's rules are checked against its upstream by
# the equivalence suite. LINE_UNIT_SKIP lists what test-line leaves out:
# tests of line-independent artifacts (chart, release), the suites
# test-line-full and their own targets run, the plugin packages (not the
# inter-pod affinity plugin's speed machinery under its internal/, whose
# invariants hold on every line and are tested against each line's
# NodeInfo and CycleState), and kubectl placement's golden outputs (recorded with the newest minor's
# in-tree plugins, whose scores differ between minors). The benchmark
# harnesses (test/perf, test/pluginbench) build on each line's
# scheduler_perf and are tested on every line, but for the tests of
# test-line's packages that need a control plane (LINE_CONTROLPLANE_TESTS:
# test/perf's wiring check starts etcd, an apiserver and a scheduler per
# workload), which test-line skips and test-line-full runs.
OLDER_LINES    := $(filter-out $(K8S_NEWEST),$(K8S_LINES))
LINE_UNIT_SKIP := /test/integration /test/examples /test/reliability /test/release /test/chart /test/equivalence \
	/internal/placementcmd$$ /pkg/plugins$$ /pkg/plugins/interpodaffinity$$ /pkg/plugins/nodeaffinity$$ /pkg/plugins/nodename$$ /pkg/plugins/tainttoleration$$
LINE_CONTROLPLANE_TESTS := ^TestSchedulerPerfWiring$$
LINE_EXAMPLES  := ^(TestClusterAlive|TestExamples|TestEnforcerMovesADeploymentUnderItsPDBOnePodAtATime)$$

.PHONY: test-line
test-line: build ## Build, vet, the line-independent unit tests and the equivalence suite's -short batches of one older line (K8S=1.36).
	$(GO) vet $$($(GO) list ./... | grep -v $(foreach p,$(LINE_UNIT_SKIP),-e '$(p)'))
	$(GO) test -count=1 -timeout 30m -skip '$(LINE_CONTROLPLANE_TESTS)' $$($(GO) list ./... | grep -v $(foreach p,$(LINE_UNIT_SKIP),-e '$(p)'))
	$(GO) vet ./test/equivalence/
	$(GO) test -short -count=1 -timeout 20m ./test/equivalence/

.PHONY: test-line-smoke
test-line-smoke: test-line controlplane-envtest helm image-single controlplane-cluster ## One older line's part of make test (K8S=1.36): test-line, integration against the line's apiserver, the examples and an enforcer move on its cluster.
	$(MAKE) --no-print-directory test-integration K8S=$(K8S)
	$(GO) test -count=1 -timeout 15m ./test/examples/... -run '$(LINE_EXAMPLES)'

.PHONY: test-line-full
test-line-full: test-line-smoke ## test-line-smoke plus the full equivalence batches against the line's upstream and scheduler_perf's wiring check (K8S=1.36).
	$(GO) test -count=1 -timeout 60m ./test/equivalence/...
	PATH=$(BIN):$$PATH $(GO) test -count=1 -timeout 20m -run '$(LINE_CONTROLPLANE_TESTS)' ./test/perf

.PHONY: test-older-lines
test-older-lines: ## test-line-smoke for every line but the newest (part of make test).
	for l in $(OLDER_LINES); do $(MAKE) --no-print-directory test-line-smoke K8S=$$l || exit 1; done

# Every suite on every line: the newest line's make test, then for each
# older line test-line-full and its reliability suite.
.PHONY: test-lines
test-lines: test ## Every suite on every line (long).
	for l in $(OLDER_LINES); do $(MAKE) --no-print-directory K8S=$$l test-line-full test-reliability-short || exit 1; done

# Release artifacts for VERSION=vX.Y.Z (<v>), in ONE flat folder, DIST
# (dist/, git-ignored; docs/releasing.md), for every line <m> of K8S_LINES:
#   placement-scheduler-<v>-k8s<m>-image-index.tar  per line: OCI image index for PLATFORMS (linux/amd64 +
#                                                   linux/arm64), IMAGE: ghcr.io/placement-scheduler/placement-scheduler:<v>-k8s<m>
#   placement-scheduler-<v>-k8s<m>.yaml             per line: the line's kustomization rendered with that image
#   placement-scheduler-X.Y.Z.tgz                   the Helm chart, once (version X.Y.Z, appVersion <v>)
#   kubectl-placement_<v>-k8s<m>_<os>_<arch>.tar.gz per line, per PLUGIN_OSARCH (.zip on windows): the binary,
#                                                   LICENSE, kubectl_complete-placement (.exe/.bat on Windows)
#   placement.yaml                                  krew manifest: the newest line's archives, with their sha256
#   <binary>_<v>-k8s<m>.sbom.cdx.json               per line, per binary (placement-scheduler,
#                                                   placement-enforcer, kubectl-placement): CycloneDX
#   SHA256SUMS, SHA256SUMS.sig                      over every other file; signed (ssh-keygen -Y sign,
#                                                   namespace "file") when SIGNING_KEY=path
# PLATFORMS and PLUGIN_OSARCH pick the platforms; PLUGIN_OSARCH_<m> (e.g.
# PLUGIN_OSARCH_1.37) overrides PLUGIN_OSARCH for one line. Publishing is a
# step of its own (make publish).
DIST          ?= $(CURDIR)/dist
PLUGIN_OSARCH ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
plugin-osarch  = $(strip $(or $(PLUGIN_OSARCH_$(1)),$(PLUGIN_OSARCH)))
# The plugin is built into the image's folders, $(BIN)/<os>-<arch>/: the
# image has just linked linux's with the same flags, which go build then
# leaves as it is.
PLUGIN_BUILD  ?= $(BIN)
# An OpenSSH private key (ed25519); SHA256SUMS.sig is made with namespace
# "file" and checked with ssh-keygen -Y verify against an allowed_signers line.
SIGNING_KEY   ?=
SIGNING_PUBKEY ?=
# Archive entries carry the release commit's time, so the same tree gives
# the same archives.
SOURCE_EPOCH  := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
check-version = @if [ "$(origin VERSION)" = file ] || ! [[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]]; then \
		echo "$@: VERSION must be given as vX.Y.Z, e.g. make $@ VERSION=v0.1.0 (got $(VERSION))" >&2; exit 1; fi

.PHONY: release
release: helm ## Build every line's release artifacts into the flat dist/ (VERSION=vX.Y.Z required; SIGNING_KEY=path signs SHA256SUMS).
	$(check-version)
	rm -rf $(DIST) && mkdir -p $(DIST)
	for l in $(K8S_LINES); do $(MAKE) --no-print-directory release-line K8S=$$l VERSION=$(VERSION) DIST=$(DIST) || exit 1; done
	$(TOOLBIN)/helm package charts/placement-scheduler --version $(patsubst v%,%,$(VERSION)) --app-version $(VERSION) -d $(DIST)
	$(MAKE) --no-print-directory release-checksums VERSION=$(VERSION) DIST=$(DIST)
	@ls -l $(DIST)

# One line's artifacts, added to DIST beside the other lines': its image
# index (tag <VERSION>-k8s<minor>), the manifests rendered with it, the
# plugin archives (and, on the newest line, the krew manifest), its SBOMs.
.PHONY: release-line
release-line: ## Add one line's release artifacts to DIST (K8S=1.36, VERSION=vX.Y.Z required); make release runs it per line.
	$(check-version)
	@mkdir -p $(DIST)
	$(MAKE) --no-print-directory image VERSION=$(VERSION) IMAGE=$(IMAGE) IMAGE_INDEX_TAR=$(DIST)/placement-scheduler-$(VERSION)-k8s$(K8S)-image-index.tar
	$(TOOLGO) run ./hack/kustomize -dir $(MANIFESTS) -image $(IMAGE) -out $(DIST)/placement-scheduler-$(VERSION)-k8s$(K8S).yaml
	$(MAKE) --no-print-directory release-plugin release-sbom VERSION=$(VERSION) DIST=$(DIST)

.PHONY: release-plugin
release-plugin: ## One line's kubectl-placement archives per PLUGIN_OSARCH into DIST; on the newest line the krew manifest placement.yaml too.
	$(check-version)
	@mkdir -p $(DIST)
	for osarch in $(call plugin-osarch,$(K8S)); do \
		goos=$${osarch%/*} goarch=$${osarch#*/}; exe=; if [ $$goos = windows ]; then exe=.exe; fi; \
		CGO_ENABLED=0 GOOS=$$goos GOARCH=$$goarch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
			-o $(PLUGIN_BUILD)/$$goos-$$goarch/kubectl-placement$$exe ./cmd/kubectl-placement; \
	done
	$(TOOLGO) run ./hack/krew -version $(VERSION) -line $(K8S) -builds $(PLUGIN_BUILD) -platforms '$(call plugin-osarch,$(K8S))' \
		-license LICENSE -completion cmd/kubectl-placement -out $(DIST) -mtime $(SOURCE_EPOCH) \
		$(if $(filter $(K8S),$(K8S_NEWEST)),-manifest placement.yaml)

.PHONY: sbom-tool
sbom-tool: ## Build bin/cyclonedx-gomod from tools/sbom/go.mod.
	cd tools/sbom && $(TOOLGO) build -o $(TOOLBIN)/cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod

# One SBOM per shipped binary of the line, from the packages it links
# (cyclonedx-gomod app: the modules of the build list it actually uses, not
# go.mod's tools, with licenses detected from the module cache), for
# linux/amd64. The main component's version comes from the git tag on HEAD;
# cyclonedx-gomod's git library cannot read a linked worktree (`git worktree
# add`), so there it reads a plain clone of HEAD instead (and an older line
# that clone's own go.work).
.PHONY: release-sbom
release-sbom: sbom-tool ## One line's CycloneDX SBOMs of placement-scheduler, placement-enforcer and kubectl-placement into DIST.
	$(check-version)
	@mkdir -p $(DIST)
	src=$(CURDIR); if [ "$$(git rev-parse --git-dir)" != "$$(git rev-parse --git-common-dir)" ]; then \
		src=$(BIN)/sbom-src; rm -rf $$src; git clone -q $(CURDIR) $$src; fi; \
	gowork=$(if $(filter $(K8S),$(K8S_NEWEST)),off,$$src/lines/k8s-$(K8S)/go.work); \
	for main in scheduler:placement-scheduler enforcer:placement-enforcer kubectl-placement:kubectl-placement; do \
		(cd $$src && GOWORK=$$gowork CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(TOOLBIN)/cyclonedx-gomod app -json -licenses -main cmd/$${main%%:*} \
			-output $(DIST)/$${main#*:}_$(VERSION)-k8s$(K8S).sbom.cdx.json .) || exit 1; \
	done

.PHONY: release-checksums
release-checksums: ## SHA256SUMS of DIST's files; SHA256SUMS.sig too when SIGNING_KEY=path (an OpenSSH key).
	cd $(DIST) && rm -f SHA256SUMS SHA256SUMS.sig && sha256sum $$(ls) > SHA256SUMS
	if [ -n "$(SIGNING_KEY)" ]; then ssh-keygen -Y sign -f $(SIGNING_KEY) -n file $(DIST)/SHA256SUMS; fi

# The release test (test/release) on the layout `make release` writes, every
# line, with a throwaway signing key and fewer platforms (make test runs it):
# each line's image index for this host's architecture only, each line's
# plugin archive for this host, and the newest line's windows/amd64 archive
# too (the zip layout). verify-release runs the same test on dist/, where it
# expects every platform. RELEASE_* tell the test what to expect; krew
# (tools/krew, built from source) validates the manifest and installs each
# archive offline, bin/helm renders the chart. RELEASE_ROUNDTRIP=1 adds the
# registry round trip (hack/publish to an in-process registry, the chart
# installed from it into every line's kube-apiserver), so test-release
# builds every line's envtest control plane first.
RELEASE_ROUNDTRIP ?=
RELEASE_TEST_DIR := $(TOOLBIN)/release-test
HOST_OSARCH      := $(subst $(space),/,$(GO_HOST))
.PHONY: test-release
test-release: controlplane-envtest ## The release test on a small release of every line (host platforms + the newest line's windows/amd64) signed with a throwaway key, with the registry round trip on every line's apiserver (part of make test).
	for l in $(OLDER_LINES); do $(MAKE) --no-print-directory controlplane-envtest K8S=$$l || exit 1; done
	rm -rf $(RELEASE_TEST_DIR) && mkdir -p $(RELEASE_TEST_DIR)
	ssh-keygen -q -t ed25519 -N '' -C throwaway -f $(RELEASE_TEST_DIR)/key
	$(MAKE) --no-print-directory release verify-release VERSION=v0.0.0-test DIST=$(RELEASE_TEST_DIR)/dist RELEASE_ROUNDTRIP=1 \
		SIGNING_KEY=$(RELEASE_TEST_DIR)/key SIGNING_PUBKEY=$(RELEASE_TEST_DIR)/key.pub PLATFORMS=$(word 2,$(GO_HOST)) \
		PLUGIN_OSARCH=$(HOST_OSARCH) PLUGIN_OSARCH_$(K8S_NEWEST)='$(HOST_OSARCH) windows/amd64'

# The signature is checked against SIGNING_PUBKEY, or the public half of
# SIGNING_KEY when only that is given.
.PHONY: verify-release
verify-release: kubectl krew helm ## The release test on dist/ from make release (VERSION=vX.Y.Z; SIGNING_PUBKEY=path or SIGNING_KEY=path checks the signature).
	$(check-version)
	pub='$(SIGNING_PUBKEY)'; if [ -z "$$pub" ] && [ -n '$(SIGNING_KEY)' ]; then \
		pub=$(TOOLBIN)/release-signing-key.pub; ssh-keygen -y -f '$(SIGNING_KEY)' > $$pub; fi; \
	RELEASE_DIST=$(DIST) RELEASE_VERSION=$(VERSION) RELEASE_SIGNING_PUBKEY=$$pub \
		RELEASE_ROUNDTRIP='$(RELEASE_ROUNDTRIP)' \
		RELEASE_K8S_VERSIONS='$(foreach l,$(K8S_LINES),$(l)=$(call k8s-version,$(l)))' \
		RELEASE_IMAGE_PLATFORMS='$(foreach a,$(PLATFORMS),linux/$(a))' \
		RELEASE_PLUGIN_PLATFORMS='$(foreach l,$(K8S_LINES),$(l)=$(subst $(space),$(comma),$(call plugin-osarch,$(l))))' \
		$(GO) test -count=1 -timeout 30m ./test/release/...

# Publishing (docs/releasing.md): each line's image index from DIST to
# REGISTRY/placement-scheduler:<VERSION>-k8s<minor> and the chart to
# oci://REGISTRY/charts, with the docker config's and helm's registry
# credentials. The pushed <ref>@<digest> lines go to PUBLISHED, outside
# DIST (SHA256SUMS covers DIST), for signing. PUBLISH_FLAGS=-plain-http
# talks HTTP to a local registry.
PUBLISHED     ?= $(TOOLBIN)/published.txt
PUBLISH_FLAGS ?=
.PHONY: publish
publish: helm ## Push dist/'s image indexes and chart (VERSION=vX.Y.Z REGISTRY=host/owner required; PUBLISHED=bin/published.txt lists the digests).
	$(check-version)
	@if [ -z "$(REGISTRY)" ]; then echo "publish: REGISTRY must be given as host/owner, e.g. make publish VERSION=$(VERSION) REGISTRY=ghcr.io/placement-scheduler" >&2; exit 1; fi
	$(GO) run ./hack/publish -dist $(DIST) -version $(VERSION) -lines '$(K8S_LINES)' -registry $(REGISTRY) \
		-out $(PUBLISHED) -helm $(TOOLBIN)/helm $(PUBLISH_FLAGS)

.PHONY: kubectl
kubectl: $(BIN)/kubectl ## Build bin/kubectl alone (controlplane builds it with the rest).

.PHONY: krew
krew: ## Build bin/krew and bin/validate-krew-manifest from tools/krew/go.mod.
	cd tools/krew && $(TOOLGO) build -o $(TOOLBIN)/krew sigs.k8s.io/krew/cmd/krew
	cd tools/krew && $(TOOLGO) build -o $(TOOLBIN)/validate-krew-manifest sigs.k8s.io/krew/cmd/validate-krew-manifest

# Side-by-side scheduler_perf run (test/perf): upstream's affinity workloads and
# SchedulingBasic, read unmodified from the module cache (at 15000 nodes their
# 5000Nodes sizes x3), and our own (test/perf/workloads), once per profile:
# upstream's default, ours, and the floor (ours without the inter-pod affinity
# plugin: the speed limit of any such plugin); BENCH_PROFILES picks some. The
# test binary is compiled once; then test/perf/cmd/bench runs every workload
# run in a process of its own, ABBA per test case (r1 upstream, ours, floor;
# r2 floor, ours, upstream; ...). Data items, logs
# of failed workloads, report.md and report.json land in BENCH_DIR. On an
# older line (K8S=1.36) it runs that minor's scheduler_perf and workloads;
# what that one cannot measure or run, the report shows as n/a
# (test/perf/README.md, "Older Kubernetes lines").
BENCH_SCALE   ?= 500
BENCH_REPEATS ?= 2
BENCH_CASES   ?= .*
BENCH_PROFILES ?= upstream,ours,floor
BENCH_TIMEOUT ?= 24h
# How long each createPods op may wait for its pods; 0 keeps scheduler_perf's
# 10m, which upstream's slowest affinity cases can exceed at 15000 nodes.
BENCH_PODS_TIMEOUT ?= 0
# BENCH_CPU_PROFILES=1: scheduler_perf writes a CPU profile of each run's
# measured op into BENCH_DIR, and the report adds CPU time per measured pod
# (the work itself, where the per-cycle wall times also hold waiting for a core).
BENCH_CPU_PROFILES ?=
BENCH_STAMP   := $(shell date -u +%Y%m%d-%H%M%S)
BENCH_DIR     ?= $(CURDIR)/results/bench-$(BENCH_SCALE)nodes-$(BENCH_STAMP)
BENCH_ARGS     = -test-binary $(BENCH_DIR)/perf.test -dir $(BENCH_DIR) -scale $(BENCH_SCALE) -cases '$(BENCH_CASES)' \
	-profiles '$(BENCH_PROFILES)' -repeats $(BENCH_REPEATS) -timeout $(BENCH_TIMEOUT) -pods-timeout $(BENCH_PODS_TIMEOUT) \
	$(if $(filter 1 true yes,$(BENCH_CPU_PROFILES)),-cpu-profiles)

.PHONY: bench
bench: controlplane ## scheduler_perf, upstream profile vs ours vs the floor, upstream's workloads and ours (BENCH_SCALE=500|5000|15000 nodes, BENCH_REPEATS=2 (even: ABBA-balanced), BENCH_CASES=regexp, BENCH_PROFILES=upstream,ours,floor, BENCH_PODS_TIMEOUT, BENCH_CPU_PROFILES=1).
	@mkdir -p $(BENCH_DIR)/logs
	$(GO) build -o $(BENCH_DIR)/bench ./test/perf/cmd/bench
	@# The flags are checked, and the plan printed, before the long compile.
	$(BENCH_DIR)/bench -dry-run $(BENCH_ARGS)
	$(GO) test -c -o $(BENCH_DIR)/perf.test ./test/perf
	PATH=$(BIN):$$PATH ARTIFACTS=$(BENCH_DIR)/logs $(BENCH_DIR)/bench $(BENCH_ARGS) || touch $(BENCH_DIR)/FAILED
	$(GO) run ./test/perf/cmd/report -dir $(BENCH_DIR)
	@if [ -e $(BENCH_DIR)/FAILED ]; then echo "bench: some workloads failed, see $(BENCH_DIR)/bench.log and $(BENCH_DIR)/logs"; exit 1; fi

# Plugin-level benchmarks (test/pluginbench): each of our plugins against the
# in-tree plugin it replaces, extension point by extension point, in ONE
# `go test -bench` run on scheduler_perf's workload shapes, then benchstat
# (built from its own module, tools/benchstat) with one column per side.
# The test binary is built once and run BENCH_PLUGINS_COUNT times rather than
# with -count, which would repeat each benchmark back to back: this way the
# repeats of upstream and ours interleave, and drift on a shared machine
# shows up as spread, not as a difference.
# The raw output and the load average before/after land next to each other
# in BENCH_PLUGINS_DIR. At 5000 nodes and 6 runs it takes tens of minutes
# (docs/performance.md).
# BENCH_PLUGINS_RUN reaches go test unexpanded ($(value ...)): a regexp such
# as '^BenchmarkInterPodAffinity$/^PreFilter$' keeps its anchors, which make
# would otherwise read as variable references ($/ expands to nothing).
BENCH_PLUGINS_COUNT ?= 6
BENCH_PLUGINS_TIME  ?= 1s
BENCH_PLUGINS_RUN   ?= .
BENCH_PLUGINS_NODES ?= 5000
BENCH_PLUGINS_DIR   ?= $(CURDIR)/results/bench-plugins-$(BENCH_PLUGINS_NODES)nodes-$(BENCH_STAMP)

.PHONY: benchstat
benchstat: ## Build bin/benchstat from tools/benchstat/go.mod.
	cd tools/benchstat && $(TOOLGO) build -o $(TOOLBIN)/benchstat golang.org/x/perf/cmd/benchstat

.PHONY: bench-plugins
bench-plugins: benchstat ## Plugin-level Go benchmarks, ours vs in-tree, with benchstat (BENCH_PLUGINS_COUNT=6, BENCH_PLUGINS_RUN=regexp, BENCH_PLUGINS_NODES=5000|500).
	@mkdir -p $(BENCH_PLUGINS_DIR)
	@cat /proc/loadavg > $(BENCH_PLUGINS_DIR)/loadavg-before.txt
	$(GO) test -c -o $(BENCH_PLUGINS_DIR)/pluginbench.test ./test/pluginbench
	: > $(BENCH_PLUGINS_DIR)/bench.txt
	for i in $$(seq $(BENCH_PLUGINS_COUNT)); do \
		(cd test/pluginbench && PLUGINBENCH_NODES=$(BENCH_PLUGINS_NODES) $(BENCH_PLUGINS_DIR)/pluginbench.test -test.run '^$$' \
			-test.bench '$(value BENCH_PLUGINS_RUN)' -test.benchtime $(BENCH_PLUGINS_TIME) -test.timeout 0) | tee -a $(BENCH_PLUGINS_DIR)/bench.txt; done
	@cat /proc/loadavg > $(BENCH_PLUGINS_DIR)/loadavg-after.txt
	$(TOOLBIN)/benchstat -col /impl $(BENCH_PLUGINS_DIR)/bench.txt | tee $(BENCH_PLUGINS_DIR)/benchstat.txt
	@echo "load average (1m 5m 15m) before: $$(cut -d' ' -f1-3 $(BENCH_PLUGINS_DIR)/loadavg-before.txt), after: $$(cut -d' ' -f1-3 $(BENCH_PLUGINS_DIR)/loadavg-after.txt)"
