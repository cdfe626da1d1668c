//go:build k8s1.35

package equivalence

// What the sequence harness does on the 1.35 line, which has no pod-group
// cycles: its snapshot cannot assume pods, its cache keeps no pod groups,
// its cycle state has no pod-group mark, and its pods no scheduling group.

// groupCycle: a generated pod-group cycle is, on 1.35, its pod's own cycle
// like any other (assumed in the cache as c.Assume says); the members are
// not scheduled, so later steps naming them are no-ops.
func (r *seqRun) groupCycle(c *SeqCycle, events []Event) []mismatch {
	single := *c
	single.Group, single.BindGroup = nil, false
	return r.podCycle(&single, events)
}

// lineLacksSeqMutant says why a sequence mutant cannot be caught on 1.35:
// only pod-group cycles expose it, and 1.35 has none.
func lineLacksSeqMutant(sm *seqMutant) string {
	if sm.groupsOnly {
		return "only pod-group cycles expose this mutant, and 1.35 has none"
	}
	return ""
}
