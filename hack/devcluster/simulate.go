package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/examples"
	"github.com/placement-scheduler/placement-scheduler/internal/placementcmd"
	"github.com/placement-scheduler/placement-scheduler/internal/simulate"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// whatIfExample is the example the demo asks `kubectl placement simulate`
// about before applying anything: two Deployments whose replicas place
// each other (affinity to the cache, anti-affinity to themselves), so the
// answer depends on placing every replica in turn.
const whatIfExample = "web-store"

// simulateFirst runs `kubectl placement simulate -f` on the example's YAML
// against the live cluster before it is applied, printing what a user
// sees, and returns the simulated placement ("<deployment> <node>" per
// replica, sorted) to hold the scheduler to once the example is applied.
func simulateFirst(ctx context.Context, env *framework.Env, fsys fs.FS, name string) ([]string, error) {
	dir, err := os.MkdirTemp("", "demo-simulate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.CopyFS(dir, mustSub(fsys, name)); err != nil {
		return nil, err
	}
	// The example's top-level YAML, as `kubectl apply -f <folder>` reads it.
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("example %s has no YAML at its top (%v)", name, err)
	}
	args := []string{"simulate", "--kubeconfig", env.Kubeconfig, "--by", "kubernetes.io/hostname"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	fmt.Printf("what if: kubectl placement simulate -f manifests/examples/%s/ (before applying it)\n", name)
	// One simulation, as -o json, printed the way the table output prints it.
	var out bytes.Buffer
	if err := placement(ctx, &out, append(args, "-o", "json")...); err != nil {
		return nil, err
	}
	var res simulatev1alpha1.PlacementSimulation
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("decoding simulate -o json: %w", err)
	}
	if err := simulate.PrintTable(os.Stdout, &res); err != nil {
		return nil, err
	}
	var want []string
	for _, r := range res.Replicas {
		if r.Node == "" {
			want = append(want, r.Workload+" Pending")
			continue
		}
		want = append(want, r.Workload+" "+r.Node)
	}
	slices.Sort(want)
	return want, nil
}

// placed is what the scheduler did with the example's pods, in
// simulateFirst's form.
func placed(rows []examples.Placement, name string) []string {
	var got []string
	for _, r := range rows {
		if r.Example != name {
			continue
		}
		node := r.Node
		if node == "" {
			node = "Pending"
		}
		got = append(got, r.Workload+" "+node)
	}
	slices.Sort(got)
	return got
}

// placement runs the kubectl-placement command tree in this process,
// writing its output to out.
func placement(ctx context.Context, out io.Writer, args ...string) error {
	var errOut bytes.Buffer
	cmd := placementcmd.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &errOut}, placementcmd.BuildInfo{})
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		return fmt.Errorf("kubectl placement %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return nil
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		// Unreachable: fs.Sub fails only on an invalid path.
		panic(err)
	}
	return sub
}
