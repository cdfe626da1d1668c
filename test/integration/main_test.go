// Package integration runs the real placement-scheduler binary against a
// real kube-apiserver and etcd (test/framework). One control plane serves the
// whole test binary; each test works in its own namespace and removes only
// what it created.
package integration

import (
	"os"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// env is the control plane TestMain starts for every test in this binary,
// set once before m.Run and only read afterwards.
var env *framework.Env

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, framework.Options{}, func(e *framework.Env) (func(), error) {
		env = e
		return nil, nil
	}))
}
