// Package release checks the flat folder `make release` writes
// (docs/releasing.md), every Kubernetes line's artifacts in it: exactly the
// expected file names; the krew manifest against the newest line's archives
// and each archive's contents; installing the plugin from the manifest with
// krew itself and running it through kubectl; each line's plugin, image
// binaries and chart rendering naming that line; the image indexes'
// platforms and OCI metadata; the SBOMs and the signed checksums.
//
// It reads a release directory; `make test-release` (part of make test)
// makes a small one (this host's platforms, and the newest line's
// windows/amd64 archive) signed with a throwaway key, `make verify-release`
// points it at dist/. RELEASE_* (set by the Makefile) say what to expect.
// Both build krew from tools/krew, kubectl from go.mod and helm from
// tools/helm.
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"sigs.k8s.io/yaml"
)

// line is one Kubernetes line's share of the release.
type line struct {
	// minor is the line as K8S_LINES spells it (1.37); k8sVersion the
	// k8s.io/kubernetes release it builds against (v1.37.2).
	minor, k8sVersion string
	// plugins are the os/arch pairs of its kubectl-placement archives.
	plugins []string
}

// release is the directory under test and what it should hold.
type release struct {
	dist, version, pubKey string
	// bin holds kubectl, krew, validate-krew-manifest and helm.
	bin string
	// lines, oldest first.
	lines []line
	// images are the platforms (linux/<arch>) of every line's image index.
	images []string
}

const (
	imageRepo = "ghcr.io/placement-scheduler/placement-scheduler"
	source    = "https://github.com/placement-scheduler/placement-scheduler"
)

func load(t *testing.T) *release {
	t.Helper()
	dist := os.Getenv("RELEASE_DIST")
	if dist == "" {
		t.Skip("RELEASE_DIST is not set: run `make test-release`, or `make verify-release VERSION=...` after make release")
	}
	r := &release{
		dist:    dist,
		version: os.Getenv("RELEASE_VERSION"),
		pubKey:  os.Getenv("RELEASE_SIGNING_PUBKEY"),
		images:  strings.Fields(os.Getenv("RELEASE_IMAGE_PLATFORMS")),
	}
	k8sVersions := pairs(t, "RELEASE_K8S_VERSIONS")
	plugins := pairs(t, "RELEASE_PLUGIN_PLATFORMS")
	if r.version == "" || len(k8sVersions) == 0 || len(r.images) == 0 {
		t.Fatal("RELEASE_VERSION, RELEASE_K8S_VERSIONS, RELEASE_IMAGE_PLATFORMS and RELEASE_PLUGIN_PLATFORMS must be set with RELEASE_DIST (the Makefile sets them)")
	}
	for minor, k8sVersion := range k8sVersions {
		if !strings.HasPrefix(k8sVersion, "v"+minor+".") {
			t.Fatalf("RELEASE_K8S_VERSIONS: line %s builds against %s, not a %s release", minor, k8sVersion, minor)
		}
		if plugins[minor] == "" {
			t.Fatalf("RELEASE_PLUGIN_PLATFORMS names no platform for line %s", minor)
		}
		r.lines = append(r.lines, line{minor: minor, k8sVersion: k8sVersion, plugins: strings.Split(plugins[minor], ",")})
	}
	slices.SortFunc(r.lines, func(a, b line) int { return cmp.Compare(minorOf(t, a.minor), minorOf(t, b.minor)) })
	bin, err := filepath.Abs("../../bin")
	if err != nil {
		t.Fatal(err)
	}
	r.bin = bin
	return r
}

// pairs reads an env var of space-separated <line>=<value> pairs.
func pairs(t *testing.T, env string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range strings.Fields(os.Getenv(env)) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			t.Fatalf("%s: %q is not <line>=<value>", env, f)
		}
		out[k] = v
	}
	return out
}

func minorOf(t *testing.T, minor string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(minor, "1."))
	if err != nil || !strings.HasPrefix(minor, "1.") {
		t.Fatalf("line %q is not 1.<minor>", minor)
	}
	return n
}

// newest is the line krew installs.
func (r *release) newest() line { return r.lines[len(r.lines)-1] }

// tag is a line's image tag and the version in its file names.
func (r *release) tag(l line) string { return r.version + "-k8s" + l.minor }

