package nodeindex

// Slots counts the node slots of all entries (BenchmarkIndexBound).
func (x *Index[V, A]) Slots() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.slots
}
