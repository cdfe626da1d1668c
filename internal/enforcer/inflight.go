package enforcer

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
)

// inflightStore keeps the book of evictions in flight in a ConfigMap beside
// the Lease (leaseNamespace, leaseName + "-evictions"), one entry per
// evicted pod. An entry is saved before its eviction is asked for, and
// dropped once the eviction settles. A new leader rebuilds its book from
// it before deciding anything, so the room promised to replacements that
// are not bound yet is not promised again, and the caps count its
// predecessor's evictions even after their pods are gone. The ConfigMap
// holds at most limits.total entries, plus those of a predecessor.
type inflightStore struct {
	client          kubernetes.Interface
	namespace, name string
	// off: a dry run evicts nothing and writes nothing.
	off bool
	// cm is the ConfigMap as last read or written (nil: none seen yet);
	// saved its entries.
	cm    *v1.ConfigMap
	saved map[string]string
}

// storedEviction is an entry: evictions.InFlight without the pod, which
// may be gone.
type storedEviction struct {
	Namespace string                 `json:"namespace"`
	Name      string                 `json:"name"`
	Node      string                 `json:"node"`
	Owner     *metav1.OwnerReference `json:"owner,omitempty"`
	Target    string                 `json:"target,omitempty"`
	At        time.Time              `json:"at"`
	Ready     int                    `json:"ready,omitempty"`
	// Before marks the owner's pods at the eviction by creation time
	// (evictions.Existing): its size is bounded, whatever the owner's.
	Before evictions.Existing `json:"before,omitzero"`
}

func newInflightStore(client kubernetes.Interface, le enforcerv1alpha1.LeaderElection, off bool) *inflightStore {
	return &inflightStore{client: client, namespace: le.LeaseNamespace, name: le.LeaseName + "-evictions", off: off}
}

// entries is the book as the ConfigMap's data, with extra (an eviction
// about to be asked for) when not nil, and the loops' history. Its size
// follows the evictions in flight and the history, both bounded, never the
// owners' sizes.
func entries(book *evictions.Book, history *loops, extra *evictions.InFlight) (map[string]string, error) {
	out := map[string]string{}
	h, err := history.encode()
	if err != nil {
		return nil, err
	}
	if h != "" {
		out[historyKey] = h
	}
	add := func(f evictions.InFlight) error {
		e := storedEviction{Namespace: f.Pod.Namespace, Name: f.Pod.Name, Node: f.Pod.Spec.NodeName,
			Owner: metav1.GetControllerOf(f.Pod), Target: f.Target, At: f.At.UTC(), Ready: f.Ready, Before: f.Before}
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		out[string(f.Pod.UID)] = string(data)
		return nil
	}
	for _, f := range book.All() {
		if err := add(f); err != nil {
			return nil, err
		}
	}
	if extra != nil {
		if err := add(*extra); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// save writes data as the ConfigMap's entries, when they changed.
func (st *inflightStore) save(ctx context.Context, data map[string]string) error {
	if st.off || (st.cm == nil && len(data) == 0) || (st.cm != nil && maps.Equal(data, st.saved)) {
		return nil // nothing new (no ConfigMap until the first eviction)
	}
	cms := st.client.CoreV1().ConfigMaps(st.namespace)
	if st.cm == nil {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: st.name, Namespace: st.namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": Component}}, Data: data}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: Component})
		if err == nil {
			st.cm, st.saved = created, maps.Clone(data)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", st.namespace, st.name, err)
		}
		if st.cm, err = cms.Get(ctx, st.name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s: %w", st.namespace, st.name, err)
		}
	}
	// Only the leader writes it: on a conflict (a predecessor's late
	// write), this leader's book wins.
	for try := 0; ; try++ {
		cm := st.cm.DeepCopy()
		cm.Data = data
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: Component})
		if err == nil {
			st.cm, st.saved = updated, maps.Clone(data)
			return nil
		}
		if !apierrors.IsConflict(err) || try > 0 {
			return fmt.Errorf("updating ConfigMap %s/%s: %w", st.namespace, st.name, err)
		}
		if st.cm, err = cms.Get(ctx, st.name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s: %w", st.namespace, st.name, err)
		}
	}
}

// load reads the predecessor's evictions in flight into book: those whose
// pod is gone, terminating or finished (an entry whose pod still runs was
// saved for an eviction that was refused or never asked for). A pod that
// is gone is stood for by what is known of it: its node, owner and
// namespace count toward the caps, and its replacement, once created,
// holds the promised room (holdInflight).
func (st *inflightStore) load(ctx context.Context, logger klog.Logger, s *clusterState, book *evictions.Book, history *loops) error {
	cm, err := st.client.CoreV1().ConfigMaps(st.namespace).Get(ctx, st.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the evictions in flight, ConfigMap %s/%s: %w", st.namespace, st.name, err)
	}
	st.cm, st.saved = cm, maps.Clone(cm.Data)
	if value, ok := cm.Data[historyKey]; ok {
		if err := history.decode(value); err != nil {
			logger.Error(err, "Ignoring an unreadable history of evictions", "configMap", klog.KObj(cm), "key", historyKey)
		}
	}
	for uid, value := range cm.Data {
		if uid == historyKey {
			continue
		}
		var e storedEviction
		if err := json.Unmarshal([]byte(value), &e); err != nil {
			logger.Error(err, "Ignoring an unreadable eviction in flight", "configMap", klog.KObj(cm), "uid", uid)
			continue
		}
		pod := s.pods[types.UID(uid)]
		if pod != nil && pod.DeletionTimestamp == nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
			if e.Owner != nil {
				history.drop(e.Owner.UID, e.At) // not an eviction after all
			}
			continue
		}
		if pod == nil {
			pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, UID: types.UID(uid)}, Spec: v1.PodSpec{NodeName: e.Node}}
			if e.Owner != nil {
				pod.OwnerReferences = []metav1.OwnerReference{*e.Owner}
			}
		}
		f := evictions.InFlight{Pod: pod, Target: e.Target, At: e.At, Ready: e.Ready, Before: e.Before}
		if e.Owner != nil {
			f.Owner = e.Owner.UID
		}
		book.Add(f)
		logger.V(2).Info("Continuing an eviction in flight", "pod", klog.KObj(pod), "target", e.Target, "at", e.At)
	}
	return nil
}

// pendingReplacement is a pod of f's owner created since the eviction and
// not bound yet: the pod to hold f's room for when the evicted pod is gone
// and only its stand-in (load) is known.
func (s *clusterState) pendingReplacement(f evictions.InFlight) *v1.Pod {
	for uid := range s.owners[f.Owner] {
		if p := s.pods[uid]; p != nil && !f.Before.Has(p) && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			return p
		}
	}
	return nil
}
