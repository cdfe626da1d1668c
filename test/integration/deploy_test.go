package integration

// manifests/ as an install: `kubectl apply -k` against the real apiserver,
// the real binary running with the ServiceAccount's own token and the
// ConfigMap's config and the Deployment's args, two replicas failing over,
// and an upgrade.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// What manifests/ installs, by name.
const (
	installNS   = "placement-scheduler" // namespace, and the lease's
	installName = "placement-scheduler" // ServiceAccount, Deployment, lease
	partOf      = "app.kubernetes.io/part-of=placement-scheduler"
)

func manifestsDir() string { return filepath.Join(env.repoRoot, "manifests") }

// installation is manifests/ applied with `kubectl apply -k`.
type installation struct {
	objects    []*unstructured.Unstructured // as kustomize rendered them
	deployment *appsv1.Deployment           // as the apiserver stored it
	configMap  string                       // the generated ConfigMap (hashed name)
	config     []byte                       // its KubeSchedulerConfiguration, read back from the apiserver
	args       []string                     // the scheduler container's args other than --config
}

// schedulerArgs are the Deployment's args for startSchedulerAs. The harness
// supplies --config (the ConfigMap's content, pointed at the test's
// credentials), the port and the bind address. "--cert-dir=" undoes the
// harness's cert dir: like the Deployment (read-only root filesystem, no
// writable volume), the process serves a self-signed certificate generated
// in memory.
func (in *installation) schedulerArgs(extra ...string) []string {
	return append(append(slices.Clone(in.args), "--cert-dir="), extra...)
}

// apiClients are the dynamic client and REST mapper for rendered objects.
var apiClients = sync.OnceValues(func() (dynamic.Interface, *restmapper.DeferredDiscoveryRESTMapper) {
	dyn := dynamic.NewForConfigOrDie(env.cp.Config)
	disc := discovery.NewDiscoveryClientForConfigOrDie(env.cp.Config)
	return dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
})

func resourceFor(t testing.TB, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	dyn, mapper := apiClients()
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("mapping %s: %v", gvk, err)
	}
	if ns := obj.GetNamespace(); ns != "" {
		return dyn.Resource(m.Resource).Namespace(ns)
	}
	return dyn.Resource(m.Resource)
}

func objKey(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// renderManifests is `kubectl kustomize dir`, decoded.
func renderManifests(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, errOut, err := kubectl(t, "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, errOut)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding kustomize output: %v", err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs
}

// installManifests runs `kubectl apply -k manifests/` as a cluster admin
// would, and fails on any warning (e.g. Pod Security) other than the one
// about the placement-scheduler namespace, which TestMain created without
// kubectl. When the test ends it removes what the apply created, restores
// what existed before (that namespace's labels) and deletes the lease if the
// test's schedulers created it. The namespace itself stays: envtest has no
// namespace controller to finish deleting it.
func installManifests(t *testing.T) *installation {
	t.Helper()
	ctx := context.Background()
	objs := renderManifests(t, manifestsDir())

	before := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		got, err := resourceFor(t, o).Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			before[objKey(o)] = got
		case !apierrors.IsNotFound(err):
			t.Fatalf("reading %s: %v", objKey(o), err)
		}
	}
	leases := env.client.CoordinationV1().Leases(installNS)
	_, err := leases.Get(ctx, installName, metav1.GetOptions{})
	leaseExisted := err == nil
	t.Cleanup(func() {
		for _, o := range slices.Backward(objs) {
			if old, ok := before[objKey(o)]; ok {
				restoreMetadata(t, o, old)
				continue
			}
			err := resourceFor(t, o).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", objKey(o), err)
			}
		}
		if !leaseExisted {
			if err := leases.Delete(ctx, installName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting lease: %v", err)
			}
		}
	})

	applyClean(t, "apply", "-k", manifestsDir())

	in := &installation{objects: objs}
	in.deployment, err = env.client.AppsV1().Deployments(installNS).Get(ctx, installName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the applied Deployment: %v", err)
	}
	var key string
	in.configMap, key, in.args = schedulerContainer(t, in.deployment)
	cm, err := env.client.CoreV1().ConfigMaps(installNS).Get(ctx, in.configMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment's ConfigMap: %v", err)
	}
	if _, ok := cm.Data[key]; !ok {
		t.Fatalf("ConfigMap %s has no key %q (the file --config names); keys: %v", cm.Name, key, slices.Sorted(maps.Keys(cm.Data)))
	}
	in.config = []byte(cm.Data[key])
	return in
}

