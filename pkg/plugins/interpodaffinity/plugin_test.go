package interpodaffinity

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

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
