package equivalence

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"
)

// FuzzHostile is the hostile-input fuzz target: it compares one plugin of
// ours with upstream's in-tree one, for every row of pkg/plugins.Set(), on a
// Scenario decoded from the fuzzer's bytes (decodeHostile), with the suite's
// own plugin-level comparator (comparePlugin: every extension point,
// statuses rendered by statusString, raw and normalized scores). Unlike
// FuzzEquivalence, whose bytes only steer the randomized generator and its
// small value pools, the bytes here ARE the objects: huge label sets and
// values, unicode and case variants, every operator on missing and empty
// values, Gt/Lt around the int64 limits and non-numeric, thousands of terms,
// duplicate keys, empty topology keys, namespaces nobody created. Mostly what
// the apiserver accepts, plus the invalid corners an object can still carry
// into the scheduler's cache (created before a validation tightened, or
// written in-process), on which the scheduler must behave the same too.
//
// The plugin is the input's first value, an in-tree name (Replaces) or, as
// the fuzzer mutates it, any string, which hostileRow maps onto a row; so a
// new row of Set() is fuzzed with no change here, and its seeds are every
// hostile seed. EQUIVALENCE_FUZZ_PLUGIN=<in-tree name> pins every input to
// that row (make fuzz FUZZ_PLUGIN=NodeAffinity).
//
// A failure is a mismatch, a panic of ours (even when upstream panics the
// same way) or a comparison that does not finish within fuzzHangLimit.
//
//	make fuzz FUZZTIME=1000000x       # every row, mixed
//	make fuzz FUZZ_PLUGIN=NodeAffinity FUZZTIME=10m
//
// Plain `go test` runs the seeds (f.Add below and testdata/fuzz/FuzzHostile/).
func FuzzHostile(f *testing.F) {
	pinned := os.Getenv("EQUIVALENCE_FUZZ_PLUGIN")
	if pinned != "" && kindByName(pinned) == nil {
		f.Fatalf("EQUIVALENCE_FUZZ_PLUGIN=%s: no row of pkg/plugins.Set() replaces it; one of %v", pinned, kindNames())
	}
	for _, k := range kinds {
		for _, seed := range hostileSeeds {
			f.Add(k.Name, seed)
		}
	}
	f.Fuzz(func(t *testing.T, plugin string, data []byte) {
		if pinned != "" {
			plugin = pinned
		}
		k := hostileRow(plugin)
		sc := decodeHostile(data)
		fuzzEnv.Lock()
		defer fuzzEnv.Unlock()
		e := sharedFuzzEnv(t)
		done := make(chan []mismatch, 1)
		go func() {
			e.install(sc)
			compare := func() []mismatch {
				return comparePluginWith(&recorder{plugin: k.Name, oursMustNotPanic: true}, e, sc, k.Upstream, k.Ours)
			}
			mms := compare()
			if mapOrderDependent(mms) {
				mms = settleMapOrder(mms, compare)
			}
			done <- mms
		}()
		select {
		case mms := <-done:
			if len(mms) > 0 {
				t.Fatalf("%s: ours and upstream differ on hostile input:\n%s\n  reproducer (EQUIVALENCE_REPLAY=repro.yaml go test ./test/equivalence -run TestReplay -v):\n---\n%s---",
					k.OursName, mismatchesString(mms), scenarioYAML(sc))
			}
		case <-time.After(fuzzHangLimit):
			// The comparison goroutine keeps e; the fuzzing process fails
			// and exits on this input anyway.
			t.Fatalf("%s: comparison still running after %v (hang)\n---\n%s---", k.OursName, fuzzHangLimit, scenarioYAML(sc))
		}
	})
}

// fuzzHangLimit: a comparison of one decoded scenario takes milliseconds
// (the decoder's element budget bounds it); this much is a hang.
const fuzzHangLimit = 2 * time.Minute

// hostileRow is the row FuzzHostile compares for the input's plugin value:
// the one it names (in-tree name), else one picked by the value's hash, so
// that every value the fuzzer makes up lands on some row.
func hostileRow(plugin string) *kind {
	if k := kindByName(plugin); k != nil {
		return k
	}
	h := fnv.New32a()
	h.Write([]byte(plugin))
	return kinds[h.Sum32()%uint32(len(kinds))]
}

func kindNames() []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.Name)
	}
	return out
}

