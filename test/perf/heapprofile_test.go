package perf

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"
)

// heapProfileEvery is -placement-heap-profiles. scheduler_perf's
// heap_memory_usage is the largest HeapInuse of the whole process sampled
// during the measured op; its -perf-memprofile writes allocation profiles
// of that op, but nothing says what was live when the peak was reached.
var heapProfileEvery = flag.Duration("placement-heap-profiles", 0,
	"if set, write a heap profile of the test process at this interval during every run, "+
		"as <data-items-dir>/<topic>-heap-<seq>.prof, and one line per profile (time, HeapInuse, HeapAlloc, "+
		"next GC goal in MB) to <topic>-heap.tsv; a profile's inuse numbers are those of the last completed "+
		"collection, which set the heap goal the peak grows to")

// profileHeap writes heap profiles every *heapProfileEvery into dir until
// the returned stop is called; a no-op when the flag is unset.
func profileHeap(dir, topic string) (stop func(), err error) {
	if *heapProfileEvery <= 0 {
		return func() {}, nil
	}
	tsv, err := os.Create(filepath.Join(dir, topic+"-heap.tsv"))
	if err != nil {
		return nil, fmt.Errorf("heap profiles: %w", err)
	}
	fmt.Fprintln(tsv, "time\theapInuseMB\theapAllocMB\tnextGCMB\tfile")
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		defer tsv.Close()
		tick := time.NewTicker(*heapProfileEvery)
		defer tick.Stop()
		for seq := 1; ; seq++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			name := fmt.Sprintf("%s-heap-%04d.prof", topic, seq)
			if f, err := os.Create(filepath.Join(dir, name)); err == nil {
				if err := pprof.WriteHeapProfile(f); err != nil {
					name = "(" + err.Error() + ")"
				}
				f.Close()
			} else {
				name = "(" + err.Error() + ")"
			}
			const mb = 1 << 20
			fmt.Fprintf(tsv, "%s\t%d\t%d\t%d\t%s\n", time.Now().UTC().Format("15:04:05.000"),
				m.HeapInuse/mb, m.HeapAlloc/mb, m.NextGC/mb, name)
		}
	}()
	return func() { close(done); <-finished }, nil
}
