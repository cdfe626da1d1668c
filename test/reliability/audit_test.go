package reliability

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// binding is one POST pods/<name>/binding the apiserver answered, from its
// audit log.
type binding struct {
	Code int32
	// Target is the node the request asked for (the Binding's target).
	Target string
	// Received is when the apiserver received the request, At when it
	// answered (or gave up).
	Received, At time.Time
}

// succeeded reports whether the apiserver bound the pod on this request.
// A pod's binding can be created once: the apiserver refuses to bind a pod
// whose spec.nodeName is set (409), so a second successful request for one
// pod is a double bind.
func (b binding) succeeded() bool { return b.Code >= 200 && b.Code < 300 }

// unanswered reports whether the request ended because its client went
// away or it timed out (500 "client disconnected", 504), or the apiserver
// panicked while serving it: the binding may have been stored all the
// same, as the apiserver does not undo a write whose client left.
func (b binding) unanswered() bool { return b.Code == 500 || b.Code == 504 }

// auditRecord is the part of an audit event bindings reads: the Binding
// the request carried (the policy logs pods/binding at Request level).
type auditRecord struct {
	auditv1.Event
	RequestObject *struct {
		Target struct {
			Name string `json:"name"`
		} `json:"target"`
	} `json:"requestObject,omitempty"`
}

// eventStart is how every JSON line of the audit log begins.
var eventStart = []byte(`{"kind":"Event"`)

// bindings reads every binding request for pods in ns from the audit log,
// by pod name, in log order. A SIGKILLed scheduler cannot take back what
// the apiserver recorded, so this is the count of binds that happened,
// except what a SIGKILLed apiserver was still answering: it can have
// stored a binding and died before logging it, or in the middle of
// writing its line (the kernel may stop a SIGKILLed write at a page
// boundary; the restarted apiserver then appends to the partial line).
// torn counts such partial records; the callers decide whether an
// apiserver was SIGKILLed, so whether one is allowed.
func bindings(t testing.TB, ns string) (_ map[string][]binding, torn int) {
	t.Helper()
	f, err := os.Open(env.AuditLog)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	nsField := []byte(`"namespace":"` + ns + `"`)
	out := map[string][]binding{}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A line without its newline is one the apiserver is still
			// writing: the next read sees it whole.
			break
		}
		if err != nil {
			t.Fatalf("audit log %s: %v", env.AuditLog, err)
		}
		if !bytes.Contains(line, nsField) {
			continue
		}
		var ev auditRecord
		if err := json.Unmarshal(line, &ev); err != nil {
			// A record cut short by a SIGKILL, and the restarted
			// apiserver's first record after it.
			i := bytes.LastIndex(line, eventStart)
			if i <= 0 || json.Unmarshal(line[i:], &ev) != nil {
				t.Fatalf("audit log %s: %v in %q", env.AuditLog, err, line)
			}
			torn++
		}
		o := ev.ObjectRef
		if o == nil || o.Resource != "pods" || o.Subresource != "binding" || o.Namespace != ns || ev.ResponseStatus == nil {
			continue
		}
		if ev.Stage != auditv1.StageResponseComplete && ev.Stage != auditv1.StagePanic {
			continue
		}
		b := binding{Code: ev.ResponseStatus.Code, Received: ev.RequestReceivedTimestamp.Time, At: ev.StageTimestamp.Time}
		if ev.Stage == auditv1.StagePanic {
			b.Code = 500 // the write may have been stored; nobody was answered
		}
		if ev.RequestObject != nil {
			b.Target = ev.RequestObject.Target.Name
		}
		out[o.Name] = append(out[o.Name], b)
	}
	return out, torn
}