// mapOrderDependent: every mismatch is between two "Invalid value" texts
// (selector parse errors), which may name different invalid entries of one
// map.
func mapOrderDependent(mms []mismatch) bool {
	for _, m := range mms {
		if !strings.Contains(m.Upstream, "Invalid value") || !strings.Contains(m.Ours, "Invalid value") {
			return false
		}
	}
	return len(mms) > 0
}

// settleMapOrder reruns a comparison whose mismatches are all selector
// parse errors. A selector with several invalid matchLabels entries is
// reported by whichever entry Go's map order visits first, upstream
// (metav1.LabelSelectorAsSelector) and ours alike, and each side draws its
// order independently, so with n invalid entries one run agrees by a 1/n
// chance, and a pod whose term lists each fail that way multiplies the
// chances. Instead, each text is cut into its parts (parseSegments: one per
// term list that failed to parse), and per place (plugin, check, where) and
// part the texts each side produced are collected over the reruns: the
// place is settled once every part has had one text from both sides, or a
// rerun agreed there. Any other kind of mismatch, or a place still open
// after the reruns, stands.
func settleMapOrder(first []mismatch, compare func() []mismatch) []mismatch {
	type texts struct{ upstream, ours map[string]map[string]bool }
	place := func(m mismatch) string { return m.Plugin + "/" + m.Check + "/" + m.Where }
	open := map[string]*texts{}
	settled := map[string]bool{}
	last := map[string]mismatch{}
	collect := func(into map[string]map[string]bool, text string) {
		for part, t := range parseSegments(text) {
			if into[part] == nil {
				into[part] = map[string]bool{}
			}
			into[part][t] = true
		}
	}
	note := func(mms []mismatch) {
		for _, m := range mms {
			p := place(m)
			if settled[p] {
				continue
			}
			t := open[p]
			if t == nil {
				t = &texts{upstream: map[string]map[string]bool{}, ours: map[string]map[string]bool{}}
				open[p] = t
			}
			collect(t.upstream, m.Upstream)
			collect(t.ours, m.Ours)
			last[p] = m
		}
	}
	bothSaid := func(t *texts) bool {
		for _, side := range []map[string]map[string]bool{t.upstream, t.ours} {
			for part := range side {
				common := false
				for text := range t.upstream[part] {
					common = common || t.ours[part][text]
				}
				if !common {
					return false
				}
			}
		}
		return true
	}
	note(first)
	for try := 0; try < mapOrderReruns && len(open) > 0; try++ {
		mms := compare()
		if !mapOrderDependent(mms) && len(mms) > 0 {
			return mms
		}
		note(mms)
		mismatched := map[string]bool{}
		for _, m := range mms {
			mismatched[place(m)] = true
		}
		for p, t := range open {
			if !mismatched[p] || bothSaid(t) {
				delete(open, p)
				settled[p] = true
			}
		}
	}
	var stand []mismatch
	for p := range open {
		stand = append(stand, last[p])
	}
	return stand
}

// mapOrderReruns bounds settleMapOrder's reruns. With n invalid entries in
// one list, r reruns give each side r texts and about r²/n of them in
// common: hostile pods carry hundreds of entries (a failure at 30 reruns
// had k521 and k106), and 100 reruns leave n = 600 unsettled with a chance
// of about e^-17. A rerun costs one comparison of a small scenario.
const mapOrderReruns = 100

// podParseParts are the term lists framework.NewPodInfo names in a parse
// error, each reported from its own selector.
var podParseParts = regexp.MustCompile(`(required|preferred)(Anti)?AffinityTerms: `)

// parseSegments cuts a text at each term list it names: the part before the
// first, and one part per list, keyed by the list's name.
func parseSegments(text string) map[string]string {
	parts := map[string]string{}
	cuts := podParseParts.FindAllStringIndex(text, -1)
	end := len(text)
	for i := len(cuts) - 1; i >= 0; i-- {
		name := text[cuts[i][0]:cuts[i][1]]
		parts[name] += text[cuts[i][1]:end]
		end = cuts[i][0]
	}
	parts[""] = text[:end]
	return parts
}

