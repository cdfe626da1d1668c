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

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// LoadConfig decodes data strictly (an unknown or duplicate field is an
// error naming it), applies the defaults and validates the result. source
// names the file in errors.
func LoadConfig(data []byte, source string) (*enforcerv1alpha1.EnforcerConfiguration, error) {
	c := &enforcerv1alpha1.EnforcerConfiguration{}
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
	enforcerv1alpha1.SetDefaults_EnforcerConfiguration(c)
	if err := enforcerv1alpha1.Messages(enforcerv1alpha1.Validate(c)); err != nil {
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

// grace is the grace period of rule r.
func grace(c *enforcerv1alpha1.EnforcerConfiguration, r enforcerv1alpha1.Rule) time.Duration {
	switch r {
	case enforcerv1alpha1.PodAffinity:
		return c.GracePeriod.PodAffinity.Duration
	case enforcerv1alpha1.PodAntiAffinity:
		return c.GracePeriod.PodAntiAffinity.Duration
	}
	return c.GracePeriod.NodeAffinity.Duration
}

// namespaceRules returns the rules the config enforces in a namespace with
// these labels.
func namespaceRules(c *enforcerv1alpha1.EnforcerConfiguration, nsLabels map[string]string) RuleSet {
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