// lastApplied is the only warning an apply may print here, and only for the
// namespace TestMain made.
var lastApplied = regexp.MustCompile(`^Warning: resource namespaces/placement-scheduler is missing the kubectl.kubernetes.io/last-applied-configuration annotation`)

// applyClean runs kubectl with args, and fails if it fails or warns.
func applyClean(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if line != "" && !lastApplied.MatchString(line) {
			t.Errorf("kubectl %s printed: %s", strings.Join(args, " "), line)
		}
	}
	return out
}

// restoreMetadata puts back the labels and annotations obj had before the
// test applied over it.
func restoreMetadata(t testing.TB, obj, old *unstructured.Unstructured) {
	t.Helper()
	ri := resourceFor(t, obj)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(context.Background(), obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.SetLabels(old.GetLabels())
		cur.SetAnnotations(old.GetAnnotations())
		_, err = ri.Update(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Errorf("restoring %s: %v", objKey(obj), err)
	}
}

// schedulerContainer follows the Deployment's wiring: the --config file's
// directory is a volume mount of a ConfigMap, the file its key.
func schedulerContainer(t testing.TB, d *appsv1.Deployment) (configMap, key string, args []string) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	var configPath string
	for _, a := range c.Args {
		if p, ok := strings.CutPrefix(a, "--config="); ok {
			configPath = p
			continue
		}
		args = append(args, a)
	}
	if configPath == "" || len(c.Command) != 0 {
		t.Fatalf("container %q: command %q args %q: want the image's entrypoint with --config=<file>", c.Name, c.Command, c.Args)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath != filepath.Dir(configPath) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && len(v.ConfigMap.Items) == 0 {
				return v.ConfigMap.Name, filepath.Base(configPath), args
			}
		}
	}
	t.Fatalf("--config=%s is not in a mounted ConfigMap (mounts %+v, volumes %+v)", configPath, c.VolumeMounts, spec.Volumes)
	return "", "", nil
}

