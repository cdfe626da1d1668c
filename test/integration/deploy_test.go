package integration

// manifests/ as an install: `kubectl apply -k` against the real apiserver,
// the real binary running with the ServiceAccount's own token and the
// ConfigMap's config and the Deployment's args, two replicas failing over,
// and an upgrade.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// partOf selects everything the kustomize base installs.
const partOf = "app.kubernetes.io/part-of=placement-scheduler"

// `kubectl apply -k manifests/` installs a complete second scheduler on a
// real apiserver: every object accepted, the config identical to the shipped
// file, a pod template that the "restricted" Pod Security level admits,
// re-applying changes nothing, and `kubectl delete -k` would remove it all.
func TestManifestsInstallOnARealAPIServer(t *testing.T) {
	ctx := context.Background()
	in := env.InstallManifests(t)
	checkStored(t, in, map[string]int{
		"Namespace": 1, "ServiceAccount": 2, "ConfigMap": 1, "Deployment": 2, "Service": 2, "PodDisruptionBudget": 2,
		"ClusterRoleBinding": 4, "Role": 2, "RoleBinding": 4, "ClusterRole": 3, // the scheduler's and the enforcer's
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1, // the enforcer's
	})

	// One source of truth: the ConfigMap is the shipped file, byte for byte,
	// and its generated name carries a content hash, so changing the config
	// changes the pod template and rolls the replicas.
	if !bytes.Equal(in.Config, manifests.SchedulerConfig()) {
		t.Errorf("ConfigMap %s differs from manifests/scheduler-config.yaml", in.ConfigMap)
	}
	if !regexp.MustCompile(`^placement-scheduler-config-[a-z0-9]{10}$`).MatchString(in.ConfigMap) {
		t.Errorf("ConfigMap name %q: want the generated, hashed one", in.ConfigMap)
	}

	d := in.Deployment
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	check := func(what string, got, want any) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Deployment %s (-want +got):\n%s", what, diff)
		}
	}
	check("replicas", d.Spec.Replicas, ptr.To[int32](2))
	check("serviceAccountName", pod.ServiceAccountName, framework.Name)
	check("testutil.SchedulerName (placed by the default scheduler)", pod.SchedulerName, v1.DefaultSchedulerName)
	check("liveness probe", c.LivenessProbe.HTTPGet, &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("https"), Scheme: v1.URISchemeHTTPS})
	check("readiness probe", c.ReadinessProbe.HTTPGet, &v1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("https"), Scheme: v1.URISchemeHTTPS})
	check("ports", c.Ports, []v1.ContainerPort{{Name: "https", ContainerPort: 10259, Protocol: v1.ProtocolTCP}})
	check("container securityContext", c.SecurityContext, &v1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
	})
	check("pod securityContext", pod.SecurityContext, &v1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65532),
		RunAsGroup:     ptr.To[int64](65532),
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
	})
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests %v: want cpu and memory", c.Resources.Requests)
	}
	if len(pod.Volumes) != 1 {
		t.Errorf("volumes %+v: want only the config (the scheduler writes nothing)", pod.Volumes)
	}

	// The pod the Deployment would create passes admission, including Pod
	// Security "restricted" as the namespace enforces it, and the priority
	// class (server-side dry run: nothing is stored). Loosening it is
	// rejected, so the namespace does enforce.
	tmpl := func(mutate func(*v1.PodSpec)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, GenerateName: "template-", Labels: d.Spec.Template.Labels}}
		p.Spec = *d.Spec.Template.Spec.DeepCopy()
		if mutate != nil {
			mutate(&p.Spec)
		}
		return p
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := env.Client.CoreV1().Pods(framework.Namespace).Create(ctx, tmpl(nil), dryRun); err != nil {
		t.Errorf("the Deployment's pod is not admitted: %v", err)
	}
	_, err := env.Client.CoreV1().Pods(framework.Namespace).Create(ctx, tmpl(func(s *v1.PodSpec) {
		s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
	}), dryRun)
	if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
		t.Errorf("a pod allowing privilege escalation: err=%v, want a PodSecurity restricted violation", err)
	}

	// Re-applying is a no-op: nothing the apiserver defaults fights the
	// manifests, so no object is written again. (kubectl may still print
	// "configured" for the PodDisruptionBudget, whose selector it always
	// patches with replace semantics; the apiserver drops that no-op.)
	versions := func() map[string]string {
		rv := map[string]string{}
		for _, o := range in.Objects {
			got, err := env.Resource(t, o).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", framework.ObjectKey(o), err)
			}
			rv[framework.ObjectKey(o)] = got.GetResourceVersion()
		}
		return rv
	}
	first := versions()
	env.MustKubectl(t, "apply", "-k", in.Dir)
	if diff := cmp.Diff(first, versions()); diff != "" {
		t.Errorf("re-applying rewrote objects (resourceVersions -before +after):\n%s", diff)
	}

	// Uninstall resolves every object (dry run: envtest cannot finish
	// deleting a namespace).
	out := env.MustKubectl(t, "delete", "-k", in.Dir, "--dry-run=server")
	if n := strings.Count(out, " (server dry run)\n"); n != len(in.Objects) {
		t.Errorf("kubectl delete -k would delete %d objects, want %d:\n%s", n, len(in.Objects), out)
	}
}

