package enforcer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
)

// The configuration file's type. The file is versioned so that a field can
// change meaning only under a new version.
const (
	ConfigAPIVersion = "enforcer.placement-scheduler.io/v1alpha1"
	ConfigKind       = "EnforcerConfiguration"
)

// Config is the enforcer's configuration file (docs/enforcement.md lists
// every field and its default). A zero field takes its default.
type Config struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
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
	// replacements break again (loops.go). Defaults: 3 evictions, 1h.
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

// Limits cap evictions in flight.
type Limits = evictions.Limits

// LoopDetection says when an owner is looping for a rule: Evictions (N)
// evictions of its pods for the rule within Window, each after the first
// of a pod created after an earlier one (a replacement evicted again), or
// one replacement placed in violation of the rule again within Window.
type LoopDetection struct {
	Evictions int             `json:"evictions,omitempty"`
	Window    metav1.Duration `json:"window,omitempty"`
}

// maxLoopEvictions bounds loops.evictions: the history keeps that many
// evictions per owner and rule.
const maxLoopEvictions = 100

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

// LoadConfig decodes data strictly (an unknown or duplicate field is an
// error naming it), applies the defaults and validates the result. source
// names the file in errors.
func LoadConfig(data []byte, source string) (*Config, error) {
	c := &Config{}
	raw, err := yaml.YAMLToJSONStrict(data) // duplicate keys are errors
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if err := retired(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	// Case-sensitive, and every unknown field named by its path.
	strict, err := sigsjson.UnmarshalStrict(raw, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %w", source, errors.Join(strict...))
	}
	c.defaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return c, nil
}

// retired names a field a former version took, and what replaced it,
// rather than calling it unknown.
func retired(raw []byte) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil // not an object: the strict decoding says why
	}
	if _, ok := fields["metricsBindAddress"]; ok {
		return errors.New(`metricsBindAddress: removed: the endpoints are served over HTTPS with delegated authentication and authorization; delete the field and use the flags --secure-port (default 10261, 0 turns them off) and --bind-address (docs/enforcement.md#endpoints)`)
	}
	return nil
}