func mismatchesString(mms []mismatch) string {
	var b strings.Builder
	for i, m := range mms {
		if i == 8 {
			fmt.Fprintf(&b, "  (%d more)\n", len(mms)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", indent(m.String(), "  "))
	}
	return b.String()
}

// hostileSeeds start every target: an empty input (the smallest scenario),
// and inputs that reach the big, unicode and int64-limit branches at once.
var hostileSeeds = [][]byte{
	{},
	[]byte("\xff\x02\x01\x01\x03\xf0\xf0\xf0\xe8\xe9\xea\xeb\xd0\xd1\xd2\xd3"),
	[]byte("\x3f\x04\x05\xfd\x20\x01\xfe\x40\x00\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9"),
	[]byte(strings.Repeat("\xe0\xe3\xe7\xec", 32)),
	[]byte(strings.Repeat("\xfd\x10\x10\xa4", 24)),
	[]byte(strings.Repeat("\x07\x33\x91\xc8\xee\x02", 40)),
}

// ---------------------------------------------------------------------------
// The decoder.

// hostileIn reads the fuzz input. Exhausted input reads as zeros, and every
// choice below lists its ordinary option first, so a short input decodes to
// a small ordinary scenario and each extra byte makes it more hostile.
type hostileIn struct {
	b []byte
	// budget bounds the elements (labels, terms, values, taints...) the
	// object being decoded may still create; total bounds the input's, so
	// that "thousands of terms" stays a few ms per input.
	budget, total int
	pods          int
}

func (in *hostileIn) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *hostileIn) n(k int) int { return int(in.byte()) % k }

func (in *hostileIn) u16() int { return int(in.byte())<<8 | int(in.byte()) }

// count is how many elements a list gets: mostly 0..small, sometimes a few
// dozen, rarely thousands; never beyond the remaining budget.
func (in *hostileIn) count(small int) int {
	var c int
	switch b := in.byte(); {
	case b < 232:
		c = int(b) % (small + 1)
	case b < 250:
		c = 10 + in.n(90)
	default:
		c = 500 + in.u16()%3000
	}
	c = min(c, in.budget, in.total)
	in.budget -= c
	in.total -= c
	return c
}

func pickIn[T any](in *hostileIn, xs []T) T { return xs[in.n(len(xs))] }

// Vocabularies. The first entries collide often (so selectors match);
// the rest are the hostile corners.
var (
	hostileKeys = []string{
		"app", v1.LabelTopologyZone, v1.LabelHostname, "num", "team", "App", "APP",
		v1.LabelTopologyRegion, "example.com/rack", "Example.COM/rack", "a", "A",
		"", "/", "example.com/", "/app", "app ", " app", "app\x00", "ключ", "ǅ", "K", "K",
		strings.Repeat("k", 63), strings.Repeat("k", 64), strings.Repeat("p", 253) + "/" + strings.Repeat("n", 63),
		"metadata.name", "kubernetes.io/metadata.name", "node-restriction.kubernetes.io/x",
	}
	hostileValues = []string{
		"web", "", "db", "z1", "z2", "n0", "n1", "Web", "WEB", "0", "1", "5", "-1", "+1", "-0", "007", "05",
		" 1", "1 ", "1.5", "1e3", "0x10", "0b1", "1_000", "١", "１", "Ⅷ",
		"ß", "SS", "ss", "İ", "i̇", "ı", "K", "K", "ǅ", "ǆ", "Ǆ", "é", "e\u0301", "日本", "😀",
		"\x00", "\xff\xfe", "a b", "a,b", "a=b", "!", "true", "True", "null", "~",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("ü", 63), strings.Repeat("x", 4096),
	}
	nodeOps = []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists,
		v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt, "", "in", "GT", "Bogus"}
	labelOps = []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn,
		metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist, "", "in", "Gt", "Bogus"}
	tolOps = []v1.TolerationOperator{v1.TolerationOpEqual, v1.TolerationOpExists, "", v1.TolerationOpGt,
		v1.TolerationOpLt, "equal", "Bogus"}
	effects = []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute,
		"", "noschedule", "Weird"}
	// Namespaces: the first four may exist (decodeHostile decides), the rest
	// never do.
	hostileNamespaces = []string{"default", "ns1", "ns2", "kube-system", "ghost", "NS1", "", "ns1 ", strings.Repeat("n", 63)}
	hostileWeights    = []int32{1, 100, 50, 0, -1, 101, math.MaxInt32, math.MinInt32, 2, 99}
	int64Bases        = []int64{math.MaxInt64, math.MinInt64, 0, math.MaxInt32, math.MinInt32}
)

// str reads raw bytes as a string: any bytes, any length up to 46, or
// (rarely) up to several KiB.
func (in *hostileIn) str() string {
	n := in.n(48)
	if n == 47 {
		n = 300 + in.u16()%8000
	}
	// Only as long as the input lasts: KiBs of zeros are no more hostile
	// than the pool's 4 KiB value, and would cost time on every exec.
	n = min(n, len(in.b))
	s := string(in.b[:n])
	in.b = in.b[n:]
	return s
}

