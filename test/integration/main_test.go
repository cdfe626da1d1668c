// Package integration runs the real placement-scheduler binary against a
// real kube-apiserver and etcd (test/framework). One control plane serves the
// whole test binary; each test works in its own namespace and removes only
// what it created.
package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// env is the control plane TestMain starts for every test in this binary,
// set once before m.Run and only read afterwards.
var env *framework.Env

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if env, err = framework.Start(framework.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	return m.Run()
}
