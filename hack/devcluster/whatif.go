package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// whatIfNamespace is the namespace of docs/simulate's workloads: the demo
// creates it (empty) so that they can be asked about.
const whatIfNamespace = "shop"

// whatIfs are the questions docs/simulate.md asks of the demo fleet
// ("Five questions on the demo fleet"), one per mode of `kubectl placement
// simulate`, asked here of the live cluster once the examples run on it:
// a workload, a drain, a pool change, how many more fit, and two configs
// side by side. They only read; test/examples holds each mode to what the
// scheduler does.
var whatIfs = []struct {
	question string
	args     []string
}{
	{"Will all 8 replicas of web-v2 fit, and where?", []string{"-f", "docs/simulate/web-v2.yaml"}},
	{"Can I drain general-a1 now?", []string{"--drain", "general-a1"}},
	{"What would two more nodes like general-a1 take?", []string{"--add-nodes", "2", "--like", "general-a1", "-f", "docs/simulate/web-v2.yaml"}},
	{"How many more replicas of the batch job fit?", []string{"--max-replicas", "-f", "docs/simulate/batch.yaml"}},
	{"What changes for the batch job with a bin-packing config?", []string{"-f", "docs/simulate/batch.yaml", "--compare-config", "docs/simulate/bin-packing.yaml"}},
}

// askWhatIfs runs every what-if against env's cluster and prints its table;
// a what-if that fails to run fails the demo.
func askWhatIfs(ctx context.Context, env *framework.Env) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: whatIfNamespace}}
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s for the what-ifs: %w", whatIfNamespace, err)
	}
	for i, w := range whatIfs {
		fmt.Printf("\nwhat if %d: %s\n$ kubectl placement simulate %s\n", i+1, w.question, strings.Join(w.args, " "))
		args := append([]string{"simulate", "--kubeconfig", env.Kubeconfig}, w.args...)
		if err := placement(ctx, os.Stdout, args...); err != nil {
			return fmt.Errorf("what if %d (%s): %w", i+1, w.question, err)
		}
	}
	return nil
}