// number is an integer string near an int64 (or int32) limit, possibly out
// of range, signed, zero-padded or with a non-numeric tail.
func (in *hostileIn) number() string {
	base := pickIn(in, int64Bases)
	delta := int64(in.n(7)) - 3
	var s string
	switch {
	case delta > 0 && base > math.MaxInt64-delta, delta < 0 && base < math.MinInt64-delta:
		// Past the limit: render the exact out-of-range decimal.
		s = pastInt64(base, delta)
	default:
		s = strconv.FormatInt(base+delta, 10)
	}
	switch in.n(8) {
	case 1:
		if !strings.HasPrefix(s, "-") {
			s = "+" + s
		}
	case 2:
		s = "0" + s
	case 3:
		s += "x"
	case 4:
		s += ".0"
	}
	return s
}

// pastInt64 renders base+delta where it leaves int64 (base is one of the
// limits): MaxInt64+d as an unsigned number, MinInt64-d as a negated one.
func pastInt64(base, delta int64) string {
	if base > 0 {
		return strconv.FormatUint(uint64(base)+uint64(delta), 10)
	}
	return "-" + strconv.FormatUint(uint64(-(base+1))+1+uint64(-delta), 10)
}

func (in *hostileIn) key() string {
	switch b := in.byte(); {
	case b < 200:
		return hostileKeys[int(b)%min(len(hostileKeys), 9)]
	case b < 240:
		return hostileKeys[int(b)%len(hostileKeys)]
	default:
		return in.str()
	}
}

func (in *hostileIn) value() string {
	switch b := in.byte(); {
	case b < 160:
		return hostileValues[int(b)%7]
	case b < 220:
		return hostileValues[int(b)%len(hostileValues)]
	case b < 240:
		return in.number()
	default:
		return in.str()
	}
}

func (in *hostileIn) namespace() string {
	if b := in.byte(); b < 240 {
		return hostileNamespaces[int(b)%len(hostileNamespaces)]
	}
	return in.str()
}

func (in *hostileIn) weight() int32 {
	if b := in.byte(); b < 128 {
		return int32(b%100) + 1
	}
	return pickIn(in, hostileWeights)
}

func (in *hostileIn) labels(small int) map[string]string {
	n := in.count(small)
	if n == 0 && in.n(4) == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for i := range n {
		k := in.key()
		if n > 20 && in.n(2) == 0 {
			k = fmt.Sprintf("k%d.example.com/%s", i, k) // a huge set of distinct keys
		}
		m[k] = in.value() // duplicate keys: the last one wins, as in YAML
	}
	return m
}

func (in *hostileIn) values(op string) []string {
	var n int
	switch op {
	case "In", "NotIn":
		n = in.count(3)
		if n == 0 && in.n(2) == 0 {
			n = 1
		}
	case "Gt", "Lt":
		n = 1
		if in.n(8) == 0 {
			n = in.count(2)
		}
	default:
		n = in.count(1) * in.n(2)
	}
	out := make([]string, 0, n)
	for range n {
		if op == "Gt" || op == "Lt" {
			if in.n(3) == 0 {
				out = append(out, in.number())
				continue
			}
		}
		out = append(out, in.value())
	}
	return out
}

func (in *hostileIn) nodeRequirement(field bool) v1.NodeSelectorRequirement {
	r := v1.NodeSelectorRequirement{Key: in.key(), Operator: pickIn(in, nodeOps)}
	if field {
		r.Key = pickIn(in, []string{"metadata.name", "metadata.name", "metadata.uid", "spec.unschedulable", ""})
	}
	r.Values = in.values(string(r.Operator))
	return r
}

func (in *hostileIn) nodeTerm() v1.NodeSelectorTerm {
	var t v1.NodeSelectorTerm
	for range in.count(2) {
		t.MatchExpressions = append(t.MatchExpressions, in.nodeRequirement(false))
	}
	for range in.count(1) * in.n(2) {
		t.MatchFields = append(t.MatchFields, in.nodeRequirement(true))
	}
	return t
}

func (in *hostileIn) nodeAffinity() *v1.NodeAffinity {
	na := &v1.NodeAffinity{}
	switch in.n(4) {
	case 1:
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	case 2, 3:
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{}}
		for range in.count(2) {
			na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(
				na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, in.nodeTerm())
		}
	}
	for range in.count(2) {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			v1.PreferredSchedulingTerm{Weight: in.weight(), Preference: in.nodeTerm()})
	}
	return na
}

