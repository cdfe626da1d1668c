package v1alpha1

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted configuration. Each error's Field is the
// field's path and its Detail the whole one-line message, field name and
// fix included (the messages docs/enforcement.md and its tests quote):
// Messages joins them as LoadConfig reports them.
func Validate(c *EnforcerConfiguration) field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != ConfigAPIVersion || c.Kind != ConfigKind {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), c.APIVersion+"/"+c.Kind, fmt.Sprintf("apiVersion/kind: got %q/%q, want %s/%s", c.APIVersion, c.Kind, ConfigAPIVersion, ConfigKind)))
	}
	if c.SchedulerConfig == "" {
		errs = append(errs, field.Required(field.NewPath("schedulerConfig"), "schedulerConfig: required: the path of placement-scheduler's KubeSchedulerConfiguration"))
	}
	if c.Namespaces != nil {
		if c.Namespaces.Selector == nil {
			errs = append(errs, field.Required(field.NewPath("namespaces", "selector"), "namespaces.selector: required when namespaces is set ({} selects every namespace)"))
		} else if _, err := metav1.LabelSelectorAsSelector(c.Namespaces.Selector); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("namespaces", "selector"), c.Namespaces.Selector, "namespaces.selector: "+err.Error()))
		}
		if _, _, err := ParseRuleList(strings.Join(c.Namespaces.Rules, ",")); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("namespaces", "rules"), c.Namespaces.Rules, "namespaces.rules: "+err.Error()))
		}
	}
	for name, d := range map[string]*metav1.Duration{
		"gracePeriod.nodeAffinity": c.GracePeriod.NodeAffinity, "gracePeriod.podAffinity": c.GracePeriod.PodAffinity,
		"gracePeriod.podAntiAffinity": c.GracePeriod.PodAntiAffinity, "resync": &c.Resync, "cacheSyncTimeout": &c.CacheSyncTimeout,
		"backoff.initial": &c.Backoff.Initial, "backoff.max": &c.Backoff.Max, "loops.window": &c.Loops.Window,
		"limits.otherEvictionsFor": c.Limits.OtherEvictionsFor,
	} {
		if d.Duration < 0 {
			errs = append(errs, field.Invalid(field.NewPath(name), d.Duration.String(), fmt.Sprintf("%s: must not be negative, got %s", name, d.Duration)))
		}
	}
	if c.EvictionsPerSecond < 0 || c.Burst < 0 {
		errs = append(errs, field.Invalid(field.NewPath("evictionsPerSecond"), c.EvictionsPerSecond, "evictionsPerSecond, burst: must be positive"))
	}
	if c.Limits.PerNode < 0 || c.Limits.PerNamespace < 0 || c.Limits.Total < 0 {
		errs = append(errs, field.Invalid(field.NewPath("limits"), c.Limits, "limits: perNode, perNamespace and total must be positive"))
	}
	if n := c.Loops.Evictions; n < 2 || n > MaxLoopEvictions {
		errs = append(errs, field.Invalid(field.NewPath("loops", "evictions"), n, fmt.Sprintf("loops.evictions: want 2 to %d (the first eviction and at least one of a replacement), got %d", MaxLoopEvictions, n)))
	}
	if c.Backoff.Max.Duration < c.Backoff.Initial.Duration {
		errs = append(errs, field.Invalid(field.NewPath("backoff", "max"), c.Backoff.Max.Duration.String(), fmt.Sprintf("backoff.max (%s) must be at least backoff.initial (%s)", c.Backoff.Max.Duration, c.Backoff.Initial.Duration)))
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
			errs = append(errs, field.Invalid(field.NewPath(f.name), f.value, fmt.Sprintf("%s: must be positive (leave it out for the default), got %v", f.name, f.value)))
		}
	}
	if cc.QPS > 0 && float64(cc.Burst) < float64(cc.QPS) {
		errs = append(errs, field.Invalid(field.NewPath("clientConnection", "burst"), cc.Burst, fmt.Sprintf("clientConnection.burst (%d) must be at least clientConnection.qps (%v)", cc.Burst, cc.QPS)))
	}
	le := c.LeaderElection
	if !le.Disabled && !(le.RetryPeriod.Duration < le.RenewDeadline.Duration && le.RenewDeadline.Duration < le.LeaseDuration.Duration) {
		errs = append(errs, field.Invalid(field.NewPath("leaderElection"), nil, fmt.Sprintf("leaderElection: want retryPeriod < renewDeadline < leaseDuration, got %s, %s, %s", le.RetryPeriod.Duration, le.RenewDeadline.Duration, le.LeaseDuration.Duration)))
	}
	return errs
}

// Messages is the errors of Validate, one line each, or nil.
func Messages(errs field.ErrorList) error {
	msgs := make([]error, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, errors.New(e.Detail))
	}
	return errors.Join(msgs...)
}
