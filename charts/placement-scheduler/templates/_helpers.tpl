{{/* The app name: app.kubernetes.io/name, and the selector. */}}
{{- define "placement-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Object names, and the lease's: the release name when it already contains the
app name (so `helm install placement-scheduler` gives the names manifests/
uses), else <release>-<name>.
*/}}
{{- define "placement-scheduler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "placement-scheduler.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selects the scheduler's pods; fixed for the life of a release. */}}
{{- define "placement-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "placement-scheduler.name" . }}
{{- end -}}

{{/*
Every object's labels: part-of (what manifests/ puts on everything, and what
an upgrade there prunes by), Helm's own and .Values.commonLabels.
*/}}
{{- define "placement-scheduler.labels" -}}
app.kubernetes.io/part-of: placement-scheduler
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The ServiceAccount a component runs as, made by the chart or not
(serviceAccount.create); its name defaults to $default. Called as
(list $serviceAccountValues $default).
*/}}
{{- define "placement-scheduler.serviceAccountNameOf" -}}
{{- $sa := index . 0 -}}
{{- $sa.name | default (index . 1) -}}
{{- end -}}

{{- define "placement-scheduler.serviceAccountName" -}}
{{- include "placement-scheduler.serviceAccountNameOf" (list .Values.serviceAccount (include "placement-scheduler.fullname" .)) -}}
{{- end -}}

{{- define "placement-scheduler.enforcerServiceAccountName" -}}
{{- include "placement-scheduler.serviceAccountNameOf" (list .Values.enforcer.serviceAccount (printf "%s-enforcer" (include "placement-scheduler.fullname" .))) -}}
{{- end -}}

{{/*
A PodDisruptionBudget's budget from {minAvailable, maxUnavailable}: the one
set (the schema refuses both), else maxUnavailable 1, which lets a drain take
one replica at a time.
*/}}
{{- define "placement-scheduler.disruptionBudget" -}}
{{- if not (kindIs "invalid" (index . "minAvailable")) -}}
minAvailable: {{ index . "minAvailable" | toJson }}
{{- else if not (kindIs "invalid" (index . "maxUnavailable")) -}}
maxUnavailable: {{ index . "maxUnavailable" | toJson }}
{{- else -}}
maxUnavailable: 1
{{- end -}}
{{- end -}}

{{/*
The scheduler's config file. The profiles are .Values.profiles (or the
line's shipped ones) with .Values.pluginArgs merged into each one's
pluginConfig, then .Values.additionalProfiles.
*/}}
{{- define "placement-scheduler.config" -}}
{{- $profiles := list -}}
{{- range (include "placement-scheduler.profiles" . | fromJsonArray) -}}
{{- $p := deepCopy . -}}
{{- $extra := deepCopy $.Values.pluginArgs -}}
{{- $cfg := list -}}
{{- range ($p.pluginConfig | default list) -}}
{{- $c := deepCopy . -}}
{{- if hasKey $extra $c.name -}}
{{- $_ := set $c "args" (mergeOverwrite (deepCopy ($c.args | default dict)) (get $extra $c.name)) -}}
{{- $_ := unset $extra $c.name -}}
{{- end -}}
{{- $cfg = append $cfg $c -}}
{{- end -}}
{{- range $name := keys $extra | sortAlpha -}}
{{- $cfg = append $cfg (dict "name" $name "args" (get $extra $name)) -}}
{{- end -}}
{{- if $cfg -}}
{{- $_ := set $p "pluginConfig" $cfg -}}
{{- end -}}
{{- $profiles = append $profiles $p -}}
{{- end -}}
{{- $profiles = concat $profiles .Values.additionalProfiles -}}
# Rendered by the placement-scheduler chart from its values; the default
# profile is manifests/scheduler-config.yaml's.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  # Empty: in-cluster credentials.
  kubeconfig: ""
leaderElection:
  leaderElect: true
  resourceLock: leases
  # Our own lease: never fight the default scheduler for kube-system/kube-scheduler.
  resourceNamespace: {{ .Release.Namespace }}
  resourceName: {{ include "placement-scheduler.fullname" . }}
  {{- with .Values.leaderElection.leaseDuration }}
  leaseDuration: {{ . }}
  {{- end }}
  {{- with .Values.leaderElection.renewDeadline }}
  renewDeadline: {{ . }}
  {{- end }}
  {{- with .Values.leaderElection.retryPeriod }}
  retryPeriod: {{ . }}
  {{- end }}
profiles:
{{ toYaml $profiles | indent 2 }}
{{- end -}}

{{/*
An image reference from {repository, tag, digest}: repository@digest when a
digest is given (it pins the image, whatever the tag says), else
repository:tag, the tag defaulting to $default.
*/}}
{{- define "placement-scheduler.imageRef" -}}
{{- $img := index . 0 -}}
{{- $default := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository ($img.tag | default $default) -}}
{{- end -}}
{{- end -}}

{{/*
The build lines, the one list of them in the chart: each Kubernetes minor
placement-scheduler is built for (an image tagged <appVersion>-k8s1.<minor>),
with the Kubernetes release that line builds from (go.mod for the newest,
lines/k8s-1.<minor>/go.work for the others; the helm test's kubectl is that
release). The Makefile's K8S_LINES must list the same minors, Chart.yaml's
kubeVersion must admit 1.<oldest> up to 1.<newest + 1>, and test/chart
fails when this drifts from go.mod or lines/.
*/}}
{{- define "placement-scheduler.k8sLines" -}}
{{- toJson (dict "35" "v1.35.4" "36" "v1.36.3" "37" "v1.37.2") -}}
{{- end -}}

{{/*
The build line for the cluster (.Capabilities.KubeVersion), as its minor
("36"), or "" when none serves it. The skew policy lets a scheduler be as new
as the apiserver or one minor older: a cluster at a line's minor runs that
line, one newer than the newest line runs the newest. Managed clusters may
report Minor as "36+", so only its leading digits count.
*/}}
{{- define "placement-scheduler.k8sLine" -}}
{{- $lines := include "placement-scheduler.k8sLines" . | fromJson -}}
{{- $newest := 0 -}}
{{- range $minor, $_ := $lines -}}
{{- $newest = max $newest (atoi $minor) -}}
{{- end -}}
{{- $kv := .Capabilities.KubeVersion -}}
{{- $major := regexFind "^[0-9]+" (toString $kv.Major) -}}
{{- $minor := regexFind "^[0-9]+" (toString $kv.Minor) -}}
{{- if and (eq $major "1") $minor -}}
{{- if hasKey $lines (toString (atoi $minor)) -}}
{{- atoi $minor -}}
{{- else if eq (atoi $minor) (add1 $newest) -}}
{{- $newest -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The cluster's build line; fails the render, in one line naming the
supported range and $value (the value that pins the image instead), when
the cluster has none. Called as (list $ "image.tag").
*/}}
{{- define "placement-scheduler.requireK8sLine" -}}
{{- $root := index . 0 -}}
{{- $line := include "placement-scheduler.k8sLine" $root -}}
{{- if not $line -}}
{{- $minors := keys (include "placement-scheduler.k8sLines" $root | fromJson) | sortAlpha -}}
{{- fail (printf "placement-scheduler supports Kubernetes 1.%s to 1.%d (build lines %s), not %s: set %s to run another build" (first $minors) (add1 (atoi (last $minors))) (printf "1.%s" (join ", 1." $minors)) $root.Capabilities.KubeVersion.Version (index . 1)) -}}
{{- end -}}
{{- $line -}}
{{- end -}}

{{/*
The scheduler's (and the enforcer's) image, as deployed: image.digest or
image.tag as given, else the cluster's build line, <appVersion>-k8s1.<line>.
*/}}
{{- define "placement-scheduler.image" -}}
{{- $default := "" -}}
{{- if not (or .Values.image.digest .Values.image.tag) -}}
{{- $default = printf "%s-k8s1.%s" .Chart.AppVersion (include "placement-scheduler.requireK8sLine" (list . "image.tag")) -}}
{{- end -}}
{{- include "placement-scheduler.imageRef" (list .Values.image $default) -}}
{{- end -}}

{{/*
The helm test's kubectl: tests.kubectlImage's digest or tag as given, else
the Kubernetes release the cluster's build line is built from, a kubectl
within one minor of the apiserver as kubectl's skew policy asks.
*/}}
{{- define "placement-scheduler.kubectlImage" -}}
{{- $img := .Values.tests.kubectlImage -}}
{{- $default := "" -}}
{{- if not (or $img.digest $img.tag) -}}
{{- $lines := include "placement-scheduler.k8sLines" . | fromJson -}}
{{- $default = get $lines (include "placement-scheduler.requireK8sLine" (list . "tests.kubectlImage.tag")) -}}
{{- end -}}
{{- include "placement-scheduler.imageRef" (list $img $default) -}}
{{- end -}}

{{/*
The label matchers selecting this release's scheduler series in Prometheus:
the ServiceMonitor's job and namespace unless monitoring.prometheusRule.selector
says otherwise.
*/}}
{{- define "placement-scheduler.metricsSelector" -}}
{{- .Values.monitoring.prometheusRule.selector | default (printf "job=%q, namespace=%q" (printf "%s-metrics" (include "placement-scheduler.fullname" .)) .Release.Namespace) -}}
{{- end -}}

{{/*
The label matchers selecting this release's enforcer series: the enforcer's
ServiceMonitor's job and namespace unless
monitoring.prometheusRule.enforcer.selector says otherwise.
*/}}
{{- define "placement-scheduler.enforcerMetricsSelector" -}}
{{- .Values.monitoring.prometheusRule.enforcer.selector | default (printf "job=%q, namespace=%q" (printf "%s-enforcer-metrics" (include "placement-scheduler.fullname" .)) .Release.Namespace) -}}
{{- end -}}

{{/*
The profiles before pluginArgs, as JSON: .Values.profiles, or when it is
empty the shipped profile of the line that runs (profileLine).
*/}}
{{- define "placement-scheduler.profiles" -}}
{{- if .Values.profiles -}}
{{- toJson .Values.profiles -}}
{{- else -}}
{{- $file := printf "files/scheduler-config-k8s1.%s.yaml" (include "placement-scheduler.profileLine" .) -}}
{{- toJson (.Files.Get $file | fromYaml).profiles -}}
{{- end -}}
{{- end -}}

{{/*
The build line whose shipped profile the scheduler gets by default: the one
image.tag names (<version>-k8s1.<minor>, a line of k8sLines), else the
cluster's, else (a pinned image of another name on a cluster no line serves)
the newest.
*/}}
{{- define "placement-scheduler.profileLine" -}}
{{- $lines := include "placement-scheduler.k8sLines" . | fromJson -}}
{{- $tagged := regexFind "[0-9]+$" (regexFind "-k8s1\\.[0-9]+$" (toString .Values.image.tag)) -}}
{{- $line := include "placement-scheduler.k8sLine" . -}}
{{- if hasKey $lines $tagged -}}
{{- $tagged -}}
{{- else if $line -}}
{{- $line -}}
{{- else -}}
{{- last (keys $lines | sortAlpha) -}}
{{- end -}}
{{- end -}}

{{/* The first profile's schedulerName: what the helm test's canary asks for. */}}
{{- define "placement-scheduler.schedulerName" -}}
{{- (first (concat (include "placement-scheduler.profiles" . | fromJsonArray) .Values.additionalProfiles)).schedulerName -}}
{{- end -}}

{{/*
The enforcer's config file: what the chart sets, with .Values.enforcer.config
merged over it.
*/}}
{{- define "placement-scheduler.enforcerConfig" -}}
{{- $base := dict "apiVersion" "enforcer.placement-scheduler.io/v1alpha1" "kind" "EnforcerConfiguration" "schedulerConfig" "/etc/placement-scheduler/scheduler-config.yaml" "leaderElection" (dict "leaseNamespace" .Release.Namespace "leaseName" (printf "%s-enforcer" (include "placement-scheduler.fullname" .))) -}}
{{- toYaml (mergeOverwrite $base (deepCopy .Values.enforcer.config)) -}}
{{- end -}}