func (in *hostileIn) labelSelector() *metav1.LabelSelector {
	switch in.n(6) {
	case 1:
		return nil
	case 2:
		return &metav1.LabelSelector{}
	}
	sel := &metav1.LabelSelector{MatchLabels: in.labels(2)}
	for range in.count(2) {
		op := pickIn(in, labelOps)
		sel.MatchExpressions = append(sel.MatchExpressions,
			metav1.LabelSelectorRequirement{Key: in.key(), Operator: op, Values: in.values(string(op))})
	}
	return sel
}

func (in *hostileIn) podTerm() v1.PodAffinityTerm {
	t := v1.PodAffinityTerm{LabelSelector: in.labelSelector(), TopologyKey: in.key()}
	if in.n(16) == 0 {
		t.TopologyKey = "" // the apiserver rejects it in required terms; old objects may carry it
	}
	switch in.n(4) {
	case 1:
		t.Namespaces = []string{}
	case 2:
		for range in.count(2) {
			t.Namespaces = append(t.Namespaces, in.namespace())
		}
	}
	if in.n(3) == 1 {
		t.NamespaceSelector = in.labelSelector()
	}
	if in.n(8) == 1 {
		for range in.count(1) {
			t.MatchLabelKeys = append(t.MatchLabelKeys, in.key())
		}
	}
	if in.n(8) == 1 {
		for range in.count(1) {
			t.MismatchLabelKeys = append(t.MismatchLabelKeys, in.key())
		}
	}
	return t
}

func (in *hostileIn) podAffinity(a *v1.Affinity) {
	if in.n(2) == 0 {
		return
	}
	pa, anti := &v1.PodAffinity{}, &v1.PodAntiAffinity{}
	for range in.count(2) {
		pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution, in.podTerm())
	}
	for range in.count(2) {
		anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution, in.podTerm())
	}
	for range in.count(2) {
		pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution,
			v1.WeightedPodAffinityTerm{Weight: in.weight(), PodAffinityTerm: in.podTerm()})
	}
	for range in.count(2) {
		anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution,
			v1.WeightedPodAffinityTerm{Weight: in.weight(), PodAffinityTerm: in.podTerm()})
	}
	// Decoded after the lists, so an input used up by them reads zeros
	// here: zero keeps what was decoded; 7 drops it (nil vs empty structs).
	if in.n(8) != 7 {
		a.PodAffinity = pa
	}
	if in.n(8) != 7 {
		a.PodAntiAffinity = anti
	}
}

func (in *hostileIn) toleration() v1.Toleration {
	t := v1.Toleration{Key: in.key(), Operator: pickIn(in, tolOps), Effect: pickIn(in, effects)}
	switch t.Operator {
	case v1.TolerationOpGt, v1.TolerationOpLt:
		if in.n(2) == 0 {
			t.Value = in.number()
		} else {
			t.Value = in.value()
		}
	case v1.TolerationOpExists:
		if in.n(4) == 0 {
			t.Value = in.value()
		}
	default:
		t.Value = in.value()
	}
	if in.n(6) == 0 {
		s := pickIn(in, []int64{0, 1, -1, math.MaxInt64, math.MinInt64})
		t.TolerationSeconds = &s
	}
	return t
}

func (in *hostileIn) taint() v1.Taint {
	t := v1.Taint{Key: in.key(), Value: in.value(), Effect: pickIn(in, effects)}
	if in.n(4) == 0 {
		t.Value = in.number()
	}
	return t
}

// perObject is each node's and pod's element budget: one object can hold
// thousands of labels or terms without starving the others.
const perObject = 3000

func (in *hostileIn) node(i int) *v1.Node {
	in.budget = perObject
	name := fmt.Sprintf("n%d", i)
	switch in.n(16) {
	case 1:
		name = strings.ToUpper(name)
	case 2:
		name = in.value()
	case 3:
		name = in.str()
	}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + strconv.Itoa(i))}}
	n.Labels = in.labels(4)
	if in.n(2) == 0 {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[v1.LabelHostname] = name
	}
	for range in.count(2) {
		n.Spec.Taints = append(n.Spec.Taints, in.taint())
	}
	return n
}

