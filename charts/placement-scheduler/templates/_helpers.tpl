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
an upgrade there prunes by) and Helm's own.
*/}}
{{- define "placement-scheduler.labels" -}}
app.kubernetes.io/part-of: placement-scheduler
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "placement-scheduler.serviceAccountName" -}}
{{- include "placement-scheduler.fullname" . -}}
{{- end -}}

{{/*
The scheduler's config file. The profiles are .Values.profiles with
.Values.pluginArgs merged into each one's pluginConfig, then
.Values.additionalProfiles.
*/}}
{{- define "placement-scheduler.config" -}}
{{- $profiles := list -}}
{{- range .Values.profiles -}}
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

{{/* The scheduler's image, as deployed. */}}
{{- define "placement-scheduler.image" -}}
{{- include "placement-scheduler.imageRef" (list .Values.image .Chart.AppVersion) -}}
{{- end -}}

{{/*
The label matchers selecting this release's scheduler series in Prometheus:
the ServiceMonitor's job and namespace unless monitoring.prometheusRule.selector
says otherwise.
*/}}
{{- define "placement-scheduler.metricsSelector" -}}
{{- .Values.monitoring.prometheusRule.selector | default (printf "job=%q, namespace=%q" (printf "%s-metrics" (include "placement-scheduler.fullname" .)) .Release.Namespace) -}}
{{- end -}}

{{/* The first profile's schedulerName: what the helm test's canary asks for. */}}
{{- define "placement-scheduler.schedulerName" -}}
{{- (first (concat .Values.profiles .Values.additionalProfiles)).schedulerName -}}
{{- end -}}

{{/*
The enforcer's config file: what the chart sets, with .Values.enforcer.config
merged over it.
*/}}
{{- define "placement-scheduler.enforcerConfig" -}}
{{- $base := dict "apiVersion" "enforcer.placement-scheduler.io/v1alpha1" "kind" "EnforcerConfiguration" "schedulerConfig" "/etc/placement-scheduler/scheduler-config.yaml" "leaderElection" (dict "leaseNamespace" .Release.Namespace "leaseName" (printf "%s-enforcer" (include "placement-scheduler.fullname" .))) -}}
{{- toYaml (mergeOverwrite $base (deepCopy .Values.enforcer.config)) -}}
{{- end -}}