func (r *release) archive(l line, osArch string) string {
	goos, goarch, _ := strings.Cut(osArch, "/")
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return filepath.Join(r.dist, "kubectl-placement_"+r.tag(l)+"_"+goos+"_"+goarch+ext)
}

func (r *release) imageIndex(l line) string {
	return filepath.Join(r.dist, "placement-scheduler-"+r.tag(l)+"-image-index.tar")
}

func (r *release) chart() string {
	return filepath.Join(r.dist, "placement-scheduler-"+strings.TrimPrefix(r.version, "v")+".tgz")
}

var binaries = []string{"placement-scheduler", "placement-enforcer", "kubectl-placement"}

func (r *release) sbom(l line, binary string) string {
	return filepath.Join(r.dist, binary+"_"+r.tag(l)+".sbom.cdx.json")
}

// TestLayout: the release is one flat folder holding exactly the agreed
// files for every line, nothing missing and nothing else.
func TestLayout(t *testing.T) {
	r := load(t)
	want := []string{r.chart(), r.manifestPath(), filepath.Join(r.dist, "SHA256SUMS")}
	if r.pubKey != "" {
		want = append(want, filepath.Join(r.dist, "SHA256SUMS.sig"))
	}
	for _, l := range r.lines {
		want = append(want, r.imageIndex(l), filepath.Join(r.dist, "placement-scheduler-"+r.tag(l)+".yaml"))
		for _, p := range l.plugins {
			want = append(want, r.archive(l, p))
		}
		for _, b := range binaries {
			want = append(want, r.sbom(l, b))
		}
	}
	wantNames := map[string]bool{}
	for _, w := range want {
		wantNames[filepath.Base(w)] = true
	}
	entries, err := os.ReadDir(r.dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch {
		case !e.Type().IsRegular():
			t.Errorf("%s in %s is not a file: the release is one flat folder", e.Name(), r.dist)
		case !wantNames[e.Name()]:
			t.Errorf("%s: unexpected in the release", e.Name())
		}
		delete(wantNames, e.Name())
	}
	if len(wantNames) > 0 {
		t.Errorf("missing from %s: %v", r.dist, slices.Sorted(maps.Keys(wantNames)))
	}
}

// manifest is krew's Plugin, strictly decoded: a field krew does not know
// fails the test.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

func (r *release) manifestPath() string { return filepath.Join(r.dist, "placement.yaml") }

// contents is what every archive holds, by name.
func contents(goos string) (bin, completion string, names []string) {
	bin, completion = "kubectl-placement", "kubectl_complete-placement"
	if goos == "windows" {
		bin, completion = bin+".exe", completion+".bat"
	}
	return bin, completion, []string{bin, "LICENSE", completion}
}