// pod decodes a pod with labels and (anti-)affinity; incoming pods also get
// a nodeSelector, node affinity, tolerations and a nodeName.
func (in *hostileIn) pod(incoming bool) *v1.Pod {
	in.budget = perObject
	in.pods++
	name := fmt.Sprintf("p%d", in.pods)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: in.namespace(), Name: name, UID: types.UID("uid-" + name), Labels: in.labels(3)}}
	a := &v1.Affinity{}
	in.podAffinity(a)
	if incoming {
		if in.n(3) == 0 {
			p.Spec.NodeSelector = in.labels(2)
			if p.Spec.NodeSelector == nil {
				p.Spec.NodeSelector = map[string]string{}
			}
		}
		if in.n(2) == 0 {
			a.NodeAffinity = in.nodeAffinity()
		}
		for range in.count(3) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, in.toleration())
		}
		switch in.n(8) {
		case 1:
			p.Spec.NodeName = fmt.Sprintf("n%d", in.n(9)) // a default node name, or one past them
		case 2:
			p.Spec.NodeName = in.value()
		case 3:
			p.Spec.NodeName = "N0"
		}
	}
	if a.NodeAffinity != nil || a.PodAffinity != nil || a.PodAntiAffinity != nil || in.n(8) == 0 {
		p.Spec.Affinity = a
	}
	return p
}

func (in *hostileIn) nodeAffinityArgs() *configv1.NodeAffinityArgs {
	args := &configv1.NodeAffinityArgs{}
	if in.n(4) != 0 {
		args.AddedAffinity = in.nodeAffinity()
	}
	return args
}

func (in *hostileIn) interPodAffinityArgs() *configv1.InterPodAffinityArgs {
	args := &configv1.InterPodAffinityArgs{IgnorePreferredTermsOfExistingPods: in.n(2) == 1}
	if in.n(3) != 0 {
		w := pickIn(in, []int32{1, 0, 100, 50, -1, 101, math.MaxInt32, math.MinInt32})
		args.HardPodAffinityWeight = &w
	}
	return args
}

func viaJSON[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// decodeHostile turns fuzz bytes into a Scenario for the suite's
// comparators.
func decodeHostile(data []byte) *Scenario {
	in := &hostileIn{b: data, budget: perObject, total: 12000}
	sc := &Scenario{}
	flags := in.byte()
	sc.Gates.TaintTolerationComparisonOperators = flags&1 != 0
	sc.Gates.InPlacePodVerticalScalingSchedulerPreemption = flags&2 != 0
	sc.ArgsAsYAML = flags&4 != 0
	sc.NoStateChecks = flags&8 != 0
	// Args reach both plugins from a config file, i.e. serialized: strings
	// in them are valid UTF-8 (encoding/json replaces invalid bytes with
	// U+FFFD, which ours would see and upstream, handed the struct, not).
	if flags&16 != 0 {
		sc.NodeAffinityArgs = viaJSON(in.nodeAffinityArgs())
	}
	if flags&32 != 0 {
		sc.InterPodAffinityArgs = viaJSON(in.interPodAffinityArgs())
	}

	// Namespaces: hostileNamespaces[0:4] may exist; the rest never do.
	nsFlags := in.byte()
	for i, name := range hostileNamespaces[:4] {
		if nsFlags&(1<<i) == 0 {
			ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: in.labels(2)}}
			sc.Namespaces = append(sc.Namespaces, ns)
		}
	}

	// The incoming pod first: it is what every plugin decides about, and
	// decoded last it would often get only the zeros of an input used up
	// by huge node label sets.
	sc.Pod = in.pod(true)

	numNodes := 1 + in.n(8)
	if in.n(32) == 0 {
		numNodes = 0
	}
	seen := map[string]bool{}
	for i := range numNodes {
		n := in.node(i)
		if seen[n.Name] { // the apiserver has one node per name
			n.Name = fmt.Sprintf("%s-%d", n.Name, i)
		}
		seen[n.Name] = true
		sc.Nodes = append(sc.Nodes, n)
		sc.ScoreNodes = append(sc.ScoreNodes, n.Name)
	}
	if numNodes > 0 {
		for range in.count(6) {
			p := in.pod(false)
			p.Spec.NodeName = pickIn(in, sc.Nodes).Name
			sc.Pods = append(sc.Pods, p)
		}
	}

	if numNodes > 0 {
		for range in.n(3) {
			op := PreemptionOp{Node: pickIn(in, sc.Nodes).Name}
			for range 1 + in.n(3) {
				if in.n(2) == 0 {
					var onNode []string
					for _, p := range sc.Pods {
						if p.Spec.NodeName == op.Node {
							onNode = append(onNode, p.Namespace+"/"+p.Name)
						}
					}
					if len(onNode) > 0 {
						op.Steps = append(op.Steps, Step{Remove: pickIn(in, onNode)})
						continue
					}
				}
				p := in.pod(false)
				p.Status.NominatedNodeName = op.Node
				op.Steps = append(op.Steps, Step{Add: p})
			}
			sc.Preemption = append(sc.Preemption, op)
		}
	}

	for range in.n(4) {
		switch in.n(4) {
		case 0:
			sc.Events = append(sc.Events, Event{Kind: NodeAdd, NewNode: in.node(100 + len(sc.Events))})
		case 1:
			if len(sc.Nodes) > 0 {
				old := pickIn(in, sc.Nodes)
				nn := in.node(0)
				nn.Name, nn.UID = old.Name, old.UID
				sc.Events = append(sc.Events, Event{Kind: NodeUpdate, OldNode: old, NewNode: nn})
			}
		case 2:
			p := in.pod(false)
			if len(sc.Nodes) > 0 {
				p.Spec.NodeName = pickIn(in, sc.Nodes).Name
			}
			if len(sc.Pods) > 0 && in.n(2) == 0 {
				old := pickIn(in, sc.Pods)
				p.Namespace, p.Name, p.UID, p.Spec.NodeName = old.Namespace, old.Name, old.UID, old.Spec.NodeName
				sc.Events = append(sc.Events, Event{Kind: AssignedPodUpdate, OldPod: old, NewPod: p})
			} else {
				sc.Events = append(sc.Events, Event{Kind: AssignedPodAdd, NewPod: p})
			}
		case 3:
			if len(sc.Pods) > 0 && in.n(2) == 0 {
				sc.Events = append(sc.Events, Event{Kind: AssignedPodDelete, OldPod: pickIn(in, sc.Pods)})
				continue
			}
			np := sc.Pod.DeepCopy()
			np.Labels = in.labels(3)
			for range in.count(2) {
				np.Spec.Tolerations = append(np.Spec.Tolerations, in.toleration())
			}
			sc.Events = append(sc.Events, Event{Kind: TargetPodUpdate, OldPod: sc.Pod, NewPod: np})
		}
	}
	return sc
}

