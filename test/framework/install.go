package framework

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// Kubectl runs the assets directory's kubectl (built by `make controlplane`)
// as admin against the control plane.
func (e *Env) Kubectl(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := e.toolPath("kubectl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make controlplane`", bin)
	}
	var out, errOut strings.Builder
	cmd := exec.Command(bin, append([]string{"--kubeconfig", e.Kubeconfig, "--cache-dir", filepath.Join(e.dir, "kubectl-cache")}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// MustKubectl runs kubectl and fails the test if it fails or prints a
// warning (e.g. Pod Security), except the one about the placement-scheduler
// namespace lacking kubectl's last-applied annotation: Start created it
// without kubectl. It returns stdout.
func (e *Env) MustKubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, errOut, err := e.Kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	startedNS := "Warning: resource namespaces/" + Namespace + " is missing the kubectl.kubernetes.io/last-applied-configuration annotation"
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if line != "" && !strings.HasPrefix(line, startedNS) {
			t.Errorf("kubectl %s printed: %s", strings.Join(args, " "), line)
		}
	}
	return out
}

// WriteManifests writes the shipped manifests (the kustomize base, the older
// lines' overlays and examples/) into a fresh directory of the test's and
// returns the folder that installs this build's line (manifests.Base()),
// for `kubectl apply -k` or for a test to edit first.
func WriteManifests(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.CopyFS(dir, manifests.Files()); err != nil {
		t.Fatalf("writing the manifests: %v", err)
	}
	return filepath.Join(dir, manifests.Base())
}

// renderManifests is `kubectl kustomize dir`, decoded.
func (e *Env) renderManifests(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, errOut, err := e.Kubectl(t, "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, errOut)
	}
	objs, err := DecodeObjects([]byte(out))
	if err != nil {
		t.Fatalf("decoding kustomize output: %v", err)
	}
	return objs
}

// Installation is an install of placement-scheduler: the shipped manifests
// applied with `kubectl apply -k`, or the Helm chart installed.
type Installation struct {
	// Dir is the kustomize base that was applied, or the chart.
	Dir string
	// Objects are the objects as kustomize or helm rendered them.
	Objects []*unstructured.Unstructured
	// Deployment is the Deployment as the apiserver stored it.
	Deployment *appsv1.Deployment
	// ConfigMap is the name of the generated (hashed) config ConfigMap.
	ConfigMap string
	// Config is its KubeSchedulerConfiguration, read back from the apiserver.
	Config []byte
	// Args are the scheduler container's args other than --config.
	Args []string
}

// SchedulerArgs are the Deployment's args for SchedulerOptions.Args, plus
// extra. The framework supplies --config (the ConfigMap's content, pointed
// at the test's credentials), the port and the bind address. "--cert-dir="
// undoes the framework's cert dir: like the Deployment (read-only root
// filesystem, no writable volume), the process serves a self-signed
// certificate generated in memory.
func (in *Installation) SchedulerArgs(extra ...string) []string {
	return append(append(slices.Clone(in.Args), "--cert-dir="), extra...)
}

// InstallManifests runs `kubectl apply -k` on the shipped manifests as a
// cluster admin would, and fails on any warning (MustKubectl). When the test
// ends it removes what the apply created, restores what existed before (the
// placement-scheduler namespace's labels) and deletes the lease if the
// test's schedulers created it. The namespace itself stays: envtest has no
// namespace controller to finish deleting it.
func (e *Env) InstallManifests(t testing.TB) *Installation {
	t.Helper()
	ctx := context.Background()
	dir := WriteManifests(t)
	objs := e.renderManifests(t, dir)

	before := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		got, err := e.Resource(t, o).Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			before[ObjectKey(o)] = got
		case !apierrors.IsNotFound(err):
			t.Fatalf("reading %s: %v", ObjectKey(o), err)
		}
	}
	e.removeLeaseAtEnd(t)
	t.Cleanup(func() {
		for _, o := range slices.Backward(objs) {
			if old, ok := before[ObjectKey(o)]; ok {
				e.restoreMetadata(t, o, old)
				continue
			}
			err := e.Resource(t, o).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", ObjectKey(o), err)
			}
		}
	})

	e.MustKubectl(t, "apply", "-k", dir)
	return e.readInstallation(t, dir, objs)
}

// removeLeaseAtEnd deletes the lease when the test ends unless it exists
// now: then the test's schedulers created it.
func (e *Env) removeLeaseAtEnd(t testing.TB) {
	t.Helper()
	leases := e.Client.CoordinationV1().Leases(Namespace)
	if _, err := leases.Get(context.Background(), Name, metav1.GetOptions{}); err == nil {
		return
	}
	t.Cleanup(func() {
		if err := leases.Delete(context.Background(), Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting lease: %v", err)
		}
	})
}

// readInstallation reads back what an install stored: the Deployment, and
// the config and args it runs the scheduler with.
func (e *Env) readInstallation(t testing.TB, dir string, objs []*unstructured.Unstructured) *Installation {
	t.Helper()
	ctx := context.Background()
	in := &Installation{Dir: dir, Objects: objs}
	var err error
	in.Deployment, err = e.Client.AppsV1().Deployments(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the installed Deployment: %v", err)
	}
	var key string
	in.ConfigMap, key, in.Args, err = SchedulerContainer(in.Deployment)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := e.Client.CoreV1().ConfigMaps(Namespace).Get(ctx, in.ConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment's ConfigMap: %v", err)
	}
	if _, ok := cm.Data[key]; !ok {
		t.Fatalf("ConfigMap %s has no key %q (the file --config names); keys: %v", cm.Name, key, slices.Sorted(maps.Keys(cm.Data)))
	}
	in.Config = []byte(cm.Data[key])
	return in
}

// restoreMetadata puts back the labels and annotations obj had before the
// test applied over it.
func (e *Env) restoreMetadata(t testing.TB, obj, old *unstructured.Unstructured) {
	t.Helper()
	ri := e.Resource(t, obj)
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
		t.Errorf("restoring %s: %v", ObjectKey(obj), err)
	}
}

// SchedulerContainer follows the Deployment's wiring: the --config file's
// directory is a volume mount of a ConfigMap, the file its key. It returns
// that ConfigMap's name, the key and the container's other args.
func SchedulerContainer(d *appsv1.Deployment) (configMap, key string, args []string, err error) {
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		return "", "", nil, fmt.Errorf("deployment has %d containers, want 1", len(spec.Containers))
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
		return "", "", nil, fmt.Errorf("container %q: command %q args %q: want the image's entrypoint with --config=<file>", c.Name, c.Command, c.Args)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath != filepath.Dir(configPath) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && len(v.ConfigMap.Items) == 0 {
				return v.ConfigMap.Name, filepath.Base(configPath), args, nil
			}
		}
	}
	return "", "", nil, fmt.Errorf("--config=%s is not in a mounted ConfigMap (mounts %+v, volumes %+v)", configPath, c.VolumeMounts, spec.Volumes)
}
