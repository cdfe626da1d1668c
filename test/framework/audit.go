package framework

import (
	"fmt"
	"strings"
)

// AuditRequests is an audit policy (Options.AuditPolicy) that records
// every request on the given resources ("pods/binding", "pods/eviction")
// at Request level (who, which object, what it asked, the answer, when),
// once each, when answered, and nothing else: the apiserver's own account
// of what clients did, which a SIGKILLed client cannot lose.
func AuditRequests(resources ...string) []byte {
	quoted := make([]string, len(resources))
	for i, r := range resources {
		quoted[i] = fmt.Sprintf("%q", r)
	}
	return []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Request
    resources:
      - group: ""
        resources: [` + strings.Join(quoted, ", ") + `]
  - level: None
`)
}
