package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The configuration file's type. The file is versioned so that a field can
// change meaning only under a new version.
const (
	ConfigAPIVersion = "enforcer.placement-scheduler.io/v1alpha1"
	ConfigKind       = "EnforcerConfiguration"
)

// EnforcerConfiguration is the enforcer's configuration file (docs/enforcement.md lists
// every field and its default). A zero field takes its default.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type EnforcerConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	// SchedulerConfig is the path of the KubeSchedulerConfiguration
	// placement-scheduler runs with: its profiles say which addedAffinity
	// and which filters placed a pod. Required.
	SchedulerConfig string `json:"schedulerConfig"`
	// Namespaces opts in every pod of the namespaces its selector matches
	// (a pod's own annotation still wins, "none" included).
	Namespaces *NamespaceOptIn `json:"namespaces,omitempty"`
	// GracePeriod is how long a violation must last before its pod is
	// evicted, per rule kind; a violation that clears earlier is forgotten.
	GracePeriod GracePeriods `json:"gracePeriod,omitempty"`
	// DryRun judges, reports and sends every eviction with dryRun=All, so
	// the PDB verdict is the server's, but evicts nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// EvictWithoutFit evicts a violating pod even when its replacement
	// would fit nowhere else (it then stays Pending). Off by default.
	EvictWithoutFit bool `json:"evictWithoutFit,omitempty"`
	// EvictLocalStoragePods lets pods with an emptyDir or hostPath volume be
	// evicted (their data on the node is lost). Off by default: such pods
	// are reported protected (local-storage).
	EvictLocalStoragePods bool `json:"evictLocalStoragePods,omitempty"`
	// EvictJobPods lets a Job's pods be evicted, each only when its Job's
	// podFailurePolicy ignores the DisruptionTarget condition (so the
	// eviction does not count against its backoffLimit, and the Job
	// replaces the pod). Off by default: Job pods, and every pod that runs
	// to completion, are reported protected (job).
	EvictJobPods bool `json:"evictJobPods,omitempty"`
	// Resync is the period of the full re-judgement that backs up the
	// informers' events, and the longest a leader goes without a pass.
	// Default 1m.
	Resync metav1.Duration `json:"resync,omitempty"`
	// CacheSyncTimeout bounds a new leader's list of the cluster: a leader
	// whose informers have not synced this long after it took the Lease
	// fails its health check, releases the Lease and exits. Default 10m.
	CacheSyncTimeout metav1.Duration `json:"cacheSyncTimeout,omitempty"`
	// EvictionsPerSecond and Burst rate-limit evictions. Default 1 and 5.
	EvictionsPerSecond float64 `json:"evictionsPerSecond,omitempty"`
	Burst              int     `json:"burst,omitempty"`
	// Limits cap the evictions in flight (evicted, replacement not Ready
	// yet). Defaults: 1 per node, 5 per namespace, 10 in total; another
	// actor's eviction counts for otherEvictionsFor, default 5m.
	Limits Limits `json:"limits,omitempty"`
	// Loops stops the evictions of an owner's pods for a rule that its
	// replacements break again (internal/enforcer/loops.go). Defaults: 3 evictions, 1h.
	Loops LoopDetection `json:"loops,omitempty"`
	// Backoff is how long a refused eviction (429 from a PDB, any other
	// error) waits before the pod is judged again, doubling up to Max.
	// Defaults 10s and 5m.
	Backoff Backoff `json:"backoff,omitempty"`
	// LeaderElection is the enforcer's own Lease.
	LeaderElection LeaderElection `json:"leaderElection,omitempty"`
	// ClientConnection paces the enforcer's requests to the apiserver.
	ClientConnection ClientConnection `json:"clientConnection,omitempty"`
	// The endpoints are configured by flags (ServingOptions), as
	// kube-scheduler's are.
}

// NamespaceOptIn opts in whole namespaces.
type NamespaceOptIn struct {
	Selector *metav1.LabelSelector `json:"selector"`
	// Rules are the rule kinds enforced there: "all" or kind names.
	// Default ["all"].
	Rules []string `json:"rules,omitempty"`
}

// GracePeriods is the grace period per rule kind. Default 30s each.
type GracePeriods struct {
	NodeAffinity    *metav1.Duration `json:"nodeAffinity,omitempty"`
	PodAffinity     *metav1.Duration `json:"podAffinity,omitempty"`
	PodAntiAffinity *metav1.Duration `json:"podAntiAffinity,omitempty"`
}

// Limits cap the evictions in flight (evicted, replacement not settled).
type Limits struct {
	PerNode      int `json:"perNode,omitempty"`
	PerNamespace int `json:"perNamespace,omitempty"`
	Total        int `json:"total,omitempty"`
	// OtherEvictionsFor is how long a pod someone else evicted (kubectl
	// drain, an autoscaler) counts toward the caps while it terminates,
	// from its DisruptionTarget condition. Nil: DefaultOtherEvictionsFor;
	// 0: never.
	OtherEvictionsFor *metav1.Duration `json:"otherEvictionsFor,omitempty"`
}

// LoopDetection says when an owner is looping for a rule: Evictions (N)
// evictions of its pods for the rule within Window, each after the first
// of a pod created after an earlier one (a replacement evicted again), or
// one replacement placed in violation of the rule again within Window.
type LoopDetection struct {
	Evictions int             `json:"evictions,omitempty"`
	Window    metav1.Duration `json:"window,omitempty"`
}

// MaxLoopEvictions bounds loops.evictions: the history keeps that many
// evictions per owner and rule.
const MaxLoopEvictions = 100

// Backoff is the retry backoff after a refused eviction.
type Backoff struct {
	Initial metav1.Duration `json:"initial,omitempty"`
	Max     metav1.Duration `json:"max,omitempty"`
}

// ClientConnection paces the enforcer's requests: evictions, records and
// the evictions-in-flight store share QPS and Burst (defaults 50 and 100);
// events have their own budget, EventQPS and EventBurst (defaults 5 and
// 25), so that a storm of events never delays an eviction.
type ClientConnection struct {
	QPS        float32 `json:"qps,omitempty"`
	Burst      int     `json:"burst,omitempty"`
	EventQPS   float32 `json:"eventQPS,omitempty"`
	EventBurst int     `json:"eventBurst,omitempty"`
}

// LeaderElection configures the Lease. Defaults: placement-scheduler /
// placement-scheduler-enforcer, 15s, 10s, 2s.
type LeaderElection struct {
	Disabled       bool            `json:"disabled,omitempty"`
	LeaseNamespace string          `json:"leaseNamespace,omitempty"`
	LeaseName      string          `json:"leaseName,omitempty"`
	LeaseDuration  metav1.Duration `json:"leaseDuration,omitempty"`
	RenewDeadline  metav1.Duration `json:"renewDeadline,omitempty"`
	RetryPeriod    metav1.Duration `json:"retryPeriod,omitempty"`
}