// The decoder reaches the hostile corners the fuzz targets promise, from
// plain random bytes (so the fuzzer starts from them, not only finds them).
func TestHostileDecoderReachesCorners(t *testing.T) {
	r := NewRand(defaultSeed, 0)
	seen := map[string]bool{}
	note := func(corner string, ok bool) {
		if ok {
			seen[corner] = true
		}
	}
	var strs func(s string)
	strs = func(s string) {
		note("a value longer than 63 bytes", len(s) > 63)
		note("invalid UTF-8", !utf8.ValidString(s))
		note("non-ASCII UTF-8", utf8.ValidString(s) && len(s) != utf8.RuneCountInString(s))
		if n, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10); ok {
			note("an integer past int64", !n.IsInt64())
			note("an integer at an int64 limit", n.IsInt64() && (n.Int64() == math.MaxInt64 || n.Int64() == math.MinInt64))
		}
	}
	nodeOpsSeen, labelOpsSeen := map[v1.NodeSelectorOperator]bool{}, map[metav1.LabelSelectorOperator]bool{}
	for range 3000 {
		data := make([]byte, r.IntN(2000))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		sc := decodeHostile(data)
		known := map[string]bool{}
		for _, ns := range sc.Namespaces {
			known[ns.Name] = true
		}
		pods := append([]*v1.Pod{sc.Pod}, sc.Pods...)
		for _, n := range sc.Nodes {
			note("a node with more than 100 labels", len(n.Labels) > 100)
			for k, v := range n.Labels {
				strs(k)
				strs(v)
			}
			for _, taint := range n.Spec.Taints {
				strs(taint.Value)
			}
		}
		for _, p := range pods {
			note("a pod in a namespace nobody created", !known[p.Namespace])
			for _, tol := range p.Spec.Tolerations {
				strs(tol.Value)
			}
			a := p.Spec.Affinity
			if a == nil {
				continue
			}
			if na := a.NodeAffinity; na != nil && na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
				note("thousands of node selector terms", len(terms) >= 1000)
				for _, term := range terms {
					keys := map[string]bool{}
					for _, req := range term.MatchExpressions {
						nodeOpsSeen[req.Operator] = true
						note("a duplicate key in one term", keys[req.Key])
						keys[req.Key] = true
						note("Gt/Lt without values", (req.Operator == v1.NodeSelectorOpGt || req.Operator == v1.NodeSelectorOpLt) && len(req.Values) == 0)
						for _, v := range req.Values {
							strs(v)
						}
					}
				}
			}
			var terms []v1.PodAffinityTerm
			if pa := a.PodAffinity; pa != nil {
				terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
				for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
					terms = append(terms, w.PodAffinityTerm)
				}
			}
			if anti := a.PodAntiAffinity; anti != nil {
				terms = append(terms, anti.RequiredDuringSchedulingIgnoredDuringExecution...)
				for _, w := range anti.PreferredDuringSchedulingIgnoredDuringExecution {
					terms = append(terms, w.PodAffinityTerm)
				}
			}
			note("thousands of pod (anti-)affinity terms", len(terms) >= 1000)
			for _, term := range terms {
				note("an empty topology key", term.TopologyKey == "")
				for _, ns := range term.Namespaces {
					note("a term naming a namespace nobody created", !known[ns])
				}
				if term.LabelSelector != nil {
					for _, req := range term.LabelSelector.MatchExpressions {
						labelOpsSeen[req.Operator] = true
					}
				}
			}
		}
	}
	for _, op := range nodeOps {
		if !nodeOpsSeen[op] {
			t.Errorf("node selector operator %q never decoded", op)
		}
	}
	for _, op := range labelOps {
		if !labelOpsSeen[op] {
			t.Errorf("label selector operator %q never decoded", op)
		}
	}
	for _, corner := range []string{
		"a value longer than 63 bytes", "invalid UTF-8", "non-ASCII UTF-8", "an integer past int64", "an integer at an int64 limit",
		"a node with more than 100 labels", "a pod in a namespace nobody created", "thousands of node selector terms",
		"a duplicate key in one term", "Gt/Lt without values", "thousands of pod (anti-)affinity terms", "an empty topology key",
		"a term naming a namespace nobody created",
	} {
		if !seen[corner] {
			t.Errorf("3000 random inputs decoded to no scenario with %s", corner)
		}
	}
}

