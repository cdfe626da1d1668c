package reliability

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// judgeBindings must fail on every sign of a double or unexplained
// binding, and accept the explained gaps (an unanswered request that
// stored the binding; a record a SIGKILLed apiserver lost) only as far as
// they are explained. No scheduler or apiserver involved.
func TestJudgeBindings(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	req := func(code int32, node string, received float64) binding {
		return binding{Code: code, Target: node, Received: at(received), At: at(received + 0.01)}
	}
	kill := interval{at(100), at(120)} // from inFlight before the SIGKILL to restartSettle after the restart
	for _, c := range []struct {
		name  string
		node  string // where the pod is bound; "" unbound
		binds []binding
		seen  *podSeen // nil: no watch
		gap   interval
		// want is a phrase of the one problem, or "" for none.
		want                               string
		double, unanswered, lost, rejected int
	}{
		{name: "one success to its node", node: "a", binds: []binding{req(201, "a", 1)}},
		{name: "one success, seen after it", node: "a", binds: []binding{req(201, "a", 1)}, seen: &podSeen{at(1.02), []string{"a"}}},
		{name: "a refusal then the success", node: "a", binds: []binding{req(409, "b", 1), req(201, "a", 2)}, rejected: 1},
		{name: "two successes", node: "a", binds: []binding{req(201, "a", 1), req(201, "a", 2)}, want: "2 successful binding requests", double: 1},
		{name: "success to another node", node: "a", binds: []binding{req(201, "b", 1)}, want: `to "b", yet it is bound to "a"`, double: 1},
		{name: "seen on two nodes", node: "b", binds: []binding{req(201, "b", 1)}, seen: &podSeen{at(1.02), []string{"a", "b"}}, want: "seen bound to [a b]", double: 1},
		{name: "seen bound before its success", node: "a", binds: []binding{req(201, "a", 5)}, seen: &podSeen{at(1), []string{"a"}}, want: "before its successful binding request", double: 1},
		{name: "record lost in the kill window", node: "a", seen: &podSeen{at(110), []string{"a"}}, gap: kill, lost: 1},
		{name: "record lost, then refused", node: "a", binds: []binding{req(409, "b", 121)}, seen: &podSeen{at(119), []string{"a"}}, gap: kill, lost: 1, rejected: 1},
		{name: "record lost in the kill window, then a second success", node: "a", binds: []binding{req(201, "a", 125)}, seen: &podSeen{at(110), []string{"a"}}, gap: kill, want: "before its successful binding request", double: 1},
		{name: "no record, outside the kill window", node: "a", seen: &podSeen{at(90), []string{"a"}}, gap: kill, want: "no binding request that could have done it"},
		{name: "no record, no kill", node: "a", seen: &podSeen{at(110), []string{"a"}}, want: "no binding request that could have done it"},
		{name: "no record, no watch", node: "a", gap: kill, want: "no binding request that could have done it"},
		{name: "unanswered request stored it", node: "a", binds: []binding{req(504, "a", 1)}, unanswered: 1, rejected: 1},
		{name: "unanswered request to another node", node: "a", binds: []binding{req(504, "b", 1)}, want: "no binding request that could have done it", rejected: 1},
		{name: "unanswered request after the pod was seen bound", node: "a", binds: []binding{req(500, "a", 5)}, seen: &podSeen{at(1), []string{"a"}}, want: "no binding request that could have done it", rejected: 1},
		{name: "never bound", binds: []binding{req(409, "a", 1)}, want: "never bound", rejected: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{NodeName: c.node}}
			var seen func(string) podSeen
			if c.seen != nil {
				seen = func(string) podSeen { return *c.seen }
			}
			v := judgeBindings([]*v1.Pod{p}, map[string][]binding{"p": c.binds}, seen, c.gap)
			switch {
			case c.want == "" && len(v.problems) > 0:
				t.Errorf("problems %q, want none", v.problems)
			case c.want != "" && (len(v.problems) != 1 || !strings.Contains(v.problems[0], c.want)):
				t.Errorf("problems %q, want one saying %q", v.problems, c.want)
			}
			rejected := 0
			for _, n := range v.Rejected {
				rejected += n
			}
			if v.DoubleBound != c.double || v.Unanswered != c.unanswered || v.AuditLost != c.lost || rejected != c.rejected {
				t.Errorf("double-bound %d, unanswered %d, audit record lost %d, refused %d; want %d, %d, %d, %d",
					v.DoubleBound, v.Unanswered, v.AuditLost, rejected, c.double, c.unanswered, c.lost, c.rejected)
			}
		})
	}
}