// `kubectl apply -k manifests/` installs a complete second scheduler on a
// real apiserver: every object accepted, the config identical to the shipped
// file, a pod template that the "restricted" Pod Security level admits,
// re-applying changes nothing, and `kubectl delete -k` would remove it all.
func TestManifestsInstallOnARealAPIServer(t *testing.T) {
	ctx := context.Background()
	in := installManifests(t)

	kinds := map[string]int{}
	for _, o := range in.objects {
		if _, err := resourceFor(t, o).Get(ctx, o.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("%s after apply: %v", objKey(o), err)
		}
		kinds[o.GetKind()]++
	}
	want := map[string]int{
		"Namespace": 1, "ServiceAccount": 1, "ConfigMap": 1, "Deployment": 1, "Service": 1, "PodDisruptionBudget": 1,
		"ClusterRoleBinding": 2, "Role": 1, "RoleBinding": 2, "ClusterRole": 1,
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("installed kinds (-want +got):\n%s", diff)
	}

	// One source of truth: the ConfigMap is the shipped file, byte for byte,
	// and its generated name carries a content hash, so changing the config
	// changes the pod template and rolls the replicas.
	if !bytes.Equal(in.config, shippedConfig(t)) {
		t.Errorf("ConfigMap %s differs from manifests/scheduler-config.yaml", in.configMap)
	}
	if !regexp.MustCompile(`^placement-scheduler-config-[a-z0-9]{10}$`).MatchString(in.configMap) {
		t.Errorf("ConfigMap name %q: want the generated, hashed one", in.configMap)
	}

	d := in.deployment
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	check := func(what string, got, want any) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Deployment %s (-want +got):\n%s", what, diff)
		}
	}
	check("replicas", d.Spec.Replicas, ptr.To[int32](2))
	check("serviceAccountName", pod.ServiceAccountName, installName)
	check("schedulerName (placed by the default scheduler)", pod.SchedulerName, v1.DefaultSchedulerName)
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
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: installNS, GenerateName: "template-", Labels: d.Spec.Template.Labels}}
		p.Spec = *d.Spec.Template.Spec.DeepCopy()
		if mutate != nil {
			mutate(&p.Spec)
		}
		return p
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := env.client.CoreV1().Pods(installNS).Create(ctx, tmpl(nil), dryRun); err != nil {
		t.Errorf("the Deployment's pod is not admitted: %v", err)
	}
	_, err := env.client.CoreV1().Pods(installNS).Create(ctx, tmpl(func(s *v1.PodSpec) {
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
		for _, o := range in.objects {
			got, err := resourceFor(t, o).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", objKey(o), err)
			}
			rv[objKey(o)] = got.GetResourceVersion()
		}
		return rv
	}
	first := versions()
	applyClean(t, "apply", "-k", manifestsDir())
	if diff := cmp.Diff(first, versions()); diff != "" {
		t.Errorf("re-applying rewrote objects (resourceVersions -before +after):\n%s", diff)
	}

	// Uninstall resolves every object (dry run: envtest cannot finish
	// deleting a namespace).
	out := applyClean(t, "delete", "-k", manifestsDir(), "--dry-run=server")
	if n := strings.Count(out, " (server dry run)\n"); n != len(in.objects) {
		t.Errorf("kubectl delete -k would delete %d objects, want %d:\n%s", n, len(in.objects), out)
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
	withoutSharedScheduler(t)
	in := installManifests(t)
	sched := startSchedulerAs(t, serviceAccountKubeconfig(t, installNS, installName), in.config, in.schedulerArgs()...)
	waitForLeadership(t, sched)

	ns := newNamespace(t, nil)
	volumeNode := schedulableNode(ns, "b").Label("placement-test/volume", ns).Obj()
	deviceNode := schedulableNode(ns, "c").Obj()
	createNodes(t, schedulableNode(ns, "a").Obj(), volumeNode, deviceNode)

	// A WaitForFirstConsumer local volume that only volumeNode can reach.
	class := testutil.MakeWaitForFirstConsumerClass(ns + "-local")
	pv := testutil.MakeLocalPV(ns+"-pv", class.Name, "1Gi", testutil.Term(testutil.Expr("placement-test/volume", v1.NodeSelectorOpIn, ns)))
	pvc := testutil.MakePVC(ns, "data", class.Name, "1Gi")
	// A DRA device that only deviceNode has.
	driver := "gpu.placement-test.example.com"
	deviceClass := testutil.MakeDeviceClass(ns+"-gpu", driver)
	slice := testutil.MakeNodeResourceSlice(ns+"-"+deviceNode.Name, driver, deviceNode.Name, "gpu-0")
	claim := testutil.MakeResourceClaim(ns, "gpu", deviceClass.Name)
	createOwned(t, class, pv, pvc, deviceClass, slice, claim)
	setPVPhase(t, pv.Name, v1.VolumeAvailable) // the PV controller's first step

	createPod(t, placementPod(ns, "plain").Obj())
	createPod(t, placementPod(ns, "with-volume").PVC("data", "data").Obj())
	createPod(t, placementPod(ns, "with-device").ResourceClaim("gpu", "gpu").Obj())

	// Stand in for the PV controller: once the scheduler has claimed the PV
	// for the PVC (PreBind), finish the binding; the scheduler then binds the pod.
	var claimed *v1.PersistentVolume
	err := wait.PollUntilContextTimeout(ctx, pollInterval, scheduleWait, true, func(ctx context.Context) (bool, error) {
		got, err := env.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		claimed = got
		return err == nil && got.Spec.ClaimRef != nil, nil
	})
	if err != nil {
		t.Fatalf("the scheduler never claimed PV %s for %s/data: %v\nlog tail:\n%s", pv.Name, ns, err, sched.logTail(40))
	}
	if ref := claimed.Spec.ClaimRef; ref.Namespace != ns || ref.Name != "data" {
		t.Fatalf("PV claimed for %s/%s, want %s/data", ref.Namespace, ref.Name, ns)
	}
	bindPVC(t, ns, "data", pv.Name)

	if got := waitForBound(t, ns, "plain"); !strings.HasPrefix(got, ns+"-") {
		t.Errorf("plain bound to %q, not one of this test's nodes", got)
	}
	if got := waitForBound(t, ns, "with-volume"); got != volumeNode.Name {
		t.Errorf("with-volume bound to %q, want %q (the only node its volume reaches)", got, volumeNode.Name)
	}
	if got := waitForBound(t, ns, "with-device"); got != deviceNode.Name {
		t.Errorf("with-device bound to %q, want %q (the only node with the device)", got, deviceNode.Name)
	}
	for _, p := range []string{"plain", "with-volume", "with-device"} {
		// reportingComponent is what the README tells operators to look for.
		if e := waitForEvent(t, ns, p, "Scheduled", "Successfully assigned"); e.ReportingController != schedulerName {
			t.Errorf("%s: Scheduled event reported by %q, want %q", p, e.ReportingController, schedulerName)
		}
	}
	gotClaim, err := env.client.ResourceV1().ResourceClaims(ns).Get(ctx, "gpu", metav1.GetOptions{})
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
	createNodes(t, small)
	high := testutil.MakePriorityClass(ns+"-high", 1000)
	createOwned(t, high)
	onSmall := map[string]string{v1.LabelHostname: small.Name}
	createPod(t, placementPod(ns, "victim").NodeSelector(onSmall).Request("800m", "1Gi").Obj())
	waitForBound(t, ns, "victim")
	createPod(t, placementPod(ns, "preemptor").NodeSelector(onSmall).Request("800m", "1Gi").PriorityClassName(high.Name).Obj())
	waitForPod(t, ns, "preemptor", "nominatedNodeName", func(p *v1.Pod) bool { return p.Status.NominatedNodeName == small.Name })
	victim := waitForPod(t, ns, "victim", "deletion", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	if c := podCondition(victim, v1.DisruptionTarget); c == nil || c.Reason != v1.PodReasonPreemptionByScheduler {
		t.Errorf("victim's DisruptionTarget condition %+v, want reason %s", c, v1.PodReasonPreemptionByScheduler)
	}
	waitForEvent(t, ns, "victim", "Preempted", "Preempted by pod")

	// Our lease, with a holder.
	l, err := env.client.CoordinationV1().Leases(installNS).Get(ctx, installName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Errorf("lease %s/%s: %v %+v, want a holder", installNS, installName, err, l)
	}

	// kubelet's probes need no credentials; /metrics needs GET on it, which
	// the scheduler checks with the apiserver (TokenReview,
	// SubjectAccessReview) using its own ServiceAccount.
	sched.waitForGet(t, "/healthz", "", 200)
	sched.waitForGet(t, "/readyz", "", 200)
	if code, err := sched.get("/metrics", ""); err != nil || code != 403 {
		t.Errorf("anonymous GET /metrics: %d %v, want 403", code, err)
	}
	scraper := metricsScraper(t, ns)
	sched.waitForGet(t, "/metrics", scraper, 200)

	if lines := forbiddenLines(sched.log()); len(lines) > 0 {
		t.Errorf("the scheduler was refused something with the installed RBAC:\n%s", strings.Join(lines, "\n"))
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
	createOwned(t, sa, crb)
	return serviceAccountToken(t, ns, sa.Name)
}

// bindPVC does what the PV controller does once a PV is claimed: point the
// claim at the volume, mark the bind complete, and both Bound.
func bindPVC(t *testing.T, ns, name, pvName string) {
	t.Helper()
	ctx := context.Background()
	pvcs := env.client.CoreV1().PersistentVolumeClaims(ns)
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
		v, err := env.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		v.Status.Phase = phase
		_, err = env.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, v, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("marking PV %s %s: %v", name, phase, err)
	}
}

// createOwned creates typed objects through the dynamic client and, when the
// test ends, deletes them, first clearing finalizers that no controller here
// would ever remove (pvc-protection, pv-protection, a claim's
// delete-protection).
func createOwned(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		u.SetGroupVersionKind(gvks[0])
		ri := resourceFor(t, u)
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", objKey(u), err)
		}
		t.Cleanup(func() {
			_, err := ri.Patch(ctx, u.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clearing finalizers of %s: %v", objKey(u), err)
			}
			if err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", objKey(u), err)
			}
		})
	}
}

