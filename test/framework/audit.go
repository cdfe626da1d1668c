package framework

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// AuditRequests is an audit policy (Options.AuditPolicy) that records
// every request on the given resources ("pods/binding", "pods/eviction")
// at Request level (who, which object, what it asked, the answer, when),
// once each, when answered, and nothing else: the apiserver's own account
// of what clients did, which a SIGKILLed client cannot lose.
func AuditRequests(resources ...string) []byte {
	return Audit{Requests: resources}.Policy()
}

// Audit says what an audit policy (Audit.Policy) records, each request
// once, when answered.
type Audit struct {
	// Requests are core resources ("pods/eviction") whose every request
	// is recorded at Request level (AuditRequests).
	Requests []string
	// ServiceAccounts records every other request a ServiceAccount makes
	// at Metadata level (who, what, the answer's code), but those of
	// kube-system's, the control plane's own: what a component running
	// under a ServiceAccount of a test's asked, and what it was refused
	// (AuditedRequests).
	ServiceAccounts bool
}

// Policy is a's audit.k8s.io/v1 Policy.
func (a Audit) Policy() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [\"RequestReceived\", \"ResponseStarted\"]\nrules:\n")
	if len(a.Requests) > 0 {
		quoted := make([]string, len(a.Requests))
		for i, r := range a.Requests {
			quoted[i] = fmt.Sprintf("%q", r)
		}
		b.WriteString("  - level: Request\n    resources:\n      - group: \"\"\n        resources: [" + strings.Join(quoted, ", ") + "]\n")
	}
	if a.ServiceAccounts {
		b.WriteString("  - level: None\n    userGroups: [\"system:serviceaccounts:kube-system\"]\n")
		b.WriteString("  - level: Metadata\n    userGroups: [\"system:serviceaccounts\"]\n")
	}
	b.WriteString("  - level: None\n")
	return []byte(b.String())
}

// AuditedRequests reads the audit log (Options.AuditPolicy) for the
// requests user made in its own name (not impersonated by another), as
// answered, in log order. A line still being written is left for the next
// read.
func (e *Env) AuditedRequests(user string) ([]auditv1.Event, error) {
	if e.AuditLog == "" {
		return nil, errors.New("the apiserver keeps no audit log (Options.AuditPolicy)")
	}
	f, err := os.Open(e.AuditLog)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	// The user's name as its JSON reads: most lines are skipped unparsed.
	name, err := json.Marshal(user)
	if err != nil {
		return nil, err
	}
	needle := append([]byte(`"username":`), name...)
	var out []auditv1.Event
	rd := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("audit log %s: %w", e.AuditLog, err)
		}
		if !bytes.Contains(line, needle) {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("audit log %s: %w in %q", e.AuditLog, err, line)
		}
		if ev.User.Username != user || ev.ImpersonatedUser != nil || ev.Stage != auditv1.StageResponseComplete || ev.ResponseStatus == nil {
			continue
		}
		out = append(out, ev)
	}
}
