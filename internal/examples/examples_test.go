package examples

import (
	"context"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// The shipped folders load, and manifests/examples/README.md's table lists
// exactly the folders there are.
func TestLoadShippedExamples(t *testing.T) {
	fsys := manifests.Examples()
	exs, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, ex := range exs {
		have = append(have, ex.Name)
		nss, err := ex.Namespaces()
		if err != nil {
			t.Errorf("%s: %v", ex.Name, err)
		}
		if len(nss) == 0 {
			t.Errorf("%s: creates no namespace; examples carry their own so they apply as-is", ex.Name)
		}
	}
	readme, err := fs.ReadFile(fsys, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Table rows: | `folder` | what it shows |
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(have)
	slices.Sort(listed)
	if len(listed) == 0 || !slices.Equal(have, listed) {
		t.Errorf("example folders %v, manifests/examples/README.md's table lists %v", have, listed)
	}
}

func TestLoadOneRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"no README": {
			files: map[string]string{"check/expect.yaml": "namespace: x\n"},
			want:  "no README.md",
		},
		"no expect": {
			files: map[string]string{"README.md": "x"},
			want:  "no check/expect.yaml",
		},
		"unknown field": {
			files: map[string]string{"README.md": "x", "a.yaml": "", "check/expect.yaml": "namespace: x\nstep: []\n"},
			want:  `unknown field "step"`,
		},
		"missing file": {
			files: map[string]string{"README.md": "x", "check/expect.yaml": "namespace: x\nsteps:\n- apply: [b.yaml]\n  expect: [{pods: a=b}]\n"},
			want:  "steps[0].apply",
		},
		"pods and evicted": {
			files: map[string]string{"README.md": "x", "a.yaml": "", "check/expect.yaml": "namespace: x\nsteps:\n- apply: [a.yaml]\n  expect: [{pods: a=b, evicted: p}]\n"},
			want:  "steps[0].expect[0]: give exactly one of pods",
		},
		"bad selector": {
			files: map[string]string{"README.md": "x", "a.yaml": "", "check/expect.yaml": "namespace: x\nsteps:\n- apply: [a.yaml]\n  expect: [{pods: 'a in b'}]\n"},
			want:  "steps[0].expect[0].pods",
		},
		"pending with nodes": {
			files: map[string]string{"README.md": "x", "a.yaml": "", "check/expect.yaml": "namespace: x\nsteps:\n- apply: [a.yaml]\n  expect: [{pods: a=b, pending: x, nodes: [n]}]\n"},
			want:  ".pending: a pending pod has no node",
		},
		"later step at the top": {
			files: map[string]string{"README.md": "x", "a.yaml": "", "b.yaml": "", "check/expect.yaml": "namespace: x\nsteps:\n- apply: [a.yaml]\n  expect: [{pods: a=b}]\n- apply: [b.yaml]\n  expect: [{pods: a=b}]\n"},
			want:  "steps[1].apply: b.yaml is at the folder's top",
		},
		"first step in a subfolder": {
			files: map[string]string{"README.md": "x", "then/a.yaml": "", "check/expect.yaml": "namespace: x\nsteps:\n- apply: [then/a.yaml]\n  expect: [{pods: a=b}]\n"},
			want:  "steps[0].apply: then/a.yaml is in a subfolder",
		},
		"no namespace": {
			files: map[string]string{"README.md": "x", "a.yaml": "", "check/expect.yaml": "steps:\n- apply: [a.yaml]\n  expect: [{pods: a=b}]\n"},
			want:  ".namespace: empty",
		},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for f, body := range tc.files {
				fsys["ex/"+f] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := LoadOne(fsys, "ex")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadOne: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func node(name string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func pod(name, nodeName string, labels map[string]string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
	p.Spec.NodeName = nodeName
	if nodeName != "" {
		p.Status.Phase = v1.PodRunning
	} else {
		p.Status.Phase = v1.PodPending
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 node(s) had untolerated taint(s)."}}
	}
	return p
}

// check says "" exactly when the expectation holds, and otherwise what
// does not: each case below has one holding and one broken expectation.
func TestCheck(t *testing.T) {
	objs := []runtime.Object{
		node("a1", map[string]string{"zone": "a", "disk": "ssd"}),
		node("a2", map[string]string{"zone": "a", "disk": "hdd"}),
		node("b1", map[string]string{"zone": "b", "disk": "ssd"}),
		pod("web-1", "a1", map[string]string{"app": "web", "run": "1"}),
		pod("web-2", "b1", map[string]string{"app": "web", "run": "1"}),
		pod("web-3", "a2", map[string]string{"app": "web", "run": "2"}),
		pod("db-1", "a1", map[string]string{"app": "db"}),
		pod("db-2", "b1", map[string]string{"app": "db"}),
		pod("db-3", "a2", map[string]string{"app": "db"}),
		pod("stuck", "", map[string]string{"app": "stuck"}),
	}
	r := &Runner{Client: fake.NewClientset(objs...)}
	for name, tc := range map[string]struct {
		holds, broken Expectation
		brokenSays    string
	}{
		"count": {
			holds:      Expectation{Pods: "app=web", Count: ptr.To(3)},
			broken:     Expectation{Pods: "app=web", Count: ptr.To(2)},
			brokenSays: "3 pod(s)",
		},
		"nodes": {
			holds:      Expectation{Pods: "app=web", Nodes: []string{"a1", "a2", "b1"}},
			broken:     Expectation{Pods: "app=web", Nodes: []string{"a1", "b1"}},
			brokenSays: "web-3 is on a2",
		},
		"nodeLabels": {
			holds:      Expectation{Pods: "app=web,run=1", NodeLabels: map[string]string{"disk": "ssd"}},
			broken:     Expectation{Pods: "app=web", NodeLabels: map[string]string{"disk": "ssd"}},
			brokenSays: `whose disk is "hdd"`,
		},
		"spreadBy with groupBy": {
			holds:      Expectation{Pods: "app=web", SpreadBy: "zone", GroupBy: "run"},
			broken:     Expectation{Pods: "app=web", SpreadBy: "zone"},
			brokenSays: "shares zone=a",
		},
		"sameNodesAs": {
			holds:      Expectation{Pods: "app=web", SameNodesAs: "app=db"},
			broken:     Expectation{Pods: "app=web,run=1", SameNodesAs: "app=db"},
			brokenSays: "app=db on [a1 a2 b1]",
		},
		"pending": {
			holds:      Expectation{Pods: "app=stuck", Pending: "untolerated taint"},
			broken:     Expectation{Pods: "app=stuck", Pending: "didn't match pod affinity"},
			brokenSays: "not yet unschedulable with that reason",
		},
		"bound": {
			holds:      Expectation{Pods: "app=db"},
			broken:     Expectation{Pods: "app in (db,stuck)"},
			brokenSays: "stuck not yet bound",
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if why, err := r.check(ctx, "ns", tc.holds); err != nil || why != "" {
				t.Errorf("holding expectation: why=%q err=%v, want it to hold", why, err)
			}
			why, err := r.check(ctx, "ns", tc.broken)
			if err != nil || !strings.Contains(why, tc.brokenSays) {
				t.Errorf("broken expectation: why=%q err=%v, want %q", why, err, tc.brokenSays)
			}
		})
	}
}