// Two replicas of the installed scheduler, as the Deployment runs them: one
// leads on our lease (never kube-system/kube-scheduler) while the other waits
// ready; when the leader is SIGKILLed in the middle of a stream of pod
// creations (no lease release, as on a node failure) the other takes over
// once the lease expires, and every pod ends bound, by exactly one replica.
func TestReplicasFailOverWithoutLosingOrDoublingPods(t *testing.T) {
	ctx := context.Background()
	withoutSharedScheduler(t)
	in := installManifests(t)
	kubeconfig := serviceAccountKubeconfig(t, installNS, installName)
	// Shorter than the defaults (15s/10s/2s) so the hand-over after a crash
	// takes seconds; the lease is still the configured one.
	args := in.schedulerArgs("--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s")
	replicas := []*schedulerProc{
		startSchedulerAs(t, kubeconfig, in.config, args...),
		startSchedulerAs(t, kubeconfig, in.config, args...),
	}
	leader, standby := waitForLeader(t, replicas)
	firstHolder := leaseHolder(t)
	// Both Ready: /readyz does not need the lease, so a rolling update
	// (maxUnavailable 0) can bring a new replica up beside the leader.
	for _, r := range replicas {
		r.waitForGet(t, "/readyz", "", 200)
	}
	if strings.Contains(standby.log(), "Successfully acquired lease") {
		t.Fatal("both replicas acquired the lease")
	}

	ns := newNamespace(t, nil)
	createNodes(t, schedulableNode(ns, "a").Obj(), schedulableNode(ns, "b").Obj())
	podName := func(i int) string { return fmt.Sprintf("p-%02d", i) }
	create := func(from, to int) {
		for i := from; i < to; i++ {
			createPod(t, placementPod(ns, podName(i)).Obj())
		}
	}
	const total = 30

	// 0-4: scheduled by the leader, events recorded.
	create(0, 5)
	for i := range 5 {
		waitForBound(t, ns, podName(i))
		waitForEvent(t, ns, podName(i), "Scheduled", "Successfully assigned")
	}
	// 5-9, then the kill right away: the leader dies with some of them in
	// flight; 10-19 arrive while the lease is still the dead leader's.
	create(5, 10)
	leader.kill()
	killed := time.Now()
	create(10, 20)
	if got := podsBound(t, ns); got > 10 {
		t.Errorf("%d pods bound while the lease was still held by the killed leader, want at most 10", got)
	}
	waitForLog(t, standby, "Successfully acquired lease")
	t.Logf("the standby took over %v after the kill (lease duration 6s)", time.Since(killed).Round(100*time.Millisecond))
	if h := leaseHolder(t); h == firstHolder {
		t.Fatalf("standby reports leading but the lease is still %q's", h)
	}
	// 20-29: after the take-over.
	create(20, total)
	for i := range total {
		waitForBound(t, ns, podName(i))
	}

	// Exactly once: count each pod's "Successfully bound" across both logs.
	// Pods 10-29 were created after the kill, so the survivor bound them;
	// 5-9 were in flight: bound once by either (or by the leader's last
	// binding call, which the apiserver completed but the kill kept out of
	// its log).
	bound := func(p *schedulerProc) map[string]int {
		n := map[string]int{}
		for _, m := range regexp.MustCompile(`"Successfully bound pod to node" pod="`+regexp.QuoteMeta(ns)+`/([^"]+)"`).FindAllStringSubmatch(p.log(), -1) {
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
	slog := standby.log()
	if first, acquired := strings.Index(slog, "Successfully bound pod"), strings.Index(slog, "Successfully acquired lease"); first >= 0 && first < acquired {
		t.Error("the standby bound a pod before it acquired the lease")
	}

	// Events agree: exactly one Scheduled for every pod the survivor bound
	// and for 0-4, at most one for the rest (a killed leader's last events
	// may never be sent), and no FailedScheduling, e.g. a survivor's binding
	// the apiserver rejected as already bound.
	err := wait.PollUntilContextTimeout(ctx, pollInterval, scheduleWait, true, func(ctx context.Context) (bool, error) {
		ev := eventsByPod(t, ns)
		for i := range total {
			if p := podName(i); bySurvivor[p] == 1 && ev[p]["Scheduled"] == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("waiting for the survivor's Scheduled events: %v", err)
	}
	events := eventsByPod(t, ns)
	for i := range total {
		p := podName(i)
		got := events[p]
		if got["Scheduled"] > 1 || got["FailedScheduling"] > 0 {
			t.Errorf("%s events %v, want at most one Scheduled and no FailedScheduling", p, got)
		}
	}

	// Never the default scheduler's lease.
	if _, err := env.client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-system/kube-scheduler lease: err=%v, want NotFound", err)
	}
	if standby.exited() {
		t.Errorf("the survivor exited: %v", standby.waitErr)
	}
	for _, r := range replicas {
		if lines := forbiddenLines(r.log()); len(lines) > 0 {
			t.Errorf("a replica was refused something:\n%s", strings.Join(lines, "\n"))
		}
	}
}

// waitForLeader waits until one of procs has acquired the lease and returns
// it and the other.
func waitForLeader(t *testing.T, procs []*schedulerProc) (leader, other *schedulerProc) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, scheduleWait, true, func(context.Context) (bool, error) {
		for i, p := range procs {
			if strings.Contains(p.log(), "Successfully acquired lease") {
				leader, other = p, procs[1-i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no replica acquired the lease: %v", err)
	}
	if !strings.Contains(leader.log(), `lock="placement-scheduler/placement-scheduler"`) {
		t.Errorf("the leader did not lead on placement-scheduler/placement-scheduler:\n%s", leader.logTail(20))
	}
	return leader, other
}

// waitForLeadership waits until p leads, and fails at once, naming what was
// refused, if the apiserver turns it away: with RBAC too short the scheduler
// never gets to lead (its caches do not sync, or it cannot read the lease).
func waitForLeadership(t *testing.T, p *schedulerProc) {
	t.Helper()
	var refused []string
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, scheduleWait, true, func(context.Context) (bool, error) {
		log := p.log()
		if refused = forbiddenLines(log); len(refused) > 0 {
			return false, errors.New("refused")
		}
		return strings.Contains(log, "Successfully acquired lease"), nil
	})
	if err != nil {
		t.Fatalf("the scheduler did not lead (%v); refused:\n%s\nlog tail:\n%s", err, strings.Join(refused, "\n"), p.logTail(20))
	}
}

func waitForLog(t *testing.T, p *schedulerProc, substr string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, scheduleWait, true, func(context.Context) (bool, error) {
		return strings.Contains(p.log(), substr), nil
	})
	if err != nil {
		t.Fatalf("%q never logged: %v\nlog tail:\n%s", substr, err, p.logTail(30))
	}
}

func leaseHolder(t *testing.T) string {
	t.Helper()
	l, err := env.client.CoordinationV1().Leases(installNS).Get(context.Background(), installName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading our lease: %v", err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func podsBound(t *testing.T, ns string) int {
	t.Helper()
	list, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
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
	list, err := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
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
// ConfigMaps (the README's command): a changed config gets a new ConfigMap
// name, so the Deployment's pod template changes and the replicas roll; the
// previous ConfigMap is pruned; nothing else is touched.
func TestUpgradeRollsTheConfigAndPrunesTheOld(t *testing.T) {
	ctx := context.Background()
	in := installManifests(t)

	next := t.TempDir()
	entries, err := os.ReadDir(manifestsDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(manifestsDir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "scheduler-config.yaml" {
			changed := strings.Replace(string(b), "hardPodAffinityWeight: 1\n", "hardPodAffinityWeight: 5\n", 1)
			if changed == string(b) {
				t.Fatal("scheduler-config.yaml no longer sets hardPodAffinityWeight: 1; pick another change for this test")
			}
			b = []byte(changed)
		}
		if err := os.WriteFile(filepath.Join(next, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	applyClean(t, "apply", "-k", next, "--prune", "-l", partOf, "--prune-allowlist=core/v1/ConfigMap")

	d, err := env.client.AppsV1().Deployments(installNS).Get(ctx, installName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newCM, key, _ := schedulerContainer(t, d)
	t.Cleanup(func() {
		if err := env.client.CoreV1().ConfigMaps(installNS).Delete(ctx, newCM, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", newCM, err)
		}
	})
	if newCM == in.configMap {
		t.Fatalf("the Deployment still references %s after a config change: the pods would not roll", newCM)
	}
	cm, err := env.client.CoreV1().ConfigMaps(installNS).Get(ctx, newCM, metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data[key], "hardPodAffinityWeight: 5") {
		t.Errorf("new ConfigMap %s: %v, want the changed config", newCM, err)
	}
	if _, err := env.client.CoreV1().ConfigMaps(installNS).Get(ctx, in.configMap, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("previous ConfigMap %s: err=%v, want it pruned", in.configMap, err)
	}
	for _, o := range in.objects {
		if o.GetKind() == "ConfigMap" {
			continue
		}
		got, err := resourceFor(t, o).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil || got.GetDeletionTimestamp() != nil {
			t.Errorf("%s after the upgrade: err=%v deleting=%v, want it kept", objKey(o), err, got != nil && got.GetDeletionTimestamp() != nil)
		}
	}
}