func (c *Config) defaults() {
	dur := func(d *metav1.Duration, def time.Duration) {
		if d.Duration == 0 {
			d.Duration = def
		}
	}
	grace := func(d **metav1.Duration) {
		if *d == nil {
			*d = &metav1.Duration{Duration: 30 * time.Second}
		}
	}
	grace(&c.GracePeriod.NodeAffinity)
	grace(&c.GracePeriod.PodAffinity)
	grace(&c.GracePeriod.PodAntiAffinity)
	dur(&c.Resync, time.Minute)
	// Generous: a list that progresses, however slowly, must not fail
	// (its successor would list as slowly); this bound is for one that
	// never ends, an informer the RBAC forbids.
	dur(&c.CacheSyncTimeout, 10*time.Minute)
	if c.EvictionsPerSecond == 0 {
		c.EvictionsPerSecond = 1
	}
	if c.Burst == 0 {
		c.Burst = 5
	}
	if c.Limits.PerNode == 0 {
		c.Limits.PerNode = 1
	}
	if c.Limits.PerNamespace == 0 {
		c.Limits.PerNamespace = 5
	}
	if c.Limits.Total == 0 {
		c.Limits.Total = 10
	}
	if c.Loops.Evictions == 0 {
		c.Loops.Evictions = 3
	}
	dur(&c.Loops.Window, time.Hour)
	if c.Limits.OtherEvictionsFor == nil {
		c.Limits.OtherEvictionsFor = &metav1.Duration{Duration: evictions.DefaultOtherEvictionsFor}
	}
	dur(&c.Backoff.Initial, 10*time.Second)
	dur(&c.Backoff.Max, 5*time.Minute)
	le := &c.LeaderElection
	if le.LeaseNamespace == "" {
		le.LeaseNamespace = "placement-scheduler"
	}
	if le.LeaseName == "" {
		le.LeaseName = "placement-scheduler-enforcer"
	}
	dur(&le.LeaseDuration, 15*time.Second)
	dur(&le.RenewDeadline, 10*time.Second)
	dur(&le.RetryPeriod, 2*time.Second)
	cc := &c.ClientConnection
	if cc.QPS == 0 {
		cc.QPS = 50
	}
	if cc.Burst == 0 {
		cc.Burst = 100
	}
	if cc.EventQPS == 0 {
		cc.EventQPS = 5
	}
	if cc.EventBurst == 0 {
		cc.EventBurst = 25
	}
	if c.Namespaces != nil && len(c.Namespaces.Rules) == 0 {
		c.Namespaces.Rules = []string{"all"}
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.APIVersion != ConfigAPIVersion || c.Kind != ConfigKind {
		errs = append(errs, fmt.Errorf("apiVersion/kind: got %q/%q, want %s/%s", c.APIVersion, c.Kind, ConfigAPIVersion, ConfigKind))
	}
	if c.SchedulerConfig == "" {
		errs = append(errs, errors.New("schedulerConfig: required: the path of placement-scheduler's KubeSchedulerConfiguration"))
	}
	if c.Namespaces != nil {
		if c.Namespaces.Selector == nil {
			errs = append(errs, errors.New("namespaces.selector: required when namespaces is set ({} selects every namespace)"))
		} else if _, err := metav1.LabelSelectorAsSelector(c.Namespaces.Selector); err != nil {
			errs = append(errs, fmt.Errorf("namespaces.selector: %w", err))
		}
		if _, err := ParseRules(strings.Join(c.Namespaces.Rules, ",")); err != nil {
			errs = append(errs, fmt.Errorf("namespaces.rules: %w", err))
		}
	}
	for name, d := range map[string]*metav1.Duration{
		"gracePeriod.nodeAffinity": c.GracePeriod.NodeAffinity, "gracePeriod.podAffinity": c.GracePeriod.PodAffinity,
		"gracePeriod.podAntiAffinity": c.GracePeriod.PodAntiAffinity, "resync": &c.Resync, "cacheSyncTimeout": &c.CacheSyncTimeout,
		"backoff.initial": &c.Backoff.Initial, "backoff.max": &c.Backoff.Max, "loops.window": &c.Loops.Window,
		"limits.otherEvictionsFor": c.Limits.OtherEvictionsFor,
	} {
		if d.Duration < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %s", name, d.Duration))
		}
	}
	if c.EvictionsPerSecond < 0 || c.Burst < 0 {
		errs = append(errs, errors.New("evictionsPerSecond, burst: must be positive"))
	}
	if c.Limits.PerNode < 0 || c.Limits.PerNamespace < 0 || c.Limits.Total < 0 {
		errs = append(errs, errors.New("limits: perNode, perNamespace and total must be positive"))
	}
	if n := c.Loops.Evictions; n < 2 || n > maxLoopEvictions {
		errs = append(errs, fmt.Errorf("loops.evictions: want 2 to %d (the first eviction and at least one of a replacement), got %d", maxLoopEvictions, n))
	}
	if c.Backoff.Max.Duration < c.Backoff.Initial.Duration {
		errs = append(errs, fmt.Errorf("backoff.max (%s) must be at least backoff.initial (%s)", c.Backoff.Max.Duration, c.Backoff.Initial.Duration))
	}
	cc := c.ClientConnection
	for _, f := range []struct {
		name  string
		value float64
	}{
		{"clientConnection.qps", float64(cc.QPS)}, {"clientConnection.burst", float64(cc.Burst)},
		{"clientConnection.eventQPS", float64(cc.EventQPS)}, {"clientConnection.eventBurst", float64(cc.EventBurst)},
	} {
		if f.value < 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive (leave it out for the default), got %v", f.name, f.value))
		}
	}
	if cc.QPS > 0 && float64(cc.Burst) < float64(cc.QPS) {
		errs = append(errs, fmt.Errorf("clientConnection.burst (%d) must be at least clientConnection.qps (%v)", cc.Burst, cc.QPS))
	}
	le := c.LeaderElection
	if !le.Disabled && !(le.RetryPeriod.Duration < le.RenewDeadline.Duration && le.RenewDeadline.Duration < le.LeaseDuration.Duration) {
		errs = append(errs, fmt.Errorf("leaderElection: want retryPeriod < renewDeadline < leaseDuration, got %s, %s, %s", le.RetryPeriod.Duration, le.RenewDeadline.Duration, le.LeaseDuration.Duration))
	}
	return errors.Join(errs...)
}

// grace is the grace period of rule r.
func (c *Config) grace(r Rule) time.Duration {
	switch r {
	case PodAffinity:
		return c.GracePeriod.PodAffinity.Duration
	case PodAntiAffinity:
		return c.GracePeriod.PodAntiAffinity.Duration
	}
	return c.GracePeriod.NodeAffinity.Duration
}

// namespaceRules returns the rules the config enforces in a namespace with
// these labels.
func (c *Config) namespaceRules(nsLabels map[string]string) RuleSet {
	if c.Namespaces == nil {
		return 0
	}
	sel, err := metav1.LabelSelectorAsSelector(c.Namespaces.Selector)
	if err != nil || !sel.Matches(labels.Set(nsLabels)) {
		return 0
	}
	rules, _ := ParseRules(strings.Join(c.Namespaces.Rules, ","))
	return rules
}