// startLeaderAsInstalled runs the real binary as the installation's pods
// would: the ServiceAccount's own token, the ConfigMap's config, the
// Deployment's args; and waits until it leads.
func startLeaderAsInstalled(t *testing.T, in *framework.Installation) *framework.Scheduler {
	t.Helper()
	sched := env.StartScheduler(t, framework.SchedulerOptions{
		Kubeconfig: env.ServiceAccountKubeconfig(t, framework.Namespace, framework.Name),
		Config:     in.Config,
		Args:       in.SchedulerArgs(),
	})
	waitForLeadership(t, sched)
	return sched
}

// checkStored fails unless every installed object is stored and they are
// of the kinds, so many of each, in want.
func checkStored(t *testing.T, in *framework.Installation, want map[string]int) {
	t.Helper()
	kinds := map[string]int{}
	for _, o := range in.Objects {
		if _, err := env.Resource(t, o).Get(context.Background(), o.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("%s after the install: %v", framework.ObjectKey(o), err)
		}
		kinds[o.GetKind()]++
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("installed kinds (-want +got):\n%s", diff)
	}
}

// forbiddenLines returns the log lines that report an authorization failure.
func forbiddenLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		// Case-sensitive "Unauthorized": the flag dump at -v=1 lists
		// --authorization-webhook-cache-unauthorized-ttl.
		if strings.Contains(strings.ToLower(line), "forbidden") || strings.Contains(line, "Unauthorized") {
			out = append(out, line)
		}
	}
	return out
}

