package placementcmd

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const report = `[
 {"pod":"shop/web-1","uid":"u1","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","terms":["term 1: pool In [a]: node has pool=b"],"state":"evicting","target":"n2","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/web-2","uid":"u2","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"no-fit","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/agent","uid":"u3","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"protected","detail":"daemonset","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/db-0","uid":"u4","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"pdb-blocked","detail":"Cannot evict pod as it would violate the pod's disruption budget.","target":"n2","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/web-3","uid":"u5","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"waiting-owner","detail":"ReplicaSet web has the eviction of web-1 in flight","wait":"owner","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/api-1","uid":"u6","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"paced","detail":"limits.perNode (1 evictions in flight on n1)","wait":"limits.perNode","since":"2026-01-01T00:00:00Z"}
]`

func TestViolationsTable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "violations.json")
	if err := os.WriteFile(p, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "", "violations", "--from-file", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"POD", "COULD GO TO",
		"shop/web-1", "evicting", "n2", "term 1: pool In [a]: node has pool=b",
		"shop/web-2", "no-fit",
		"shop/agent", "protected", "daemonset: node(s) didn't match",
		"shop/db-0", "pdb-blocked", "disruption budget: node(s) didn't match",
		"shop/web-3", "waiting-owner", "ReplicaSet web has the eviction of web-1 in flight",
		"shop/api-1", "paced", "limits.perNode (1 evictions in flight on n1)",
		"Going now: 1. Waiting: 2 (limits.perNode 1, owner 1).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "budget.:") {
		t.Errorf("a refusal's full stop before the colon:\n%s", out)
	}
	if _, err := runCLI(t, "", "violations", "--from-file", p, "-o", "xml"); err == nil || !strings.Contains(err.Error(), `-o "xml"`) {
		t.Errorf("-o xml: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte("{"), 0o644)
	if _, err := runCLI(t, "", "violations", "--from-file", bad); err == nil || !strings.Contains(err.Error(), "not an enforcer /violations report") {
		t.Errorf("bad report: %v", err)
	}
}

// fetch follows the Lease to the leader pod and reads its /violations
// through the pod proxy.
func TestViolationsFetchFollowsTheLease(t *testing.T) {
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "placement-scheduler-enforcer"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("placement-scheduler-enforcer-7d9f-abcde_1b2c3d")},
	})
	var asked string
	client.PrependProxyReactor("pods", func(a k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
		pa := a.(k8stesting.ProxyGetAction)
		asked = pa.GetName() + ":" + pa.GetPort() + pa.GetPath()
		return true, fakeResponse(report), nil
	})
	o := &violationsOptions{leaseNamespace: installNamespace, leaseName: "placement-scheduler-enforcer", port: 10261, output: "json"}
	data, err := o.fetch(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	if asked != "placement-scheduler-enforcer-7d9f-abcde:10261/violations" {
		t.Errorf("asked %q", asked)
	}
	var out bytes.Buffer
	if err := o.print(&out, data); err != nil || !strings.Contains(out.String(), `"state": "no-fit"`) {
		t.Errorf("json: %v\n%s", err, out.String())
	}

	empty := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "placement-scheduler-enforcer"}})
	if _, err := o.fetch(context.Background(), empty); err == nil || !strings.Contains(err.Error(), "no leader") {
		t.Errorf("no holder: %v", err)
	}
}

type fakeResponse string

func (f fakeResponse) DoRaw(context.Context) ([]byte, error) { return []byte(f), nil }
func (f fakeResponse) Stream(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(string(f))), nil
}
