package v1alpha1

import (
	"fmt"
	"strings"
)

// Rule is a kind of placement rule the enforcer can hold a running pod to.
type Rule string

// The rule kinds. A pod's rule of each kind is its own required terms of that
// kind (plus, for node affinity, its nodeSelector and its profile's
// addedAffinity); see docs/behavior.md §12.
const (
	NodeAffinity    Rule = "node-affinity"
	PodAffinity     Rule = "pod-affinity"
	PodAntiAffinity Rule = "pod-anti-affinity"
)

// Rules returns every rule kind, in the order a pod is judged.
func Rules() []Rule { return []Rule{NodeAffinity, PodAffinity, PodAntiAffinity} }

// ParseRuleList parses an annotation value or a config list: "all", "none",
// or rule kinds separated by commas (spaces allowed). An unknown kind is an
// error naming it and the valid ones.
func ParseRuleList(value string) (all bool, kinds []Rule, err error) {
	v := strings.TrimSpace(value)
	switch v {
	case "all":
		return true, nil, nil
	case "none":
		return false, nil, nil
	}
	for part := range strings.SplitSeq(v, ",") {
		r := Rule(strings.TrimSpace(part))
		if !isRule(r) {
			valid := []string{"all", "none"}
			for _, k := range Rules() {
				valid = append(valid, string(k))
			}
			return false, nil, fmt.Errorf("unknown rule kind %q (valid: %s)", r, strings.Join(valid, ", "))
		}
		kinds = append(kinds, r)
	}
	return false, kinds, nil
}

func isRule(r Rule) bool {
	for _, k := range Rules() {
		if r == k {
			return true
		}
	}
	return false
}