// TestManifest: placement.yaml has krew's shape, one platform per archive
// of the newest line (krew installs that line) with that archive's URI,
// sha256, files and bin; then krew's own validate-krew-manifest (what
// krew-index's CI runs) accepts it.
func TestManifest(t *testing.T) {
	r := load(t)
	newest := r.newest()
	data, err := os.ReadFile(r.manifestPath())
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("placement.yaml: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "placement" {
		t.Errorf("placement.yaml is %s %s %q, want krew.googlecontainertools.github.com/v1alpha2 Plugin \"placement\"", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	if m.Spec.Version != r.version {
		t.Errorf("spec.version %q, want %q", m.Spec.Version, r.version)
	}
	if m.Spec.Homepage == "" || m.Spec.ShortDescription == "" || m.Spec.Description == "" {
		t.Errorf("spec.homepage, shortDescription and description must be set: %+v", m.Spec)
	}
	if !strings.Contains(m.Spec.Caveats, "kubectl_complete-placement") {
		t.Errorf("spec.caveats should say how to enable completion, got %q", m.Spec.Caveats)
	}
	seen := map[string]bool{}
	for i, p := range m.Spec.Platforms {
		osArch := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		if len(p.Selector.MatchLabels) != 2 || seen[osArch] {
			t.Errorf("platforms[%d]: selector %v, want exactly os and arch, once per pair", i, p.Selector.MatchLabels)
			continue
		}
		seen[osArch] = true
		if !slices.Contains(newest.plugins, osArch) {
			t.Errorf("platforms[%d] (%s): not a platform of the newest line's archives %v", i, osArch, newest.plugins)
			continue
		}
		archive := r.archive(newest, osArch)
		wantURI := "https://github.com/placement-scheduler/placement-scheduler/releases/download/" + r.version + "/" + filepath.Base(archive)
		if p.URI != wantURI {
			t.Errorf("platforms[%d] (%s): uri %s, want %s", i, osArch, p.URI, wantURI)
		}
		if sum := fileSHA256(t, archive); p.Sha256 != sum {
			t.Errorf("platforms[%d] (%s): sha256 %s, but %s has %s", i, osArch, p.Sha256, filepath.Base(archive), sum)
		}
		bin, _, names := contents(p.Selector.MatchLabels["os"])
		if p.Bin != bin {
			t.Errorf("platforms[%d] (%s): bin %q, want %q", i, osArch, p.Bin, bin)
		}
		var from []string
		for _, f := range p.Files {
			from = append(from, f.From)
			if f.To != "." {
				t.Errorf("platforms[%d] (%s): files %s to %q, want \".\"", i, osArch, f.From, f.To)
			}
		}
		if !slices.Equal(from, names) {
			t.Errorf("platforms[%d] (%s): files from %v, want %v", i, osArch, from, names)
		}
	}
	if want := slices.Sorted(slices.Values(newest.plugins)); !slices.Equal(slices.Sorted(maps.Keys(seen)), want) {
		t.Errorf("platforms %v, want one per archive of the newest line (%s): %v", slices.Sorted(maps.Keys(seen)), newest.minor, want)
	}
	run(t, nil, filepath.Join(r.bin, "validate-krew-manifest"), "-manifest", r.manifestPath(), "-skip-install")
}

// TestArchives: each line's archives hold exactly the binary, LICENSE and
// the completion script, the binary built for the archive's OS and arch,
// against the line's Kubernetes release, and executable, LICENSE and the
// script as in the repository.
func TestArchives(t *testing.T) {
	r := load(t)
	license := readFile(t, "../../LICENSE")
	for _, l := range r.lines {
		for _, osArch := range l.plugins {
			t.Run(l.minor+"/"+osArch, func(t *testing.T) { testArchive(t, r, l, osArch, license) })
		}
	}
}

func testArchive(t *testing.T, r *release, l line, osArch string, license []byte) {
	archive := r.archive(l, osArch)
	goos, _, _ := strings.Cut(osArch, "/")
	files, modes := unpack(t, archive)
	bin, completion, names := contents(goos)
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
		t.Fatalf("%s holds %v, want %v", filepath.Base(archive), got, names)
	}
	if !bytes.Equal(files["LICENSE"], license) {
		t.Error("LICENSE differs from the repository's")
	}
	if !bytes.Equal(files[completion], readFile(t, "../../cmd/kubectl-placement/"+completion)) {
		t.Errorf("%s differs from cmd/kubectl-placement/%s", completion, completion)
	}
	if goos != "windows" && (modes[bin]&0o111 == 0 || modes[completion]&0o111 == 0) {
		t.Errorf("%s and %s must be executable: modes %o, %o", bin, completion, modes[bin], modes[completion])
	}
	if got := binaryPlatform(t, files[bin]); got != osArch {
		t.Errorf("%s is a %s binary, want %s", bin, got, osArch)
	}
	checkBuild(t, r, l, filepath.Base(archive)+": "+bin, files[bin])
}

// checkBuild: a shipped binary links the line's k8s.io/kubernetes and, if
// it is a linux one, was linked with the release -ldflags (our version, and
// the Kubernetes version stamped into component-base).
func checkBuild(t *testing.T, r *release, l line, what string, data []byte) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: build info: %v", what, err)
		return
	}
	kube := ""
	for _, dep := range bi.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		if dep.Path == "k8s.io/kubernetes" {
			kube = dep.Version
		}
	}
	if kube != l.k8sVersion {
		t.Errorf("%s links k8s.io/kubernetes %q, want the %s line's %s", what, kube, l.minor, l.k8sVersion)
	}
	// -trimpath keeps -ldflags out of the build info: read what -X set
	// from the symbols (linux binaries; the others run nowhere here).
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return
	}
	for symbol, want := range map[string]string{"main.version": r.version, "k8s.io/component-base/version.gitVersion": l.k8sVersion} {
		if got, err := stringVar(f, symbol); err != nil || got != want {
			t.Errorf("%s: %s is %q (%v), want %q: not built with the release -ldflags", what, symbol, got, err, want)
		}
	}
}

