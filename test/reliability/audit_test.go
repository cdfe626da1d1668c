package reliability

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// binding is one POST pods/<name>/binding the apiserver answered, from its
// audit log.
type binding struct {
	Code int32
	At   time.Time
}

// succeeded reports whether the apiserver bound the pod on this request.
func (b binding) succeeded() bool { return b.Code >= 200 && b.Code < 300 }

// unanswered reports whether the request ended because its client went
// away or it timed out (500 "client disconnected", 504): the binding may
// have been stored all the same, as the apiserver does not undo a write
// whose client left.
func (b binding) unanswered() bool { return b.Code == 500 || b.Code == 504 }

// bindings reads every binding request for pods in ns from the audit log,
// by pod name, in log order. A SIGKILLed scheduler cannot take back what
// the apiserver recorded, so this is the count of binds that happened.
func bindings(t testing.TB, ns string) map[string][]binding {
	t.Helper()
	f, err := os.Open(env.AuditLog)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	out := map[string][]binding{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log %s: %v", env.AuditLog, err)
		}
		r := ev.ObjectRef
		if ev.Stage != auditv1.StageResponseComplete || r == nil || r.Resource != "pods" || r.Subresource != "binding" || r.Namespace != ns || ev.ResponseStatus == nil {
			continue
		}
		out[r.Name] = append(out[r.Name], binding{Code: ev.ResponseStatus.Code, At: ev.StageTimestamp.Time})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("audit log %s: %v", env.AuditLog, err)
	}
	return out
}
