package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
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

// Every field of our plugins' args and every profile shape docs/operations.md and
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
				`Unsupported value: "Bogus": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"`},
		},
		{
			name: "addedAffinity: In without values",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: pool, operator: In}\n")),
			want: []string{field, "nodeSelectorTerms[0].matchExpressions[0].values", "for 'in', 'notin' operators, values set can't be empty"},
		},
		{
			name: "addedAffinity: Exists with values",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: pool, operator: Exists, values: [a]}\n")),
			want: []string{field, "matchExpressions[0].values", "values set must be empty for exists and does not exist"},
		},
		{
			name: "addedAffinity: Gt with a non-integer value",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: kernel, operator: Gt, values: [\"5.4\"]}\n")),
			want: []string{field, "matchExpressions[0].values[0]", `"5.4"`, "for 'Gt', 'Lt' operators, the value must be an integer"},
		},
		{
			name: "addedAffinity: Lt with two values",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: kernel, operator: Lt, values: [\"5\", \"6\"]}\n")),
			want: []string{field, "matchExpressions[0].values", "for 'Gt', 'Lt' operators, exactly one value is required"},
		},
		{
			name: "addedAffinity: invalid label key",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchExpressions:\n                    - {key: \"bad key!\", operator: Exists}\n")),
			want: []string{field, "matchExpressions[0].key", `"bad key!"`, "name part must consist of alphanumeric characters"},
		},
		{
			name:   "addedAffinity: misspelt",
			config: withNAArgs(t, "          addedAfinity: {}\n"),
			want:   []string{field, `unknown field "addedAfinity" (valid fields: addedAffinity)`},
		},
		{
			name:   "addedAffinity: unknown field inside",
			config: withNAArgs(t, "          addedAffinity:\n            requiredDuringScheduling: {}\n"),
			want: []string{field, `unknown field "addedAffinity.requiredDuringScheduling" (valid fields of addedAffinity: ` +
				`preferredDuringSchedulingIgnoredDuringExecution, requiredDuringSchedulingIgnoredDuringExecution)`},
		},
		{
			name:   "addedAffinity: wrong type",
			config: withNAArgs(t, "          addedAffinity: pool=foo\n"),
			want:   []string{field, "addedAffinity must be an object (NodeAffinity), not string"},
		},
		{
			name:   "addedAffinity: values not a list",
			config: withNAArgs(t, addedAffinityRequired("                - matchExpressions:\n                    - {key: pool, operator: In, values: foo}\n")),
			want:   []string{field, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.matchExpressions.values must be a list of strings, not string"},
		},
		{
			name:   "NodeAffinityArgs: not an object",
			config: shippedWith(t, "    pluginConfig:\n", "    pluginConfig:\n      - name: PlacementNodeAffinity\n        args: [addedAffinity]\n"),
			want:   []string{field, "args must be an object (NodeAffinityArgs), not array"},
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
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight must be an integer (int32), not string"},
		},
		{
			name:   "hardPodAffinityWeight fractional",
			config: withIPAArgs(t, "          hardPodAffinityWeight: 1.5\n"),
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight must be an integer (int32), not number 1.5"},
		},
		{
			name:   "hardPodAffinityWeight beyond int32",
			config: withIPAArgs(t, "          hardPodAffinityWeight: 4294967297\n"),
			want:   []string{"PlacementInterPodAffinity", "hardPodAffinityWeight must be an integer (int32), not number 4294967297"},
		},
		{
			name:   "ignorePreferredTermsOfExistingPods not a bool",
			config: withIPAArgs(t, "          ignorePreferredTermsOfExistingPods: \"yes\"\n"),
			want:   []string{"PlacementInterPodAffinity", "ignorePreferredTermsOfExistingPods must be true or false, not string"},
		},
		{
			name:   "InterPodAffinityArgs: unknown field",
			config: withIPAArgs(t, "          hardPodAffinityWieght: 1\n"),
			want:   []string{"PlacementInterPodAffinity", `unknown field "hardPodAffinityWieght" (valid fields: hardPodAffinityWeight, ignorePreferredTermsOfExistingPods)`},
		},
		{
			name:   "InterPodAffinityArgs: not an object",
			config: withIPAArgs(t, "          - 1\n"),
			want:   []string{"PlacementInterPodAffinity", "args must be an object (InterPodAffinityArgs), not array"},
		},
		{
			name:   "args for a plugin without args",
			config: shippedWith(t, "    pluginConfig:\n", "    pluginConfig:\n      - name: PlacementTaintToleration\n        args: {tolerateAll: true}\n"),
			want:   []string{`"PlacementTaintToleration": this plugin takes no args: remove its pluginConfig entry (got fields: tolerateAll)`},
		},

		// ---- profile shapes ----
		{
			name:   "ours enabled twice",
			config: shippedWith(t, naEntry, naEntry+naEntry),
			want:   []string{`profile "placement-scheduler": plugins.multiPoint.enabled lists "PlacementNodeAffinity" twice: list it once`},
		},
		{
			name:   "ours and the in-tree plugin in the same slot",
			config: shippedWith(t, naEntry, naEntry+"          - name: NodeAffinity\n            weight: 2\n"),
			want: []string{`profile "placement-scheduler": PlacementNodeAffinity replaces the in-tree NodeAffinity, but both are enabled`,
				"disable NodeAffinity in this profile"},
		},
		{
			name:   "ours enabled without disabling \"*\"",
			config: shippedWith(t, "        disabled:\n          - name: \"*\"\n", ""),
			want: []string{"PlacementNodeAffinity replaces the in-tree NodeAffinity, but both are enabled",
				"PlacementInterPodAffinity replaces the in-tree InterPodAffinity, but both are enabled", `or disable "*" and list every plugin`},
		},
		{
			name:   "unknown plugin name",
			config: shippedWith(t, naEntry, "          - name: PlacementNodeAfinity\n            weight: 2\n"),
			want:   []string{`plugins.multiPoint.enabled: no plugin is named "PlacementNodeAfinity": did you mean "PlacementNodeAffinity"?`},
		},
		{
			name:   "in-tree name for ours' args",
			config: shippedWith(t, "      - name: PlacementInterPodAffinity\n        args:\n", "      - name: InterPodAffinity\n        args:\n"),
			want: []string{`pluginConfig has args for InterPodAffinity, which is not enabled, so nothing would read them`,
				"name the entry PlacementInterPodAffinity"},
		},
		{
			name:   "args for ours twice",
			config: shippedWith(t, "    pluginConfig:\n", "    pluginConfig:\n"+ipaArgs),
			want:   []string{`profiles[0].pluginConfig[1]: Duplicate value: "PlacementInterPodAffinity"`},
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
			want: []string{`profiles[1].schedulerName: "placement-scheduler" is also the name of profiles[0]: give each profile its own schedulerName`},
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

// Shapes that look wrong but start, each for a stated reason. Pinned so that
// making ours stricter (or upstream looser) is a decision, not an accident.
func TestConfigShapesAcceptedLikeUpstream(t *testing.T) {
	cases := []struct {
		name, config, why string
	}{
		{
			name: "addedAffinity: matchFields on a field other than metadata.name",
			config: withNAArgs(t, addedAffinityRequired(
				"                - matchFields:\n                    - {key: metadata.uid, operator: In, values: [x]}\n")),
			why: "upstream's NodeAffinityArgs validation, which ours runs, accepts it for the in-tree NodeAffinity; " +
				"the term matches no node at run time, as upstream's (the equivalence suite compares both)",
		},
		{
			name:   "addedAffinity: required with no terms",
			config: withNAArgs(t, "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n              nodeSelectorTerms: []\n"),
			why: "accepted by upstream's validation; every pod of the profile is then rejected with " +
				"\"node(s) didn't match scheduler-enforced node affinity\", exactly as with the in-tree plugin",
		},
		{
			name:   "addedAffinity: preferred weights outside 1..100",
			config: withNAArgs(t, "          addedAffinity:\n            preferredDuringSchedulingIgnoredDuringExecution:\n              - weight: 0\n                preference:\n                  matchExpressions:\n                    - {key: pool, operator: Exists}\n              - weight: -5\n                preference:\n                  matchExpressions:\n                    - {key: pool, operator: Exists}\n"),
			why:    "upstream does not range-check addedAffinity's preferred weights; ours scores them as upstream does",
		},
		{
			name:   "hardPodAffinityWeight twice",
			config: withIPAArgs(t, "          hardPodAffinityWeight: 1\n          hardPodAffinityWeight: 2\n"),
			why: "kube-scheduler's config loader collapses duplicate YAML keys (the last wins) before any plugin " +
				"sees its args, for in-tree and out-of-tree plugins alike; our strict decoder only sees the result",
		},
		{
			name:   "score weight far above 100 on ours",
			config: shippedWith(t, naEntry, "          - name: PlacementNodeAffinity\n            weight: 1000000\n"),
			why:    "kube-scheduler bounds only the total (MaxTotalScore), for every plugin; same as NodeAffinity with that weight",
		},
		{
			name:   "negative score weight on ours",
			config: shippedWith(t, naEntry, "          - name: PlacementNodeAffinity\n            weight: -2\n"),
			why:    "kube-scheduler accepts it for every plugin (it inverts the preference); ours behaves as NodeAffinity would",
		},
		{
			name: "ours after the other defaults (\"*\" kept, the in-tree four disabled by name)",
			config: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: false}\nprofiles:\n" +
				"  - schedulerName: placement-scheduler\n    plugins:\n      multiPoint:\n        enabled:\n" +
				"          - name: PlacementNodeName\n          - name: PlacementTaintToleration\n            weight: 3\n" +
				"          - name: PlacementNodeAffinity\n            weight: 2\n          - name: PlacementInterPodAffinity\n            weight: 2\n" +
				"        disabled:\n          - name: NodeName\n          - name: TaintToleration\n          - name: NodeAffinity\n          - name: InterPodAffinity\n",
			why: "a valid profile: each plugin runs once with its weight; only the filter order differs from " +
				"upstream's (docs/operations.md, \"Configuring a profile\"), which the shipped-config test holds our own configs to",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := setupConfig(t, []byte(tc.config)); err != nil {
				t.Errorf("start-up failed: %v\naccepted on purpose: %s", err, tc.why)
			}
		})
	}
}

// The binary itself runs the profile checks before kube-scheduler's start-up
// (cmd/scheduler wires schedulerapp.CheckConfigFile into the command).
func TestBinaryRejectsBadProfileAtStartup(t *testing.T) {
	cfg := shippedWith(t, naEntry, naEntry+"          - name: NodeAffinity\n            weight: 2\n")
	s := env.StartScheduler(t, framework.SchedulerOptions{Config: []byte(cfg)})
	select {
	case <-s.Done():
	case <-time.After(env.Timeout):
		t.Fatalf("placement-scheduler still running after %v with ours and the in-tree NodeAffinity both enabled", env.Timeout)
	}
	err := s.Err()
	if err == nil {
		t.Fatal("placement-scheduler exited 0 with ours and the in-tree NodeAffinity both enabled")
	}
	if log := s.LogTail(20); !strings.Contains(log, "PlacementNodeAffinity replaces the in-tree NodeAffinity, but both are enabled") {
		t.Errorf("exit %v; log does not name the clash:\n%s", err, log)
	}
}
