package perf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The minor_*.go files state what this line's scheduler_perf has; this
// reads its sources (the module the build uses) and checks each statement,
// so that a line bump cannot leave one stale.
func TestLineFollowsItsSchedulerPerf(t *testing.T) {
	if env.setupErr != nil {
		t.Fatal(env.setupErr)
	}
	up := parseUpstream(t, env.upstreamDir)

	hasTemplateParams := slices.Contains(up.structFields["createPodsOp"], "TemplateParams")
	if got := ownWorkloadsGap == ""; got != hasTemplateParams {
		t.Errorf("ownWorkloadsGap = %q, but upstream's createPodsOp has TemplateParams: %v", ownWorkloadsGap, hasTemplateParams)
	}
	hasDuration := up.strings["SchedulingDuration"]
	if got := schedulingDurationGap == ""; got != hasDuration {
		t.Errorf("schedulingDurationGap = %q, but upstream writes a SchedulingDuration data item: %v", schedulingDurationGap, hasDuration)
	}
	hasTimeout := up.funcs["WithPodsSchedulingTimeout"]
	if err := CheckPodsTimeout(time.Minute); (err == nil) != hasTimeout {
		t.Errorf("CheckPodsTimeout(1m) = %v, but upstream has WithPodsSchedulingTimeout: %v", err, hasTimeout)
	}
	if err := CheckPodsTimeout(0); err != nil {
		t.Errorf("CheckPodsTimeout(0) = %v: no timeout asked for, nothing to refuse", err)
	}
	hasCPUProfile := up.strings["perf-cpuprofile"]
	if err := CheckCPUProfiles(true); (err == nil) != hasCPUProfile {
		t.Errorf("CheckCPUProfiles(true) = %v, but upstream has the -perf-cpuprofile flag: %v", err, hasCPUProfile)
	}
	if err := CheckCPUProfiles(false); err != nil {
		t.Errorf("CheckCPUProfiles(false) = %v: no profile asked for, nothing to refuse", err)
	}

	// CollectorConfig collects what upstream's default collection does
	// (the queueing hint series included, see CollectorConfig).
	collected, _ := CollectorConfig(nil)["metrics"].(map[string]any)
	if diff := cmp.Diff(up.defaultMetrics, slices.Sorted(maps.Keys(collected))); diff != "" {
		t.Errorf("CollectorConfig's metrics differ from upstream's default collection (-upstream +ours):\n%s", diff)
	}
}

// upstreamSources is what TestLineFollowsItsSchedulerPerf needs to know of
// scheduler_perf's non-test sources.
type upstreamSources struct {
	structFields map[string][]string // type name -> field names
	funcs        map[string]bool     // top-level functions
	strings      map[string]bool     // string literals
	// defaultMetrics are the metric names of defaultMetricsCollectorConfig
	// and qHintMetrics (where there is one), sorted.
	defaultMetrics []string
}

func parseUpstream(t *testing.T, dir string) upstreamSources {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	up := upstreamSources{structFields: map[string][]string{}, funcs: map[string]bool{}, strings: map[string]bool{}}
	metrics := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv == nil {
					up.funcs[n.Name.Name] = true
				}
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					for _, field := range st.Fields.List {
						for _, name := range field.Names {
							up.structFields[n.Name.Name] = append(up.structFields[n.Name.Name], name.Name)
						}
					}
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING {
					up.strings[s] = true
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if (name.Name == "defaultMetricsCollectorConfig" || name.Name == "qHintMetrics") && i < len(n.Values) {
						collectMetricNames(n.Values[i], metrics)
					}
				}
			}
			return true
		})
	}
	up.defaultMetrics = slices.Sorted(maps.Keys(metrics))
	if len(up.defaultMetrics) == 0 {
		t.Fatalf("no defaultMetricsCollectorConfig in %s", dir)
	}
	return up
}

// collectMetricNames adds the string keys of the map literals under e whose
// values are the label selections (the metric names).
func collectMetricNames(e ast.Expr, into map[string]bool) {
	ast.Inspect(e, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		if lit, ok := kv.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "scheduler_") {
				into[s] = true
			}
		}
		return true
	})
}
