// Package cyclestate reads our plugins' typed state back from a CycleState.
//
// Key policy, for every plugin: state is stored under upstream's key for the
// same extension point (e.g. "PreFilterInterPodAffinity"), because the key
// appears in the missing-state errors users can see and those must read as
// upstream's. The in-tree plugin and ours therefore must not both run in one
// profile; the shipped profile disables the in-tree one (and doing both would
// double-count anyway).
package cyclestate

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

// Read returns the state under key as T. A missing key returns the
// CycleState's own error (fwk.ErrNotFound) for the caller to wrap in its
// upstream wording; a value of another type is a programming error.
func Read[T fwk.StateData](cs fwk.CycleState, key fwk.StateKey) (T, error) {
	var zero T
	data, err := cs.Read(key)
	if err != nil {
		return zero, err
	}
	s, ok := data.(T)
	if !ok {
		return zero, fmt.Errorf("cycle state %q holds %T, not %T: is another plugin writing the same key?", key, data, zero)
	}
	return s, nil
}