// stringVar reads the value of a Go string variable from an ELF binary's
// symbol table: its header (pointer, length; 64-bit little-endian, as
// linux/amd64 and linux/arm64 are), then the bytes it points at.
func stringVar(f *elf.File, symbol string) (string, error) {
	syms, err := f.Symbols()
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == symbol })
	if i < 0 {
		return "", fmt.Errorf("no symbol %s", symbol)
	}
	header, err := readAt(f, syms[i].Value, 16)
	if err != nil {
		return "", err
	}
	str, err := readAt(f, binary.LittleEndian.Uint64(header), binary.LittleEndian.Uint64(header[8:]))
	return string(str), err
}

// readAt reads n bytes at a virtual address from the section holding it.
func readAt(f *elf.File, addr, n uint64) ([]byte, error) {
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_NOBITS && addr >= sec.Addr && addr+n <= sec.Addr+sec.Size {
			buf := make([]byte, n)
			_, err := sec.ReadAt(buf, int64(addr-sec.Addr))
			return buf, err
		}
	}
	return nil, fmt.Errorf("address %#x is in no section with data", addr)
}

// TestKrewInstall installs every archive of the newest line the krew way,
// offline: krew install --manifest placement.yaml --archive <archive> (krew checks the
// sha256, unpacks per files, links bin), for the archive's platform
// (KREW_OS/KREW_ARCH, as validate-krew-manifest does per platform). The
// host's install then runs through kubectl: `kubectl placement version`,
// --help, and completion via kubectl_complete-placement linked as the
// caveats say.
func TestKrewInstall(t *testing.T) {
	r := load(t)
	host := runtime.GOOS + "/" + runtime.GOARCH
	newest := r.newest()
	for _, osArch := range newest.plugins {
		archive := r.archive(newest, osArch)
		goos, goarch, _ := strings.Cut(osArch, "/")
		t.Run(osArch, func(t *testing.T) {
			root := t.TempDir()
			env := []string{"KREW_ROOT=" + root, "KREW_OS=" + goos, "KREW_ARCH=" + goarch, "KREW_NO_UPGRADE_CHECK=1"}
			run(t, env, filepath.Join(r.bin, "krew"), "install", "--manifest", r.manifestPath(), "--archive", archive)
			store := filepath.Join(root, "store", "placement", r.version)
			bin, completion, names := contents(goos)
			for _, name := range names {
				if _, err := os.Stat(filepath.Join(store, name)); err != nil {
					t.Errorf("krew did not install %s: %v", name, err)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "bin", bin)); err != nil {
				t.Errorf("krew did not put %s in $KREW_ROOT/bin: %v", bin, err)
			}
			if osArch != host {
				return
			}
			if err := os.Symlink(filepath.Join(store, completion), filepath.Join(root, "bin", completion)); err != nil {
				t.Fatal(err)
			}
			// Only krew's bin and kubectl on PATH, as a user would have.
			env = []string{"PATH=" + filepath.Join(root, "bin") + string(os.PathListSeparator) + r.bin, "HOME=" + root, "KUBECONFIG=" + filepath.Join(root, "no-kubeconfig")}
			kubectl := filepath.Join(r.bin, "kubectl")
			checkPluginVersion(t, r, newest, env)

			help := run(t, env, kubectl, "placement", "--help")
			for _, want := range []string{"kubectl placement [command]", "explain", "version", "completion"} {
				if !strings.Contains(help, want) {
					t.Errorf("kubectl placement --help lacks %q:\n%s", want, help)
				}
			}
			if strings.Contains(help, "kubectl-placement") {
				t.Errorf("kubectl placement --help names the binary instead of the command:\n%s", help)
			}

			// kubectl's own completion asks kubectl_complete-placement.
			words := run(t, env, kubectl, "__complete", "placement", "")
			for _, want := range []string{"explain", "version", "completion"} {
				if !strings.Contains(words, want+"\t") {
					t.Errorf("kubectl __complete placement '': %q lacks %s", words, want)
				}
			}
			if words := run(t, env, kubectl, "__complete", "placement", "explain", "--from-d"); !strings.Contains(words, "--from-dir") {
				t.Errorf("kubectl __complete placement explain --from-d: %q lacks --from-dir", words)
			}
			for shell, want := range map[string]string{"bash": "__start_kubectl-placement", "zsh": "#compdef kubectl-placement", "fish": "complete -c kubectl-placement"} {
				if script := run(t, env, kubectl, "placement", "completion", shell); !strings.Contains(script, want) {
					t.Errorf("kubectl placement completion %s lacks %q", shell, want)
				}
			}
		})
	}
}

