package placementcmd

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Live, pods and nodes are listed page by page (limit and continue, as
// kubectl does) and each object arrives trimmed: no managedFields, no
// last-applied annotation, no kubelet-only status.
func TestLiveListsArePagedAndTrimmed(t *testing.T) {
	client := fake.NewSimpleClientset() //nolint:staticcheck // NewClientset's field management is not needed here
	const pods = 2*pageSize + 1
	add := func(o runtime.Object) {
		if err := client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	add(tu.MakeNamespace("default", nil))
	for i := range 3 {
		add(tu.MakeNode(fmt.Sprintf("n%d", i)).Capacity("4", "8Gi", 110).Ready().Obj())
	}
	for i := range pods {
		p := tu.MakePod("default", fmt.Sprintf("p%04d", i)).NodeName("n0").Request("10m", "10Mi").Obj()
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
		p.Annotations = map[string]string{v1.LastAppliedConfigAnnotation: "{}", "team": "shop"}
		p.Status.Phase, p.Status.PodIP = v1.PodRunning, "10.1.0.1"
		add(p)
	}
	// The fake serves every list whole; this serves pods and nodes in
	// pages of the size asked for, as the apiserver does, and records
	// each request's limit and continue token.
	requests := map[string][]metav1.ListOptions{}
	for _, res := range []string{"pods", "nodes"} {
		client.PrependReactor("list", res, func(a clienttesting.Action) (bool, runtime.Object, error) {
			la := a.(clienttesting.ListActionImpl)
			opts := la.GetListOptions()
			requests[res] = append(requests[res], opts)
			all, err := client.Tracker().List(la.GetResource(), la.GetKind(), la.GetNamespace())
			if err != nil {
				return true, nil, err
			}
			return true, page(t, all, opts), nil
		})
	}

	cl, err := liveCluster(context.Background(), client, "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Pods) != pods || len(cl.Nodes) != 3 {
		t.Fatalf("read %d pods and %d nodes, want %d and 3", len(cl.Pods), len(cl.Nodes), pods)
	}
	seen := map[string]bool{}
	for _, p := range cl.Pods {
		seen[p.Name] = true
		if p.ManagedFields != nil || p.Annotations[v1.LastAppliedConfigAnnotation] != "" || p.Status.PodIP != "" {
			t.Fatalf("pod %s not trimmed: %+v", p.Name, p)
		}
		if p.Annotations["team"] != "shop" || p.Status.Phase != v1.PodRunning {
			t.Fatalf("pod %s lost what placement reads: %+v", p.Name, p)
		}
	}
	if len(seen) != pods {
		t.Errorf("%d distinct pods, want %d", len(seen), pods)
	}
	want := []metav1.ListOptions{{Limit: pageSize}, {Limit: pageSize, Continue: "500"}, {Limit: pageSize, Continue: "1000"}}
	if got := requests["pods"]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pod list requests %+v, want %+v", got, want)
	}
	if got := requests["nodes"]; len(got) != 1 || got[0].Limit != pageSize {
		t.Errorf("node list requests %+v, want one with limit %d", got, pageSize)
	}
}

// page is the part of list opts asks for: Limit items from the offset its
// Continue token holds, with the next token when more remain.
func page(t *testing.T, list runtime.Object, opts metav1.ListOptions) runtime.Object {
	t.Helper()
	start := 0
	if opts.Continue != "" {
		var err error
		if start, err = strconv.Atoi(opts.Continue); err != nil {
			t.Fatalf("continue token %q", opts.Continue)
		}
	}
	cut := func(n int) (int, string) {
		end := n
		if opts.Limit > 0 && start+int(opts.Limit) < n {
			end = start + int(opts.Limit)
			return end, strconv.Itoa(end)
		}
		return end, ""
	}
	switch l := list.(type) {
	case *v1.PodList:
		sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
		end, next := cut(len(l.Items))
		return &v1.PodList{ListMeta: metav1.ListMeta{Continue: next}, Items: l.Items[start:end]}
	case *v1.NodeList:
		end, next := cut(len(l.Items))
		return &v1.NodeList{ListMeta: metav1.ListMeta{Continue: next}, Items: l.Items[start:end]}
	}
	t.Fatalf("unexpected list %T", list)
	return nil
}
