package equivalence

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Knobs (environment):
//
//	EQUIVALENCE_SEED=S        base seed (default defaultSeed)
//	EQUIVALENCE_SCENARIOS=N   scenarios in TestEquivalence (default defaultScenarios, 2000 with -short)
//	EQUIVALENCE_INDEX=I       run only scenario I of the seed (replaying a report)
//	EQUIVALENCE_PROFILE_EVERY=K  whole-profile comparison on every K-th scenario (default 1; 0 disables)
//	EQUIVALENCE_REPLAY=file   TestReplay runs the YAML reproducer in file
const (
	defaultSeed      = 20260806
	defaultScenarios = 50000
)

func TestMain(m *testing.M) {
	metrics.Register() // Parallelizer.Until needs the goroutines gauge
	os.Exit(m.Run())
}

func envUint(name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", name, v, err))
	}
	return n
}

// comparator runs every comparison for one installed scenario.
type comparator func(e *env, sc *Scenario) []mismatch

// pluginComparator compares each kind's upstream plugin against cand(kind)
// (nil: skip the kind).
func pluginComparator(cand func(*kind) factory) comparator {
	return func(e *env, sc *Scenario) []mismatch {
		var out []mismatch
		for _, k := range kinds {
			if b := cand(k); b != nil {
				out = append(out, comparePlugin(e, sc, k, k.Upstream, b)...)
			}
		}
		return out
	}
}

// defaultComparator: the four plugin pairs, plus the whole profile on every
// profileEvery-th scenario.
func defaultComparator(profileEvery uint64) comparator {
	plugins := pluginComparator(func(k *kind) factory { return k.Ours })
	return func(e *env, sc *Scenario) []mismatch {
		out := plugins(e, sc)
		if profileEvery > 0 && sc.Index%profileEvery == 0 && !sc.HasNamelessNode() {
			out = append(out, compareProfile(e, sc)...)
		}
		return out
	}
}

type finding struct {
	sc  *Scenario
	mms []mismatch
}

type batchResult struct {
	ran      uint64
	findings []finding
	elapsed  time.Duration
}

// runBatch generates and compares scenarios [0, n) of seed on GOMAXPROCS
// workers. It stops early once maxFindings scenarios have mismatched.
func runBatch(t testing.TB, seed, n uint64, only *uint64, cmp comparator, maxFindings int) batchResult {
	return runBatchWith(t, seed, n, only, Generate, cmp, maxFindings)
}

