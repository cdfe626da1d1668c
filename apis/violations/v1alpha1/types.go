package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// DefaultSecurePort is where the enforcer serves its endpoints, /violations
// among them, unless --secure-port says otherwise.
const DefaultSecurePort = 10261

// The states a violating pod is reported in.
const (
	StateGrace        = "grace"         // violating, grace period not over
	StateProtected    = "protected"     // never evicted; Detail says why
	StateWaitingOwner = "waiting-owner" // its owner has a pod not Ready or terminating
	StatePaced        = "paced"         // a cap or the rate limit holds it back
	StateNoFit        = "no-fit"        // no other node would take its replacement
	StatePDBBlocked   = "pdb-blocked"   // the Eviction API answered 429
	StateEvicting     = "evicting"      // eviction accepted
	StateDryRun       = "dry-run"       // the server accepted a dryRun eviction
	StateError        = "error"         // the eviction failed otherwise; Detail has the error
	StateLooping      = "looping"       // its owner's evictions for the rule loop; Detail says why
	StateUnjudged     = "unjudged"      // opted in, but cannot be judged; Detail says why
)

// WaitRateLimit is Report.Wait for a pod the rate limit holds back (the
// others are the enforcer's hold names).
const WaitRateLimit = "rate-limit"

// Report is one opted-in pod that violates a rule, after a pass. Its JSON
// form is what /violations serves.
type Report struct {
	Pod    string                `json:"pod"` // namespace/name
	UID    types.UID             `json:"uid"`
	Node   string                `json:"node"`
	Rule   enforcerv1alpha1.Rule `json:"rule"`
	Reason string                `json:"reason"`
	Terms  []string              `json:"terms,omitempty"`
	State  string                `json:"state"`
	// Detail is the protection reason, the refusal or the error.
	Detail string `json:"detail,omitempty"`
	// Wait names what holds a pod that is due back, for waiting-owner
	// and paced: owner, limits.perNode, limits.perNamespace,
	// limits.total or rate-limit.
	Wait string `json:"wait,omitempty"`
	// Target is where the replacement would be scheduled.
	Target string      `json:"target,omitempty"`
	Since  metav1.Time `json:"since"`
}