// The installed RBAC is enough, with nothing borrowed from an admin: the real
// binary, run with a token of the installed ServiceAccount (TokenRequest, as
// a pod gets it) for its own client and for delegated authn/authz of its
// HTTPS endpoints, with the ConfigMap's config and the Deployment's args,
// leads on our lease, schedules plain pods, binds a WaitForFirstConsumer
// volume (system:volume-scheduler), allocates a DRA device, preempts,
// records events, serves the probes and authorizes /metrics, and logs no
// "forbidden".
func TestInstalledSchedulerNeedsOnlyItsServiceAccount(t *testing.T) {
	ctx := context.Background()
	env.StopSharedScheduler()
	in := env.InstallManifests(t)
	sched := startLeaderAsInstalled(t, in)

	ns := env.NewNamespace(t, nil)
	volumeNode := framework.SchedulableNode(ns, "b").Label("placement-test/volume", ns).Obj()
	deviceNode := framework.SchedulableNode(ns, "c").Obj()
	env.CreateNodes(t, framework.SchedulableNode(ns, "a").Obj(), volumeNode, deviceNode)

	// A WaitForFirstConsumer local volume that only volumeNode can reach.
	class := testutil.MakeWaitForFirstConsumerClass(ns + "-local")
	pv := testutil.MakeLocalPV(ns+"-pv", class.Name, "1Gi", testutil.Term(testutil.Expr("placement-test/volume", v1.NodeSelectorOpIn, ns)))
	pvc := testutil.MakePVC(ns, "data", class.Name, "1Gi")
	// A DRA device that only deviceNode has.
	driver := "gpu.placement-test.example.com"
	deviceClass := testutil.MakeDeviceClass(ns+"-gpu", driver)
	slice := testutil.MakeNodeResourceSlice(ns+"-"+deviceNode.Name, driver, deviceNode.Name, "gpu-0")
	claim := testutil.MakeResourceClaim(ns, "gpu", deviceClass.Name)
	env.Create(t, class, pv, pvc, deviceClass, slice, claim)
	setPVPhase(t, pv.Name, v1.VolumeAvailable) // the PV controller's first step

	env.CreatePod(t, testutil.MakePod(ns, "plain").Placement().Obj())
	env.CreatePod(t, testutil.MakePod(ns, "with-volume").Placement().PVC("data", "data").Obj())
	env.CreatePod(t, testutil.MakePod(ns, "with-device").Placement().ResourceClaim("gpu", "gpu").Obj())

	// Stand in for the PV controller: once the scheduler has claimed the PV
	// for the PVC (PreBind), finish the binding; the scheduler then binds the pod.
	var claimed *v1.PersistentVolume
	env.Poll(t, fmt.Sprintf("the scheduler to claim PV %s for %s/data", pv.Name, ns), func(ctx context.Context) (bool, error) {
		got, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		claimed = got
		return err == nil && got.Spec.ClaimRef != nil, nil
	})
	if ref := claimed.Spec.ClaimRef; ref.Namespace != ns || ref.Name != "data" {
		t.Fatalf("PV claimed for %s/%s, want %s/data", ref.Namespace, ref.Name, ns)
	}
	bindPVC(t, ns, "data", pv.Name)

	if got := env.WaitForBound(t, ns, "plain"); !strings.HasPrefix(got, ns+"-") {
		t.Errorf("plain bound to %q, not one of this test's nodes", got)
	}
	if got := env.WaitForBound(t, ns, "with-volume"); got != volumeNode.Name {
		t.Errorf("with-volume bound to %q, want %q (the only node its volume reaches)", got, volumeNode.Name)
	}
	if got := env.WaitForBound(t, ns, "with-device"); got != deviceNode.Name {
		t.Errorf("with-device bound to %q, want %q (the only node with the device)", got, deviceNode.Name)
	}
	for _, p := range []string{"plain", "with-volume", "with-device"} {
		// reportingComponent is what docs/operations.md tells operators to look for.
		if e := env.WaitForEvent(t, ns, p, "Scheduled", "Successfully assigned"); e.ReportingController != testutil.SchedulerName {
			t.Errorf("%s: Scheduled event reported by %q, want %q", p, e.ReportingController, testutil.SchedulerName)
		}
	}
	gotClaim, err := env.Client.ResourceV1().ResourceClaims(ns).Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := gotClaim.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-0" {
		t.Errorf("claim allocation %+v, want gpu-0", gotClaim.Status.Allocation)
	}
	if r := gotClaim.Status.ReservedFor; len(r) != 1 || r[0].Name != "with-device" {
		t.Errorf("claim reservedFor %+v, want the pod", r)
	}

	// Preemption: on a one-CPU node, a higher-priority pod evicts the pod
	// there (DisruptionTarget condition, then delete) and is nominated to
	// the node (status patch). Without a kubelet the victim never finishes
	// terminating, so that is as far as it goes.
	small := testutil.MakeNode(ns+"-small").Capacity("1", "4Gi", 110).Ready().Obj()
	env.CreateNodes(t, small)
	high := testutil.MakePriorityClass(ns+"-high", 1000)
	env.Create(t, high)
	onSmall := map[string]string{v1.LabelHostname: small.Name}
	env.CreatePod(t, testutil.MakePod(ns, "victim").Placement().NodeSelector(onSmall).Request("800m", "1Gi").Obj())
	env.WaitForBound(t, ns, "victim")
	env.CreatePod(t, testutil.MakePod(ns, "preemptor").Placement().NodeSelector(onSmall).Request("800m", "1Gi").PriorityClassName(high.Name).Obj())
	env.WaitForPod(t, ns, "preemptor", "nominatedNodeName", func(p *v1.Pod) bool { return p.Status.NominatedNodeName == small.Name })
	victim := env.WaitForPod(t, ns, "victim", "deletion", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	if c := framework.PodCondition(victim, v1.DisruptionTarget); c == nil || c.Reason != v1.PodReasonPreemptionByScheduler {
		t.Errorf("victim's DisruptionTarget condition %+v, want reason %s", c, v1.PodReasonPreemptionByScheduler)
	}
	env.WaitForEvent(t, ns, "victim", "Preempted", "Preempted by pod")

	// Our lease, with a holder.
	l, err := env.Client.CoordinationV1().Leases(framework.Namespace).Get(ctx, framework.Name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Errorf("lease %s/%s: %v %+v, want a holder", framework.Namespace, framework.Name, err, l)
	}

	// kubelet's probes need no credentials; /metrics needs GET on it, which
	// the scheduler checks with the apiserver (TokenReview,
	// SubjectAccessReview) using its own ServiceAccount.
	sched.WaitForGet(t, "/healthz", "", 200)
	sched.WaitForGet(t, "/readyz", "", 200)
	if code, err := sched.Get("/metrics", ""); err != nil || code != 403 {
		t.Errorf("anonymous GET /metrics: %d %v, want 403", code, err)
	}
	scraper := metricsScraper(t, ns)
	sched.WaitForGet(t, "/metrics", scraper, 200)

	if lines := forbiddenLines(sched.Log()); len(lines) > 0 {
		t.Errorf("the scheduler was refused something with the installed RBAC:\n%s", strings.Join(lines, "\n"))
	}
	if lines := framework.UnhandledErrors(sched.Log()); len(lines) > 0 {
		t.Errorf("a healthy start logged errors:\n%s", strings.Join(lines, "\n"))
	}
}