func runBatchWith(t testing.TB, seed, n uint64, only *uint64, generate func(seed, index uint64) *Scenario, cmp comparator, maxFindings int) batchResult {
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Uint64
	var mu sync.Mutex
	var res batchResult
	err := parallelIndexes(n, only, func() (func(i uint64) bool, error) {
		e, err := newEnv(ctx)
		if err != nil {
			return nil, err
		}
		return func(i uint64) bool {
			sc := generate(seed, i)
			e.install(sc)
			mms := cmp(e, sc)
			ran.Add(1)
			if len(mms) == 0 {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			res.findings = append(res.findings, finding{sc: sc, mms: mms})
			return len(res.findings) >= maxFindings
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(res.findings, func(i, j int) bool { return res.findings[i].sc.Index < res.findings[j].sc.Index })
	res.ran = ran.Load()
	res.elapsed = time.Since(start)
	return res
}

// parallelIndexes runs the work of indexes [0, n) (or only *only) on
// GOMAXPROCS workers, each with the work function newWorker built for it,
// until the indexes run out, a work call returns true (stop) or fails.
func parallelIndexes(n uint64, only *uint64, newWorker func() (func(i uint64) (stop bool), error)) error {
	var next atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, runtime.GOMAXPROCS(0))
	for range runtime.GOMAXPROCS(0) {
		work, err := newWorker()
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					stop.Store(true)
					errs <- fmt.Errorf("worker panicked: %v\n%s", p, debug.Stack())
				}
			}()
			for !stop.Load() {
				i := next.Add(1) - 1
				if only != nil {
					if i > 0 {
						return
					}
					i = *only
				} else if i >= n {
					return
				}
				if work(i) {
					stop.Store(true)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// report shrinks the first scenario of each distinct mismatch kind and
// returns a readable report for all of them.
func report(t testing.TB, res batchResult, cmp comparator) string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := newEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d scenarios mismatched (a run stops after 50)\n", len(res.findings), res.ran)
	for _, f := range res.findings {
		for _, m := range f.mms {
			if seen[m.key()] {
				continue
			}
			seen[m.key()] = true
			if len(seen) > 6 {
				fmt.Fprintf(&b, "\n(further mismatch kinds omitted)\n")
				return b.String()
			}
			b.WriteString(formatFinding(e, f.sc, m, cmp))
		}
	}
	return b.String()
}

func formatFinding(e *env, sc *Scenario, m mismatch, cmp comparator) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== MISMATCH %s  (seed=%d index=%d)\n", m.key(), sc.Seed, sc.Index)
	fmt.Fprintf(&b, "  rerun: EQUIVALENCE_SEED=%d EQUIVALENCE_INDEX=%d go test ./test/equivalence -run 'TestEquivalence$' -v\n", sc.Seed, sc.Index)
	fmt.Fprintf(&b, "  original: %d nodes, %d pods, %d namespaces\n  %s\n", len(sc.Nodes), len(sc.Pods), len(sc.Namespaces), indent(m.String(), "  "))
	small, attempts := shrink(e, sc, m.key(), cmp)
	mms := run(e, small, cmp)
	fmt.Fprintf(&b, "  shrunk (%d attempts): %d nodes, %d pods, %d namespaces\n", attempts, len(small.Nodes), len(small.Pods), len(small.Namespaces))
	for _, mm := range mms {
		if mm.key() == m.key() {
			fmt.Fprintf(&b, "  %s\n", indent(mm.String(), "  "))
			break
		}
	}
	fmt.Fprintf(&b, "  reproducer (save as repro.yaml; EQUIVALENCE_REPLAY=repro.yaml go test ./test/equivalence -run TestReplay -v):\n---\n%s---\n", scenarioYAML(small))
	return b.String()
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func run(e *env, sc *Scenario, cmp comparator) []mismatch {
	e.install(sc)
	return cmp(e, sc)
}

// scenarioYAML renders sc without the zero-value noise of API objects.
func scenarioYAML(sc *Scenario) string {
	y, err := EncodeScenario(sc)
	if err != nil {
		return "marshal error: " + err.Error()
	}
	return trimYAMLNoise(string(y))
}

// trimYAMLNoise drops the zero-value noise of API objects from a reproducer:
// lines like `status: {}` and a node status' nodeInfo/daemonEndpoints blocks
// when they hold nothing but zero values (struct fields, always rendered).
// Decoding restores the same zero values. Other blocks are kept: there an
// empty string can be meaningful (a label `gpu: ""`).
func trimYAMLNoise(y string) string {
	lines := strings.Split(y, "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " -")) }
	zero := func(l string) bool {
		t := strings.TrimSpace(l)
		return strings.HasSuffix(t, ":") || strings.HasSuffix(t, `: ""`) || strings.HasSuffix(t, ": 0")
	}
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch strings.TrimSpace(l) {
		case "creationTimestamp: null", "resources: {}", "status: {}", "spec: {}", "metadata: {}":
			continue
		}
		if t := strings.TrimSpace(l); t == "nodeInfo:" || t == "daemonEndpoints:" {
			j := i + 1
			for j < len(lines) && indent(lines[j]) > indent(l) && zero(lines[j]) {
				j++
			}
			if j > i+1 && (j == len(lines) || indent(lines[j]) <= indent(l)) {
				i = j - 1 // an all-zero block
				continue
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func parseScenario(data []byte) (*Scenario, error) {
	return DecodeScenario(data)
}

// TestEquivalence is the CI batch: fixed seed, tens of thousands of
// scenarios, every comparison.
func TestEquivalence(t *testing.T) {
	seed := envUint("EQUIVALENCE_SEED", defaultSeed)
	def := uint64(defaultScenarios)
	if testing.Short() {
		def = 2000
	}
	n := envUint("EQUIVALENCE_SCENARIOS", def)
	profileEvery := envUint("EQUIVALENCE_PROFILE_EVERY", 1)
	var only *uint64
	if v := os.Getenv("EQUIVALENCE_INDEX"); v != "" {
		i := envUint("EQUIVALENCE_INDEX", 0)
		only = &i
		profileEvery = 1
	}
	profileCounters.built.Store(0)
	profileCounters.filtered.Store(0)
	profileCounters.scored.Store(0)
	cmp := defaultComparator(profileEvery)
	res := runBatch(t, seed, n, only, cmp, 50)
	t.Logf("seed=%d scenarios=%d (whole profile on every %d-th) workers=%d wall=%v (%.0f scenarios/s)",
		seed, res.ran, profileEvery, runtime.GOMAXPROCS(0), res.elapsed.Round(time.Millisecond), float64(res.ran)/res.elapsed.Seconds())
	t.Logf("whole-profile comparisons: %d frameworks built, %d passed PreFilter and were filtered, %d scored",
		profileCounters.built.Load(), profileCounters.filtered.Load(), profileCounters.scored.Load())
	if len(res.findings) > 0 {
		t.Errorf("equivalence mismatches:\n%s", report(t, res, cmp))
	}
}

// TestReplay runs a YAML reproducer printed by a failing run.
func TestReplay(t *testing.T) {
	path := os.Getenv("EQUIVALENCE_REPLAY")
	if path == "" {
		t.Skip("set EQUIVALENCE_REPLAY=<reproducer.yaml>")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := parseScenario(data)
	if err != nil {
		t.Fatal(err)
	}
	setProcessGates(t, sc.Gates)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := newEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range run(e, sc, defaultComparator(1)) {
		t.Errorf("%s", m)
	}
}

// fuzzSource lets the fuzzer's bytes steer the generator: each draw takes
// its top byte from the input (small choices are decided by the top bits),
// the rest from a PCG seeded by the fuzzed seed.
type fuzzSource struct {
	data []byte
	pcg  *rand.PCG
}

func (s *fuzzSource) Uint64() uint64 {
	x := s.pcg.Uint64()
	if len(s.data) > 0 {
		x = uint64(s.data[0])<<56 | x>>8
		s.data = s.data[1:]
	}
	return x
}

// fuzzEnv is the env every fuzz target of this process reuses (a fuzz
// worker runs its inputs one at a time; the mutex keeps -parallel seeds
// apart). Lock it, then sharedFuzzEnv.
var fuzzEnv struct {
	sync.Mutex
	e *env
}

// sharedFuzzEnv returns fuzzEnv.e, built on first use; fuzzEnv is locked.
func sharedFuzzEnv(t *testing.T) *env {
	if fuzzEnv.e == nil {
		e, err := newEnv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fuzzEnv.e = e
	}
	return fuzzEnv.e
}

// FuzzEquivalence drives the same comparison from a fuzzed seed and bytes:
//
//	go test ./test/equivalence -run '^$' -fuzz FuzzEquivalence -fuzztime 5m
func FuzzEquivalence(f *testing.F) {
	for i := range uint64(8) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], i*0x9e3779b97f4a7c15)
		f.Add(uint64(defaultSeed)+i, b[:])
	}
	cmp := defaultComparator(1)
	f.Fuzz(func(t *testing.T, seed uint64, data []byte) {
		fuzzEnv.Lock()
		defer fuzzEnv.Unlock()
		sharedFuzzEnv(t)
		sc := GenerateFrom(rand.New(&fuzzSource{data: data, pcg: rand.NewPCG(seed, uint64(len(data)))}), seed, 0)
		if mms := run(fuzzEnv.e, sc, cmp); len(mms) > 0 {
			var b strings.Builder
			for _, m := range mms {
				if m.key() == mms[0].key() {
					b.WriteString(formatFinding(fuzzEnv.e, sc, m, cmp))
					break
				}
			}
			t.Fatalf("equivalence mismatch:\n%s", b.String())
		}
	})
}