// TestSettleMapOrder: texts drawn from the same entries on both sides
// settle even when no single run agrees; texts no run of upstream gives,
// and a mismatch of another kind, stand.
func TestSettleMapOrder(t *testing.T) {
	entries := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	rng := rand.New(rand.NewPCG(3, 4))
	invalid := func(e string) string { return "key: Invalid value: " + strconv.Quote(e) }
	run := func(ours func() string) func() []mismatch {
		return func() []mismatch {
			up, o := invalid(entries[rng.IntN(len(entries))]), ours()
			if up == o {
				return nil
			}
			return []mismatch{{Plugin: "InterPodAffinity", Check: "PreFilter", Upstream: up, Ours: o}}
		}
	}
	sameEntries := run(func() string { return invalid(entries[rng.IntN(len(entries))]) })
	neverUpstreams := run(func() string { return invalid("z" + entries[rng.IntN(len(entries))]) })

	for i := range 200 {
		first := sameEntries()
		if first == nil {
			continue
		}
		if got := settleMapOrder(first, sameEntries); len(got) > 0 {
			t.Fatalf("round %d: texts from the same entries did not settle: %v", i, got)
		}
	}
	// Three term lists, each naming its own entry by map order: 512 texts
	// per side, which 30 reruns rarely match whole.
	threeLists := func() []mismatch {
		text := func() string {
			return "parsing pod: [requiredAffinityTerms: " + invalid(entries[rng.IntN(len(entries))]) +
				", requiredAntiAffinityTerms: " + invalid(entries[rng.IntN(len(entries))]) +
				", preferredAffinityTerms: " + invalid(entries[rng.IntN(len(entries))]) + "]"
		}
		if up, o := text(), text(); up != o {
			return []mismatch{{Plugin: "InterPodAffinity", Check: "PreFilter", Upstream: up, Ours: o}}
		}
		return nil
	}
	for i := range 200 {
		if first := threeLists(); first != nil {
			if got := settleMapOrder(first, threeLists); len(got) > 0 {
				t.Fatalf("round %d: three lists of texts from the same entries did not settle: %v", i, got)
			}
		}
	}
	first := neverUpstreams()
	if got := settleMapOrder(first, neverUpstreams); len(got) != 1 {
		t.Fatalf("ours naming an entry upstream never names: got %v, want the mismatch to stand", got)
	}
	other := mismatch{Plugin: "InterPodAffinity", Check: "Filter", Where: "n1", Upstream: "Success", Ours: "Unschedulable"}
	got := settleMapOrder(first, func() []mismatch { return []mismatch{other} })
	if len(got) != 1 || got[0] != other {
		t.Fatalf("a mismatch of another kind in a rerun: got %v, want it returned", got)
	}
}