// metricsScraper returns the token of a ServiceAccount bound to the shipped
// placement-scheduler:metrics-reader ClusterRole, as a Prometheus would be.
func metricsScraper(t *testing.T, ns string) string {
	t.Helper()
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scraper"}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "placement-scheduler:metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	env.Create(t, sa, crb)
	return env.ServiceAccountToken(t, ns, sa.Name)
}

// bindPVC does what the PV controller does once a PV is claimed: point the
// claim at the volume, mark the bind complete, and both Bound.
func bindPVC(t *testing.T, ns, name, pvName string) {
	t.Helper()
	ctx := context.Background()
	pvcs := env.Client.CoreV1().PersistentVolumeClaims(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Spec.VolumeName = pvName
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
		if c, err = pvcs.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return err
		}
		c.Status.Phase = v1.ClaimBound
		_, err = pvcs.UpdateStatus(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("binding PVC %s/%s: %v", ns, name, err)
	}
	setPVPhase(t, pvName, v1.VolumeBound)
}

// setPVPhase sets a PV's status.phase, as the PV controller would.
func setPVPhase(t *testing.T, name string, phase v1.PersistentVolumePhase) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		v, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		v.Status.Phase = phase
		_, err = env.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, v, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("marking PV %s %s: %v", name, phase, err)
	}
}

