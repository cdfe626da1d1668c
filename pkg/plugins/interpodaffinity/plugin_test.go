package interpodaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/ptr"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		obj     runtime.Object
		want    args
		wantErr string
	}{
		{name: "nil: defaults", obj: nil, want: args{hardPodAffinityWeight: 1}},
		{name: "empty raw: defaults", obj: tu.RawArgs(""), want: args{hardPodAffinityWeight: 1}},
		{name: "{}: defaults", obj: tu.RawArgs(`{}`), want: args{hardPodAffinityWeight: 1}},
		{name: "explicit 0 is kept", obj: tu.RawArgs(`{"hardPodAffinityWeight": 0}`), want: args{}},
		{name: "bounds inclusive", obj: tu.RawArgs(`{"hardPodAffinityWeight": 100}`), want: args{hardPodAffinityWeight: 100}},
		{
			name: "typed args marshalled, with type meta",
			obj: tu.ArgsOf(&configv1.InterPodAffinityArgs{
				HardPodAffinityWeight:              ptr.To[int32](5),
				IgnorePreferredTermsOfExistingPods: true,
			}),
			want: args{hardPodAffinityWeight: 5, ignorePreferredTermsOfExistingPods: true},
		},
		{
			name: "kind and apiVersion accepted",
			obj:  tu.RawArgs(`{"kind": "InterPodAffinityArgs", "apiVersion": "kubescheduler.config.k8s.io/v1", "ignorePreferredTermsOfExistingPods": true}`),
			want: args{hardPodAffinityWeight: 1, ignorePreferredTermsOfExistingPods: true},
		},
		{
			name: "YAML",
			obj:  &runtime.Unknown{Raw: []byte("hardPodAffinityWeight: 3\n"), ContentType: runtime.ContentTypeYAML},
			want: args{hardPodAffinityWeight: 3},
		},
		{
			name:    "above range",
			obj:     tu.RawArgs(`{"hardPodAffinityWeight": 101}`),
			wantErr: "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
		},
		{
			name:    "below range",
			obj:     tu.RawArgs(`{"hardPodAffinityWeight": -1}`),
			wantErr: "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
		},
		{
			name:    "unknown field",
			obj:     tu.RawArgs(`{"hardPodAfinityWeight": 2}`),
			wantErr: `decoding args: unknown field "hardPodAfinityWeight" (valid fields: hardPodAffinityWeight, ignorePreferredTermsOfExistingPods)`,
		},
		{
			name:    "wrong type",
			obj:     tu.RawArgs(`{"hardPodAffinityWeight": "2"}`),
			wantErr: "decoding args: hardPodAffinityWeight must be an integer (int32), not string: json: cannot unmarshal string into Go struct field InterPodAffinityArgs.hardPodAffinityWeight of type int32",
		},
		{
			name:    "already typed objects are not expected",
			obj:     &configv1.InterPodAffinityArgs{},
			wantErr: "want args of type runtime.Unknown, got *v1.InterPodAffinityArgs",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeArgs(tc.obj)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	informerFactory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)

	t.Run("no snapshot lister", func(t *testing.T) {
		fh, err := frameworkruntime.NewFramework(ctx, nil, nil, frameworkruntime.WithInformerFactory(informerFactory))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(ctx, nil, fh, feature.Features{}); err == nil || err.Error() != "SnapshotSharedlister is nil" {
			t.Errorf("error %v, want SnapshotSharedlister is nil", err)
		}
	})

	t.Run("invalid args fail construction", func(t *testing.T) {
		e := newEnv(t, nil, feature.Features{}, nil, nil)
		fh, err := frameworkruntime.NewFramework(ctx, nil, nil,
			frameworkruntime.WithSnapshotSharedLister(e.snap), frameworkruntime.WithInformerFactory(informerFactory))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(ctx, tu.RawArgs(`{"hardPodAffinityWeight": 101}`), fh, feature.Features{})
		if want := "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"; err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})

	t.Run("registers the namespace informer", func(t *testing.T) {
		f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
		e := newEnv(t, nil, feature.Features{}, nil, nil)
		fh, err := frameworkruntime.NewFramework(ctx, nil, nil,
			frameworkruntime.WithSnapshotSharedLister(e.snap), frameworkruntime.WithInformerFactory(f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(ctx, nil, fh, feature.Features{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		f.Start(ctx.Done())
		synced := f.WaitForCacheSync(ctx.Done())
		if len(synced) != 1 {
			t.Fatalf("started informers: %v, want only the Namespace one", synced)
		}
		for typ, ok := range synced {
			if typ.String() != "*v1.Namespace" || !ok {
				t.Errorf("informer %v synced=%v, want *v1.Namespace synced", typ, ok)
			}
		}
	})
}

func TestSignPod(t *testing.T) {
	labels := map[string]string{"app": "web"}
	tests := []struct {
		name       string
		ignore     bool
		pod        *v1.Pod
		wantFrags  []fwk.SignFragment
		wantStatus string
	}{
		{
			name:      "labels are signed",
			pod:       tu.MakePod("default", "p").Labels(labels).Obj(),
			wantFrags: []fwk.SignFragment{{Key: fwk.LabelsSignerName, Value: labels}},
		},
		{
			name:      "no labels: a nil map is signed",
			pod:       tu.MakePod("default", "p").Obj(),
			wantFrags: []fwk.SignFragment{{Key: fwk.LabelsSignerName, Value: map[string]string(nil)}},
		},
		{
			name:      "node affinity alone is not pod affinity",
			pod:       tu.MakePod("default", "p").Labels(labels).RequiredNodeTerms(tu.Term(tu.Expr("k", v1.NodeSelectorOpExists))).Obj(),
			wantFrags: []fwk.SignFragment{{Key: fwk.LabelsSignerName, Value: labels}},
		},
		{
			name:       "pod affinity, even empty, is not signable",
			pod:        tu.MakePod("default", "p").PodAffinity(&v1.PodAffinity{}).Obj(),
			wantStatus: "Unschedulable: pods with InterPodAffinity are not signable",
		},
		{
			name:       "pod anti-affinity is not signable",
			pod:        tu.MakePod("default", "p").RequiredPodAntiAffinity(tu.AffinityTerm(zone, everything)).Obj(),
			wantStatus: "Unschedulable: pods with InterPodAffinity are not signable",
		},
		{
			name:       "not signable wins over ignorePreferredTermsOfExistingPods",
			ignore:     true,
			pod:        tu.MakePod("default", "p").PodAntiAffinity(&v1.PodAntiAffinity{}).Obj(),
			wantStatus: "Unschedulable: pods with InterPodAffinity are not signable",
		},
		{
			name:   "ignorePreferredTermsOfExistingPods: nothing to sign",
			ignore: true,
			pod:    tu.MakePod("default", "p").Labels(labels).Obj(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := &InterPodAffinity{args: args{hardPodAffinityWeight: 1, ignorePreferredTermsOfExistingPods: tc.ignore}}
			frags, st := pl.SignPod(context.Background(), tc.pod)
			if got := tu.StatusString(st); got != tc.wantStatus {
				t.Errorf("status %q, want %q", got, tc.wantStatus)
			}
			if diff := cmp.Diff(tc.wantFrags, frags); diff != "" {
				t.Errorf("fragments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	pl := &InterPodAffinity{}
	got, err := pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []fwk.ClusterEvent{
		{Resource: fwk.AssignedPod, ActionType: fwk.Add | fwk.UpdatePodLabel | fwk.Delete},
		{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodLabel},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel},
	}
	var events []fwk.ClusterEvent
	for _, e := range got {
		events = append(events, e.Event)
		if e.QueueingHintFn == nil {
			t.Errorf("%v has no queueing hint", e.Event)
		}
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestAssignedPodHint(t *testing.T) {
	affine := tu.MakePod("default", "target").Label("app", "web").
		RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db")), tu.AffinityTerm(rack, sel("tier", "gold"))).Obj()
	averse := tu.MakePod("default", "target").Label("app", "web").
		RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "db")), tu.AffinityTerm(rack, sel("app", "cache"))).Obj()
	plain := tu.MakePod("default", "target").Label("app", "web").Obj()
	badAffinity := tu.MakePod("default", "target").
		RequiredPodAntiAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", "Bogus")))).Obj()

	dbGold := placed("default", "other", "n1").Label("app", "db").Label("tier", "gold").Obj()
	dbOnly := placed("default", "other", "n1").Label("app", "db").Obj()
	cachePod := placed("default", "other", "n1").Label("app", "cache").Obj()
	none := placed("default", "other", "n1").Label("app", "none").Obj()
	guard := placed("default", "other", "n1").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()
	nominated := tu.MakePod("default", "other").Label("app", "db").Label("tier", "gold").NominatedNodeName("n1").Obj()
	pending := tu.MakePod("default", "other").Label("app", "db").Label("tier", "gold").Obj()
	otherNS := tu.MakePod("elsewhere", "other").NodeName("n1").Label("app", "db").Label("tier", "gold").Obj()

	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new interface{}
		// tombstone delivers old wrapped as the informer does for a delete
		// it only learned about on relist.
		tombstone bool
		want      fwk.QueueingHint
		wantErr   bool
	}{
		{name: "add: matches all affinity terms", pod: affine, new: dbGold, want: fwk.Queue},
		{name: "add: matches one term only", pod: affine, new: dbOnly, want: fwk.QueueSkip},
		{name: "add: nominated counts as placed", pod: affine, new: nominated, want: fwk.Queue},
		{name: "add: neither bound nor nominated", pod: affine, new: pending, want: fwk.QueueSkip},
		{name: "add: other namespace (own-namespace terms)", pod: affine, new: otherNS, want: fwk.QueueSkip},
		{name: "add: anti-affinity target never helped by an add", pod: averse, new: cachePod, want: fwk.QueueSkip},
		{name: "update: starts matching all affinity terms", pod: affine, old: dbOnly, new: dbGold, want: fwk.Queue},
		{name: "update: keeps matching", pod: affine, old: dbGold, new: dbGold, want: fwk.QueueSkip},
		{name: "update: stops matching an anti-affinity term", pod: averse, old: cachePod, new: none, want: fwk.Queue},
		{name: "update: moves between anti-affinity terms", pod: averse, old: cachePod, new: dbOnly, want: fwk.QueueSkip},
		{name: "update: old side unplaced", pod: affine, old: pending, new: dbGold, want: fwk.QueueSkip},
		{name: "delete: matched an anti-affinity term", pod: averse, old: cachePod, want: fwk.Queue},
		{name: "delete: its anti-affinity selected the target", pod: plain, old: guard, want: fwk.Queue},
		{name: "delete: unrelated", pod: plain, old: none, want: fwk.QueueSkip},
		{name: "delete: affinity target is not helped", pod: affine, old: dbGold, want: fwk.QueueSkip},
		{name: "delete: tombstone", pod: averse, old: cachePod.DeepCopy(), tombstone: true, want: fwk.Queue},
		{name: "delete: deleted pod's anti-affinity unparsable", pod: plain, old: placed("default", "o", "n1").RequiredPodAntiAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("a", "Bogus")))).Obj(), want: fwk.Queue, wantErr: true},
		{name: "target's terms unparsable", pod: badAffinity, new: dbGold, want: fwk.Queue, wantErr: true},
		{name: "wrong object type", pod: affine, new: &v1.Node{}, want: fwk.Queue, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			old := tc.old
			if tc.tombstone {
				old = cache.DeletedFinalStateUnknown{Key: "default/other", Obj: tc.old}
			}
			got, err := (&InterPodAffinity{}).isSchedulableAfterAssignedPodChange(logger, tc.pod, old, tc.new)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTargetPodHint(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	pod := tu.MakePod("default", "p").Obj()
	got, err := (&InterPodAffinity{}).isSchedulableAfterTargetPodLabelUpdate(logger, pod, pod, pod)
	if err != nil || got != fwk.Queue {
		t.Errorf("got %v, %v; want Queue", got, err)
	}
}

func TestNodeHint(t *testing.T) {
	affine := tu.MakePod("default", "p").RequiredPodAffinity(tu.AffinityTerm(zone, everything)).Obj()
	averse := tu.MakePod("default", "p").RequiredPodAntiAffinity(tu.AffinityTerm(zone, everything)).Obj()
	plain := tu.MakePod("default", "p").PreferredPodAffinity(tu.Weighted(1, tu.AffinityTerm(zone, everything))).Obj()
	bad := tu.MakePod("default", "p").RequiredPodAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("a", "Bogus")))).Obj()

	inZ1 := tu.MakeNode("n").Label(zone, "z1").Obj()
	inZ2 := tu.MakeNode("n").Label(zone, "z2").Obj()
	noZone := tu.MakeNode("n").Obj()
	inZ1Relabelled := tu.MakeNode("n").Label(zone, "z1").Label("other", "x").Obj()

	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new *v1.Node
		want     fwk.QueueingHint
		wantErr  bool
	}{
		{name: "affinity: added node with the key", pod: affine, new: inZ1, want: fwk.Queue},
		{name: "affinity: added node without the key", pod: affine, new: noZone, want: fwk.QueueSkip},
		{name: "affinity: node gains the key", pod: affine, old: noZone, new: inZ1, want: fwk.Queue},
		{name: "affinity: node changes domain", pod: affine, old: inZ1, new: inZ2, want: fwk.Queue},
		{name: "affinity: node loses the key", pod: affine, old: inZ1, new: noZone, want: fwk.QueueSkip},
		{name: "affinity: unrelated label change", pod: affine, old: inZ1, new: inZ1Relabelled, want: fwk.QueueSkip},
		{name: "anti-affinity: any added node", pod: averse, new: noZone, want: fwk.Queue},
		{name: "anti-affinity: node loses the key", pod: averse, old: inZ1, new: noZone, want: fwk.Queue},
		{name: "anti-affinity: node changes domain", pod: averse, old: inZ1, new: inZ2, want: fwk.Queue},
		{name: "anti-affinity: node gains the key", pod: averse, old: noZone, new: inZ1, want: fwk.QueueSkip},
		{name: "anti-affinity: unrelated label change", pod: averse, old: inZ1, new: inZ1Relabelled, want: fwk.QueueSkip},
		{name: "preferred terms only: added node", pod: plain, new: inZ1, want: fwk.QueueSkip},
		{name: "unparsable terms", pod: bad, new: inZ1, want: fwk.Queue, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			var old, new interface{}
			if tc.old != nil {
				old = tc.old
			}
			if tc.new != nil {
				new = tc.new
			}
			got, err := (&InterPodAffinity{}).isSchedulableAfterNodeChange(logger, tc.pod, old, new)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("wrong object type", func(t *testing.T) {
		logger, _ := ktesting.NewTestContext(t)
		got, err := (&InterPodAffinity{}).isSchedulableAfterNodeChange(logger, affine, nil, &v1.Pod{})
		if err == nil || got != fwk.Queue {
			t.Errorf("got %v, %v; want Queue with an error", got, err)
		}
	})
}
