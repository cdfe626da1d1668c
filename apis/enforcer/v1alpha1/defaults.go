package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultOtherEvictionsFor covers a pod's graceful termination (30 s by
// default, minutes for some workloads): a pod still terminating after it
// is stuck (a finalizer, an unreachable node) and no longer a disruption
// in progress, and must not hold the caps for as long as it stays.
const DefaultOtherEvictionsFor = 5 * time.Minute

// SetDefaults_EnforcerConfiguration gives every zero field its default
// (docs/enforcement.md).
func SetDefaults_EnforcerConfiguration(c *EnforcerConfiguration) {
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
		c.Limits.OtherEvictionsFor = &metav1.Duration{Duration: DefaultOtherEvictionsFor}
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