// Two replicas of the installed scheduler, as the Deployment runs them: one
// leads on our lease (never kube-system/kube-scheduler) while the other waits
// ready; when the leader is SIGKILLed in the middle of a stream of pod
// creations (no lease release, as on a node failure) the other takes over
// once the lease expires, and every pod ends bound, by exactly one replica.
func TestReplicasFailOverWithoutLosingOrDoublingPods(t *testing.T) {
	ctx := context.Background()
	env.StopSharedScheduler()
	in := env.InstallManifests(t)
	kubeconfig := env.ServiceAccountKubeconfig(t, framework.Namespace, framework.Name)
	// Shorter than the defaults (15s/10s/2s) so the hand-over after a crash
	// takes seconds; the lease is still the configured one.
	args := in.SchedulerArgs("--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s")
	opts := framework.SchedulerOptions{Kubeconfig: kubeconfig, Config: in.Config, Args: args}
	replicas := []*framework.Scheduler{env.StartScheduler(t, opts), env.StartScheduler(t, opts)}
	firstHolder := env.WaitForLeaseHolder(t, "")
	leader, standby := whichLeads(t, replicas)
	// Both Ready: /readyz does not need the lease, so a rolling update
	// (maxUnavailable 0) can bring a new replica up beside the leader.
	for _, r := range replicas {
		r.WaitForGet(t, "/readyz", "", 200)
	}
	// One holder throughout: the lease never changed hands, and the standby
	// (only its own log can say which process it is) never led.
	if h := env.LeaseHolder(t); h != firstHolder {
		t.Fatalf("lease holder changed from %q to %q with both replicas up", firstHolder, h)
	}
	if strings.Contains(standby.Log(), "Successfully acquired lease") {
		t.Fatal("both replicas acquired the lease")
	}

	ns := env.NewNamespace(t, nil)
	env.CreateNodes(t, framework.SchedulableNode(ns, "a").Obj(), framework.SchedulableNode(ns, "b").Obj())
	podName := func(i int) string { return fmt.Sprintf("p-%02d", i) }
	create := func(from, to int) {
		for i := from; i < to; i++ {
			env.CreatePod(t, testutil.MakePod(ns, podName(i)).Placement().Obj())
		}
	}
	const total = 30

	// 0-4: scheduled by the leader, events recorded.
	create(0, 5)
	for i := range 5 {
		env.WaitForBound(t, ns, podName(i))
		env.WaitForEvent(t, ns, podName(i), "Scheduled", "Successfully assigned")
	}
	// 5-9, then the kill right away: the leader dies with some of them in
	// flight; 10-19 arrive while the lease is still the dead leader's.
	create(5, 10)
	leader.Kill()
	killed := time.Now()
	create(10, 20)
	if got := podsBound(t, ns); got > 10 {
		t.Errorf("%d pods bound while the lease was still held by the killed leader, want at most 10", got)
	}
	// The survivor is the only process left: a new holder is its take-over.
	env.WaitForLeaseHolder(t, firstHolder)
	t.Logf("the standby took over %v after the kill (lease duration 6s)", time.Since(killed).Round(100*time.Millisecond))
	// 20-29: after the take-over.
	create(20, total)
	for i := range total {
		env.WaitForBound(t, ns, podName(i))
	}

	// Exactly once: count each pod's "Successfully bound" across both logs.
	// Pods 10-29 were created after the kill, so the survivor bound them;
	// 5-9 were in flight: bound once by either (or by the leader's last
	// binding call, which the apiserver completed but the kill kept out of
	// its log).
	bound := func(p *framework.Scheduler) map[string]int {
		n := map[string]int{}
		for _, m := range regexp.MustCompile(`"Successfully bound pod to node" pod="`+regexp.QuoteMeta(ns)+`/([^"]+)"`).FindAllStringSubmatch(p.Log(), -1) {
			n[m[1]]++
		}
		return n
	}
	byLeader, bySurvivor := bound(leader), bound(standby)
	for i := range total {
		p := podName(i)
		switch l, s := byLeader[p], bySurvivor[p]; {
		case l+s > 1:
			t.Errorf("%s bound %d times by the leader and %d by the survivor", p, l, s)
		case i < 5 && l != 1, i >= 10 && s != 1:
			t.Errorf("%s bound %d times by the leader and %d by the survivor, want once by the %s", p, l, s, map[bool]string{true: "leader", false: "survivor"}[i < 5])
		case l+s == 0:
			t.Logf("%s: bound by the leader's last binding call as it was killed", p)
		}
	}
	// The survivor did nothing before it led.
	slog := standby.Log()
	if first, acquired := strings.Index(slog, "Successfully bound pod"), strings.Index(slog, "Successfully acquired lease"); first >= 0 && first < acquired {
		t.Error("the standby bound a pod before it acquired the lease")
	}

	// Events agree: exactly one Scheduled for every pod the survivor bound
	// and for 0-4, at most one for the rest (a killed leader's last events
	// may never be sent), and no FailedScheduling, e.g. a survivor's binding
	// the apiserver rejected as already bound.
	env.Poll(t, "the survivor's Scheduled events", func(context.Context) (bool, error) {
		ev := eventsByPod(t, ns)
		for i := range total {
			if p := podName(i); bySurvivor[p] == 1 && ev[p]["Scheduled"] == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	events := eventsByPod(t, ns)
	for i := range total {
		p := podName(i)
		got := events[p]
		if got["Scheduled"] > 1 || got["FailedScheduling"] > 0 {
			t.Errorf("%s events %v, want at most one Scheduled and no FailedScheduling", p, got)
		}
	}

	// Never the default scheduler's lease.
	if _, err := env.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-system/kube-scheduler lease: err=%v, want NotFound", err)
	}
	if standby.Exited() {
		t.Errorf("the survivor exited: %v", standby.Err())
	}
	for _, r := range replicas {
		if lines := forbiddenLines(r.Log()); len(lines) > 0 {
			t.Errorf("a replica was refused something:\n%s", strings.Join(lines, "\n"))
		}
	}
}

// whichLeads tells which of two replicas holds the lease. The Lease names
// its holder as <hostname>_<uuid>, the same hostname for both processes
// here, so only the process itself can say it is the one: its log.
func whichLeads(t *testing.T, procs []*framework.Scheduler) (leader, other *framework.Scheduler) {
	t.Helper()
	env.Poll(t, "a replica to report leading", func(context.Context) (bool, error) {
		for i, p := range procs {
			if strings.Contains(p.Log(), "Successfully acquired lease") {
				leader, other = p, procs[1-i]
				return true, nil
			}
		}
		return false, nil
	})
	return leader, other
}

// waitForLeadership waits until the lease has a holder, and fails at once,
// naming what was refused, if the apiserver turns p away: with RBAC too
// short the scheduler never gets to lead (its caches do not sync, or it
// cannot read the lease).
func waitForLeadership(t *testing.T, p *framework.Scheduler) {
	t.Helper()
	env.Poll(t, fmt.Sprintf("lease %s/%s to have a holder", framework.Namespace, framework.Name), func(context.Context) (bool, error) {
		if refused := forbiddenLines(p.Log()); len(refused) > 0 {
			return false, fmt.Errorf("refused:\n%s\nlog tail:\n%s", strings.Join(refused, "\n"), p.LogTail(20))
		}
		return env.LeaseHolder(t) != "", nil
	})
}

func podsBound(t *testing.T, ns string) int {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// eventsByPod counts events by pod and reason in ns.
func eventsByPod(t *testing.T, ns string) map[string]map[string]int {
	t.Helper()
	list, err := env.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "Pod" {
			continue
		}
		if out[e.InvolvedObject.Name] == nil {
			out[e.InvolvedObject.Name] = map[string]int{}
		}
		out[e.InvolvedObject.Name][e.Reason] += max(1, int(e.Count))
	}
	return out
}

// An upgrade is `kubectl apply -k` of the new manifests, pruning our
// ConfigMaps (docs/install.md's command): a changed config gets a new ConfigMap
// name, so the Deployment's pod template changes and the replicas roll; the
// previous ConfigMap is pruned; nothing else is touched.
func TestUpgradeRollsTheConfigAndPrunesTheOld(t *testing.T) {
	ctx := context.Background()
	in := env.InstallManifests(t)

	next := framework.WriteManifests(t)
	configPath := filepath.Join(next, "scheduler-config.yaml")
	b, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "hardPodAffinityWeight: 1\n", "hardPodAffinityWeight: 5\n", 1)
	if changed == string(b) {
		t.Fatal("scheduler-config.yaml no longer sets hardPodAffinityWeight: 1; pick another change for this test")
	}
	if err := os.WriteFile(configPath, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	env.MustKubectl(t, "apply", "-k", next, "--prune", "-l", partOf, "--prune-allowlist=core/v1/ConfigMap")

	d, err := env.Client.AppsV1().Deployments(framework.Namespace).Get(ctx, framework.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newCM, key, _, err := framework.SchedulerContainer(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.CoreV1().ConfigMaps(framework.Namespace).Delete(ctx, newCM, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", newCM, err)
		}
	})
	if newCM == in.ConfigMap {
		t.Fatalf("the Deployment still references %s after a config change: the pods would not roll", newCM)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(framework.Namespace).Get(ctx, newCM, metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data[key], "hardPodAffinityWeight: 5") {
		t.Errorf("new ConfigMap %s: %v, want the changed config", newCM, err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(framework.Namespace).Get(ctx, in.ConfigMap, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("previous ConfigMap %s: err=%v, want it pruned", in.ConfigMap, err)
	}
	for _, o := range in.Objects {
		if o.GetKind() == "ConfigMap" {
			continue
		}
		got, err := env.Resource(t, o).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil || got.GetDeletionTimestamp() != nil {
			t.Errorf("%s after the upgrade: err=%v deleting=%v, want it kept", framework.ObjectKey(o), err, got != nil && got.GetDeletionTimestamp() != nil)
		}
	}
}