// TestPluginVersion: each line's archive for this host, unpacked by hand
// onto PATH as an older line's user installs it (docs/compatibility.md),
// runs through kubectl and names its line and Kubernetes release.
func TestPluginVersion(t *testing.T) {
	r := load(t)
	host := runtime.GOOS + "/" + runtime.GOARCH
	for _, l := range r.lines {
		t.Run(l.minor, func(t *testing.T) {
			if !slices.Contains(l.plugins, host) {
				t.Fatalf("no %s archive for this host's platform (%s) to run", l.minor, host)
			}
			dir := t.TempDir()
			files, _ := unpack(t, r.archive(l, host))
			for name, data := range files {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			checkPluginVersion(t, r, l, []string{"PATH=" + dir + string(os.PathListSeparator) + r.bin, "HOME=" + dir, "KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig")})
		})
	}
}

// checkPluginVersion runs `kubectl placement version` (text and JSON) with
// env and checks it names the release, line l and its Kubernetes release,
// this host's platform, and a stamped commit and build date.
func checkPluginVersion(t *testing.T, r *release, l line, env []string) {
	t.Helper()
	kubectl := filepath.Join(r.bin, "kubectl")
	version := run(t, env, kubectl, "placement", "version")
	for _, want := range []string{"kubectl-placement " + r.version + " ", "Kubernetes " + l.minor + " line", "Kubernetes " + l.k8sVersion, runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(version, want) {
			t.Errorf("kubectl placement version: %q lacks %q", version, want)
		}
	}
	if strings.Contains(version, "commit unknown") || strings.Contains(version, "built unknown") {
		t.Errorf("kubectl placement version: %q: commit and build date not stamped", version)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(run(t, env, kubectl, "placement", "version", "-o", "json")), &info); err != nil {
		t.Fatalf("version -o json: %v", err)
	}
	if info["version"] != r.version || info["kubernetes"] != l.k8sVersion || info["kubernetesLine"] != l.minor {
		t.Errorf("version -o json: %v, want version %s, kubernetes %s, kubernetesLine %s", info, r.version, l.k8sVersion, l.minor)
	}
}

