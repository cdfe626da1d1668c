package reliability

import (
	"os"
	"testing"
	"time"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// env is the control plane TestMain starts for every test in this binary,
// set once before m.Run and only read afterwards.
var env *framework.Env

func TestMain(m *testing.M) {
	// Waits here cover thousands of pods on a loaded CI machine; a failure
	// still names what it waited for.
	// The audit log records every binding (who, which pod, to which node,
	// response code, when): the apiserver's own account of how often each
	// pod was bound, and where, which a SIGKILLed scheduler cannot lose.
	opts := framework.Options{AuditPolicy: framework.AuditRequests("pods/binding"), Timeout: 3 * time.Minute}
	os.Exit(framework.Main(m, opts, func(e *framework.Env) (func(), error) {
		env = e
		return nil, nil
	}))
}
