package integration

import (
	"strings"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// invalidConfigCase is one bad config: the shipped one with one edit.
type invalidConfigCase struct {
	name string
	// config is the whole KubeSchedulerConfiguration.
	config string
	// want are substrings of the start-up error: the field (or plugin) at
	// fault and what to do about it.
	want []string
}

// shippedWith returns the shipped config with old replaced by new (once),
// failing the test if old is gone.
func shippedWith(t *testing.T, old, new string) string {
	t.Helper()
	shipped := string(manifests.SchedulerConfig())
	if !strings.Contains(shipped, old) {
		t.Fatalf("shipped config no longer contains %q; update this test", old)
	}
	return strings.Replace(shipped, old, new, 1)
}

const (
	ipaArgs = "      - name: PlacementInterPodAffinity\n        args:\n          hardPodAffinityWeight: 1\n          ignorePreferredTermsOfExistingPods: false\n"
	// naEntry is the shipped multiPoint entry of PlacementNodeAffinity.
	naEntry = "          - name: PlacementNodeAffinity\n            weight: 2\n"
)

// withIPAArgs replaces the shipped PlacementInterPodAffinity args with args
// (YAML lines at the args' indentation).
func withIPAArgs(t *testing.T, args string) string {
	t.Helper()
	return shippedWith(t, ipaArgs, "      - name: PlacementInterPodAffinity\n        args:\n"+args)
}

// withNAArgs adds a PlacementNodeAffinity pluginConfig entry with args.
func withNAArgs(t *testing.T, args string) string {
	t.Helper()
	return shippedWith(t, "    pluginConfig:\n", "    pluginConfig:\n      - name: PlacementNodeAffinity\n        args:\n"+args)
}

// addedAffinityRequired is NodeAffinityArgs with one required term made of
// the given matchExpressions / matchFields lines.
func addedAffinityRequired(lines string) string {
	return "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n              nodeSelectorTerms:\n" + lines
}

// Every field of our plugins' args and every profile shape the README and
// docs/behavior.md warn about, each failing at start-up (app.Setup, what the
// binary runs from --config) with an error that names the field and says
// what to do.
func TestInvalidConfigTable(t *testing.T) {
	const field = "PlacementNodeAffinity"
	cases := []invalidConfigCase{
		// ---- PlacementNodeAffinity: NodeAffinityArgs.addedAffinity ----
		{
			name: "addedAffinity: unknown operator",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: pool, operator: Bogus, values: [a]}\n")),
			want: []string{field, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
				`"Bogus"`, `"DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"`},
		},
		{
			name: "addedAffinity: In without values",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: pool, operator: In}\n")),
			want: []string{field, "nodeSelectorTerms[0].matchExpressions[0].values", "must be specified when `operator` is 'In' or 'NotIn'"},
		},
		{
			name: "addedAffinity: Exists with values",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: pool, operator: Exists, values: [a]}\n")),
			want: []string{field, "matchExpressions[0].values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
		},
		{
			name: "addedAffinity: Gt with a non-integer value",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: kernel, operator: Gt, values: [\"5.4\"]}\n")),
			want: []string{field, "matchExpressions[0].values[0]", "must be an integer"},
		},
		{
			name: "addedAffinity: Lt with two values",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: kernel, operator: Lt, values: [\"5\", \"6\"]}\n")),
			want: []string{field, "matchExpressions[0].values", "must be specified single value when `operator` is 'Lt' or 'Gt'"},
		},
		{
			name: "addedAffinity: invalid label key",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: \"bad key!\", operator: Exists}\n")),
			want: []string{field, "matchExpressions[0].key", `"bad key!"`, "name part must consist of alphanumeric characters"},
		},
		{
			name: "addedAffinity: matchFields on an unsupported field",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchFields:\n                    - {key: metadata.uid, operator: In, values: [x]}\n")),
			want: []string{field, "matchFields[0].key", `"metadata.uid"`, `"metadata.name"`},
		},
		{
			name:   "addedAffinity: required with no terms",
			config: withNAArgs(t, "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n              nodeSelectorTerms: []\n"),
			want:   []string{field, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "must have at least one node selector term"},
		},
		{
			name:   "addedAffinity: preferred weight out of range",
			config: withNAArgs(t, "          addedAffinity:\n            preferredDuringSchedulingIgnoredDuringExecution:\n              - weight: 0\n                preference:\n                  matchExpressions:\n                    - {key: pool, operator: Exists}\n"),
			want:   []string{field, "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "must be in the range 1-100"},
		},
		{
			name:   "addedAffinity: misspelt",
			config: withNAArgs(t, "          addedAfinity: {}\n"),
			want:   []string{field, `unknown field "addedAfinity"`, "addedAffinity"},
		},
		{
			name:   "addedAffinity: unknown field inside",
			config: withNAArgs(t, "          addedAffinity:\n            requiredDuringScheduling: {}\n"),
			want:   []string{field, `unknown field "addedAffinity.requiredDuringScheduling"`, "requiredDuringSchedulingIgnoredDuringExecution"},
		},
		{
			name:   "addedAffinity: wrong type",
			config: withNAArgs(t, "          addedAffinity: pool=foo\n"),
			want:   []string{field, "addedAffinity", "NodeAffinity", "string"},
		},
		{
			name:   "addedAffinity: values not a list",
			config: withNAArgs(t, addedAffinityRequired("                - matchExpressions:\n                    - {key: pool, operator: In, values: foo}\n")),
			want:   []string{field, "values", "[]string", "string"},
		},
		{
			name:   "NodeAffinityArgs: not an object",
			config: shippedWith(t, "    pluginConfig:\n", "    pluginConfig:\n      - name: PlacementNodeAffinity\n        args: [addedAffinity]\n"),
			want:   []string{field, "NodeAffinityArgs", "array"},
		},

		// ---- PlacementInterPodAffinity: InterPodAffinityArgs ----
		{
			name:   "hardPodAffinityWeight above range",
			config: withIPAArgs(t, "          hardPodAffinityWeight: 101\n"),
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight", "101", "not in valid range [0, 100]"},
		},
		{
			name:   "hardPodAffinityWeight negative",
			config: withIPAArgs(t, "          hardPodAffinityWeight: -1\n"),
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight", "-1", "not in valid range [0, 100]"},
		},
		{
			name:   "hardPodAffinityWeight not a number",
			config: withIPAArgs(t, "          hardPodAffinityWeight: high\n"),
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight", "int32", "string"},
		},
		{
			name:   "hardPodAffinityWeight fractional",
			config: withIPAArgs(t, "          hardPodAffinityWeight: 1.5\n"),
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight", "int32", "1.5"},
		},
		{
			name:   "hardPodAffinityWeight beyond int32",
			config: withIPAArgs(t, "          hardPodAffinityWeight: 4294967297\n"),
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight", "int32"},
		},
		{
			name:   "hardPodAffinityWeight twice",
			config: withIPAArgs(t, "          hardPodAffinityWeight: 1\n          hardPodAffinityWeight: 2\n"),
			want:   []string{"PlacementInterPodAffinity", `"hardPodAffinityWeight"`, "duplicate", "once"},
		},
		{
			name:   "ignorePreferredTermsOfExistingPods not a bool",
			config: withIPAArgs(t, "          ignorePreferredTermsOfExistingPods: \"yes\"\n"),
			want:   []string{"PlacementInterPodAffinity", "ignorePreferredTermsOfExistingPods", "bool", "string"},
		},
		{
			name:   "InterPodAffinityArgs: unknown field",
			config: withIPAArgs(t, "          hardPodAffinityWieght: 1\n"),
			want:   []string{"PlacementInterPodAffinity", `unknown field "hardPodAffinityWieght"`, "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"},
		},
		{
			name:   "InterPodAffinityArgs: not an object",
			config: withIPAArgs(t, "          - 1\n"),
			want:   []string{"PlacementInterPodAffinity", "InterPodAffinityArgs", "array"},
		},
		{
			name:   "args for a plugin without args",
			config: shippedWith(t, "    pluginConfig:\n", "    pluginConfig:\n      - name: PlacementTaintToleration\n        args: {tolerateAll: true}\n"),
			want:   []string{"PlacementTaintToleration", "takes no args", "remove"},
		},

		// ---- profile shapes ----
		{
			name:   "ours enabled twice",
			config: shippedWith(t, naEntry, naEntry+naEntry),
			want:   []string{`"PlacementNodeAffinity"`, "already registered"},
		},
		{
			name:   "ours and the in-tree plugin in the same slot",
			config: shippedWith(t, naEntry, naEntry+"          - name: NodeAffinity\n            weight: 2\n"),
			want:   []string{"PlacementNodeAffinity", "NodeAffinity", "replaces", "disable"},
		},
		{
			name:   "ours enabled without disabling \"*\"",
			config: shippedWith(t, "        disabled:\n          - name: \"*\"\n", ""),
			want:   []string{"PlacementNodeAffinity", "NodeAffinity", "replaces", `"*"`},
		},
		{
			name:   "unknown plugin name",
			config: shippedWith(t, naEntry, "          - name: PlacementNodeAfinity\n            weight: 2\n"),
			want:   []string{`"PlacementNodeAfinity"`, "does not exist"},
		},
		{
			name:   "in-tree name for ours' args",
			config: shippedWith(t, "      - name: PlacementInterPodAffinity\n        args:\n", "      - name: InterPodAffinity\n        args:\n"),
			want:   []string{"InterPodAffinity", "not enabled"},
		},
		{
			name:   "args for ours twice",
			config: shippedWith(t, "    pluginConfig:\n", "    pluginConfig:\n"+ipaArgs),
			want:   []string{"PlacementInterPodAffinity", "repeated config"},
		},
		{
			name:   "score weight on ours out of range",
			config: shippedWith(t, naEntry, "          - name: PlacementNodeAffinity\n            weight: 1000000\n"),
			want:   []string{"PlacementNodeAffinity", "weight"},
		},
		{
			name:   "negative score weight on ours",
			config: shippedWith(t, naEntry, "          - name: PlacementNodeAffinity\n            weight: -2\n"),
			want:   []string{"PlacementNodeAffinity", "weight"},
		},
		{
			name:   "unknown field in a plugin entry",
			config: shippedWith(t, naEntry, "          - name: PlacementNodeAffinity\n            wieght: 2\n"),
			want:   []string{`unknown field "profiles[0].plugins.multiPoint.enabled[5].wieght"`},
		},
		{
			name: "two profiles with one schedulerName",
			config: shippedWith(t, "profiles:\n", "profiles:\n  - schedulerName: placement-scheduler\n"+
				"    plugins:\n      multiPoint:\n        disabled:\n          - name: \"*\"\n        enabled:\n          - name: PrioritySort\n          - name: DefaultBinder\n"),
			want: []string{"schedulerName", "placement-scheduler", "Duplicate"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := setupConfig(t, []byte(tc.config))
			if err == nil {
				t.Fatalf("app.Setup accepted the config, want a start-up error naming %q", tc.want)
			}
			t.Logf("error: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}