// TestChecksums: SHA256SUMS lists every other file of the release with its
// sha256; with a public key, SHA256SUMS.sig verifies (ssh-keygen -Y verify,
// namespace "file") and a SHA256SUMS with one changed byte does not.
func TestChecksums(t *testing.T) {
	r := load(t)
	sums := readFile(t, filepath.Join(r.dist, "SHA256SUMS"))
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not `<sha256>  <file>`", line)
		}
		listed[name] = sum
	}
	entries, err := os.ReadDir(r.dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == "SHA256SUMS" || name == "SHA256SUMS.sig" {
			continue
		}
		if got := fileSHA256(t, filepath.Join(r.dist, name)); listed[name] != got {
			t.Errorf("SHA256SUMS has %q for %s, the file's sha256 is %s", listed[name], name, got)
		}
		delete(listed, name)
	}
	if len(listed) > 0 {
		t.Errorf("SHA256SUMS lists files that are not in the release: %v", slices.Sorted(maps.Keys(listed)))
	}

	sig := filepath.Join(r.dist, "SHA256SUMS.sig")
	_, sigErr := os.Stat(sig)
	if r.pubKey == "" {
		if sigErr == nil {
			t.Fatal("the release is signed (SHA256SUMS.sig) but no public key was given: set SIGNING_PUBKEY=path")
		}
		t.Log("unsigned release (no SIGNING_KEY at make release): signature not checked")
		return
	}
	if sigErr != nil {
		t.Fatalf("a public key was given but the release is not signed: %v", sigErr)
	}
	pub := strings.Fields(string(readFile(t, r.pubKey)))
	if len(pub) < 2 {
		t.Fatalf("%s is not an OpenSSH public key", r.pubKey)
	}
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(allowed, []byte("release "+pub[0]+" "+pub[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func(data []byte) error {
		cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "release", "-n", "file", "-s", sig)
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	if err := verify(sums); err != nil {
		t.Errorf("ssh-keygen -Y verify SHA256SUMS: %v", err)
	}
	tampered := bytes.Clone(sums)
	tampered[0] ^= 1
	if err := verify(tampered); err == nil {
		t.Error("ssh-keygen -Y verify accepted a SHA256SUMS with a changed byte")
	}
}

// TestSBOM: one CycloneDX SBOM per line and binary, naming the binary's
// main package and the Kubernetes modules it links at the versions the
// line pins, and not go.mod's tools (etcd's server, KWOK), which no shipped
// binary links. The plugin's SBOM (made for linux/amd64) lists exactly the
// modules Go recorded in the line's linux/amd64 binary.
func TestSBOM(t *testing.T) {
	r := load(t)
	for _, l := range r.lines {
		for binary, wants := range map[string][]string{
			"placement-scheduler": {"k8s.io/kubernetes@" + l.k8sVersion, "k8s.io/component-base@"},
			"kubectl-placement":   {"k8s.io/kubernetes@" + l.k8sVersion, "k8s.io/cli-runtime@"},
			"placement-enforcer":  {"k8s.io/kubernetes@" + l.k8sVersion, "k8s.io/client-go@"},
		} {
			t.Run(l.minor+"/"+binary, func(t *testing.T) { testSBOM(t, r, l, binary, wants) })
		}
	}
}

func testSBOM(t *testing.T, r *release, l line, binary string, wants []string) {
	var bom struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component struct {
				Name string `json:"name"`
				PURL string `json:"purl"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	}
	path := r.sbom(l, binary)
	if err := json.Unmarshal(readFile(t, path), &bom); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
		t.Errorf("%s: bomFormat %q, specVersion %q, want CycloneDX", path, bom.BOMFormat, bom.SpecVersion)
	}
	main := "cmd/" + strings.TrimPrefix(binary, "placement-")
	if bom.Metadata.Component.Name != "github.com/placement-scheduler/placement-scheduler" || !strings.HasSuffix(bom.Metadata.Component.PURL, "#"+main) {
		t.Errorf("%s: main component %q (%s), want the module with #%s", path, bom.Metadata.Component.Name, bom.Metadata.Component.PURL, main)
	}
	var have []string
	for _, c := range bom.Components {
		// An older line builds from a go.work, where cyclonedx-gomod also
		// lists the workspace's own module as a component (versioned with
		// the go directive); it is the main component, not a dependency.
		if c.Name == bom.Metadata.Component.Name && l.minor != r.newest().minor {
			continue
		}
		have = append(have, c.Name+"@"+c.Version)
	}
	for _, want := range wants {
		if !slices.ContainsFunc(have, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("%s: no component %s", path, want)
		}
	}
	for _, tool := range []string{"go.etcd.io/etcd/server/v3@", "sigs.k8s.io/kwok@"} {
		if slices.ContainsFunc(have, func(s string) bool { return strings.HasPrefix(s, tool) }) {
			t.Errorf("%s lists %s, a go.mod tool no shipped binary links", path, strings.TrimSuffix(tool, "@"))
		}
	}
	if binary != "kubectl-placement" || !slices.Contains(l.plugins, "linux/amd64") {
		return
	}
	archive := r.archive(l, "linux/amd64")
	files, _ := unpack(t, archive)
	bi, err := buildinfo.Read(bytes.NewReader(files["kubectl-placement"]))
	if err != nil {
		t.Fatalf("%s: build info: %v", archive, err)
	}
	var linked []string
	for _, dep := range bi.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		linked = append(linked, dep.Path+"@"+dep.Version)
	}
	slices.Sort(linked)
	slices.Sort(have)
	if !slices.Equal(linked, have) {
		t.Errorf("%s lists %d components, the linux/amd64 binary links %d modules; only in the SBOM: %v; only in the binary: %v",
			path, len(have), len(linked), minus(have, linked), minus(linked, have))
	}
}

// minus is a's elements that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// unpack reads a .tar.gz or .zip archive into memory (name to content and
// mode).
func unpack(t *testing.T, path string) (map[string][]byte, map[string]os.FileMode) {
	t.Helper()
	files, modes := map[string][]byte{}, map[string]os.FileMode{}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", path, f.Name, err)
			}
			files[f.Name], modes[f.Name] = data, f.Mode()
		}
		return files, modes
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			t.Errorf("%s: %s is not a regular file", path, hdr.Name)
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, hdr.Name, err)
		}
		files[hdr.Name], modes[hdr.Name] = data, hdr.FileInfo().Mode()
	}
	return files, modes
}

// binaryPlatform reads an executable's format and machine as GOOS/GOARCH.
func binaryPlatform(t *testing.T, data []byte) string {
	t.Helper()
	r := bytes.NewReader(data)
	if f, err := elf.NewFile(r); err == nil {
		return "linux/" + map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	}
	if f, err := macho.NewFile(r); err == nil {
		return "darwin/" + map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
	}
	if f, err := pe.NewFile(r); err == nil {
		return "windows/" + map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
	}
	return "not an executable"
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	h := sha256.New()
	h.Write(readFile(t, path))
	return hex.EncodeToString(h.Sum(nil))
}

// TestImages: each line's image index (an OCI layout in a tar) names its
// image ghcr.io/placement-scheduler/placement-scheduler:<v>-k8s<m>, holds one
// image per expected platform, carries the OCI metadata (version, revision,
// source, ...) on the index, each manifest and each config's labels, and
// ships the three binaries built for its platform against the line with
// the release -ldflags. On a linux host the host platform's scheduler and
// enforcer run: --version names the release and the line.
func TestImages(t *testing.T) {
	r := load(t)
	for _, l := range r.lines {
		t.Run(l.minor, func(t *testing.T) { testImage(t, r, l) })
	}
}

var revision = regexp.MustCompile(`^[0-9a-f]{40}$`)

func testImage(t *testing.T, r *release, l line) {
	dir := t.TempDir()
	untar(t, r.imageIndex(l), dir)
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s: not an OCI layout: %v", r.imageIndex(l), err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 {
		t.Fatalf("%s: index.json has %d entries, want the one image index", r.imageIndex(l), len(topManifest.Manifests))
	}
	entry := topManifest.Manifests[0]
	if got, want := entry.Annotations["io.containerd.image.name"], imageRepo+":"+r.tag(l); got != want {
		t.Errorf("io.containerd.image.name %q, want %q", got, want)
	}
	if got := entry.Annotations["org.opencontainers.image.ref.name"]; got != r.tag(l) {
		t.Errorf("org.opencontainers.image.ref.name %q, want %q", got, r.tag(l))
	}
	idx, err := top.ImageIndex(entry.Digest)
	if err != nil {
		t.Fatalf("%s: %v", entry.Digest, err)
	}
	idxManifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	checkMeta := func(what string, got map[string]string) {
		t.Helper()
		for k, v := range map[string]string{
			"org.opencontainers.image.title":    "placement-scheduler",
			"org.opencontainers.image.version":  r.version,
			"org.opencontainers.image.source":   source,
			"org.opencontainers.image.licenses": "Apache-2.0",
		} {
			if got[k] != v {
				t.Errorf("%s: %s %q, want %q", what, k, got[k], v)
			}
		}
		if !revision.MatchString(got["org.opencontainers.image.revision"]) {
			t.Errorf("%s: org.opencontainers.image.revision %q, want a commit", what, got["org.opencontainers.image.revision"])
		}
		if _, err := time.Parse(time.RFC3339, got["org.opencontainers.image.created"]); err != nil {
			t.Errorf("%s: org.opencontainers.image.created: %v", what, err)
		}
		if d := got["org.opencontainers.image.description"]; !strings.Contains(d, "kube-scheduler "+l.k8sVersion+" ") {
			t.Errorf("%s: org.opencontainers.image.description %q does not name the line's kube-scheduler %s", what, d, l.k8sVersion)
		}
	}
	checkMeta("index", idxManifest.Annotations)
	var platforms []string
	for _, m := range idxManifest.Manifests {
		if m.Platform == nil {
			t.Errorf("index entry %s has no platform", m.Digest)
			continue
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		platforms = append(platforms, p)
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := cfg.OS + "/" + cfg.Architecture; got != p {
			t.Errorf("%s: the image's config says %s", p, got)
		}
		checkMeta(p+" config labels", cfg.Config.Labels)
		manifest, err := img.Manifest()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		checkMeta(p+" manifest", manifest.Annotations)
		files := imageFiles(t, img)
		for _, b := range binaries {
			data := files["usr/local/bin/"+b]
			if data == nil {
				t.Errorf("%s: no /usr/local/bin/%s in the image", p, b)
				continue
			}
			if got := binaryPlatform(t, data); got != p {
				t.Errorf("%s: /usr/local/bin/%s is a %s binary", p, b, got)
			}
			checkBuild(t, r, l, p+" image: "+b, data)
		}
		if p != runtime.GOOS+"/"+runtime.GOARCH {
			continue
		}
		bin := t.TempDir()
		for _, b := range []string{"placement-scheduler", "placement-enforcer"} {
			if files["usr/local/bin/"+b] == nil {
				continue // reported above
			}
			path := filepath.Join(bin, b)
			if err := os.WriteFile(path, files["usr/local/bin/"+b], 0o755); err != nil {
				t.Fatal(err)
			}
			out := run(t, nil, path, "--version")
			for _, want := range []string{b + " " + r.version + " (Kubernetes " + l.minor + " line,", l.k8sVersion} {
				if !strings.Contains(out, want) {
					t.Errorf("%s image: %s --version: %q lacks %q", p, b, out, want)
				}
			}
		}
	}
	if want := slices.Sorted(slices.Values(r.images)); !slices.Equal(slices.Sorted(slices.Values(platforms)), want) {
		t.Errorf("%s: platforms %v, want %v", r.imageIndex(l), platforms, want)
	}
}

// imageFiles reads the regular files of an image's flattened filesystem.
func imageFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(hdr.Name, "/")] = data
	}
}

// untar writes the directories and regular files of a tar into dir.
func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		target := filepath.Join(dir, filepath.Clean("/"+hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				var data []byte
				if data, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(target, data, 0o644)
				}
			}
		default:
			err = fmt.Errorf("%s: unexpected entry type %c", hdr.Name, hdr.Typeflag)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// TestChart: the one chart renders each line's image, <v>-k8s<m>, for a
// cluster of that minor (helm template --kube-version), and each line's
// rendered manifests name that same image.
func TestChart(t *testing.T) {
	r := load(t)
	for _, l := range r.lines {
		t.Run(l.minor, func(t *testing.T) {
			want := imageRepo + ":" + r.tag(l)
			out := run(t, []string{"HOME=" + t.TempDir()}, filepath.Join(r.bin, "helm"), "template", "placement-scheduler", r.chart(), "--kube-version", l.minor+".0")
			for what, doc := range map[string]string{
				"helm template --kube-version " + l.minor + ".0":                     out,
				filepath.Base(r.dist) + "/placement-scheduler-" + r.tag(l) + ".yaml": string(readFile(t, filepath.Join(r.dist, "placement-scheduler-"+r.tag(l)+".yaml"))),
			} {
				refs := ourImages(doc)
				if len(refs) == 0 {
					t.Errorf("%s: no %s image", what, imageRepo)
				}
				for _, ref := range refs {
					if ref != want {
						t.Errorf("%s: image %s, want %s", what, ref, want)
					}
				}
			}
		})
	}
}

var imageField = regexp.MustCompile(`(?m)^\s*(?:-\s+)?image:\s*["']?([^"'\s]+)`)

// ourImages lists the image references in rendered YAML that are ours.
func ourImages(doc string) []string {
	var out []string
	for _, m := range imageField.FindAllStringSubmatch(doc, -1) {
		if strings.HasPrefix(m[1], imageRepo) {
			out = append(out, m[1])
		}
	}
	return out
}
