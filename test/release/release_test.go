// Package release checks the artifacts `make release` writes: the krew
// manifest against the archives, each archive's contents, installing the
// plugin from the manifest with krew itself and running it through kubectl,
// the SBOMs and the signed checksums.
//
// It reads a release directory; `make test-release` (part of make test)
// makes a small one (this host's archive and windows/amd64's) signed with a
// throwaway key, `make verify-release` points it at dist/. Both build krew
// from tools/krew and kubectl from go.mod.
package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
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
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// release is the directory under test and what it should hold.
type release struct {
	dist, version, k8sVersion, pubKey string
	// bin holds kubectl, krew and validate-krew-manifest.
	bin string
	// archives by "os/arch".
	archives map[string]string
}

var archiveName = regexp.MustCompile(`^kubectl-placement_(v[^_]+)_([a-z0-9]+)_([a-z0-9]+)\.(tar\.gz|zip)$`)

func load(t *testing.T) *release {
	t.Helper()
	dist := os.Getenv("RELEASE_DIST")
	if dist == "" {
		t.Skip("RELEASE_DIST is not set: run `make test-release`, or `make verify-release VERSION=...` after make release")
	}
	r := &release{
		dist:       dist,
		version:    os.Getenv("RELEASE_VERSION"),
		k8sVersion: os.Getenv("RELEASE_K8S_VERSION"),
		pubKey:     os.Getenv("RELEASE_SIGNING_PUBKEY"),
		archives:   map[string]string{},
	}
	if r.version == "" || r.k8sVersion == "" {
		t.Fatal("RELEASE_VERSION and RELEASE_K8S_VERSION must be set with RELEASE_DIST (the Makefile sets them)")
	}
	bin, err := filepath.Abs("../../bin")
	if err != nil {
		t.Fatal(err)
	}
	r.bin = bin
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m := archiveName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if m[1] != r.version {
			t.Errorf("%s: version %s, want %s", e.Name(), m[1], r.version)
		}
		if want := map[bool]string{true: "zip", false: "tar.gz"}[m[2] == "windows"]; m[4] != want {
			t.Errorf("%s: a %s archive on %s, want %s (krew's convention)", e.Name(), m[4], m[2], want)
		}
		r.archives[m[2]+"/"+m[3]] = filepath.Join(dist, e.Name())
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	if r.archives[host] == "" {
		t.Fatalf("no archive for this host (%s) in %s", host, dist)
	}
	if r.archives["windows/amd64"] == "" {
		t.Fatalf("no windows/amd64 archive in %s", dist)
	}
	return r
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
// with that archive's URI, sha256, files and bin; then krew's own
// validate-krew-manifest (what krew-index's CI runs) accepts it.
func TestManifest(t *testing.T) {
	r := load(t)
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
		archive := r.archives[osArch]
		if archive == "" {
			t.Errorf("platforms[%d] (%s): no such archive in %s", i, osArch, r.dist)
			continue
		}
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
	if want := slices.Sorted(maps.Keys(r.archives)); !slices.Equal(slices.Sorted(maps.Keys(seen)), want) {
		t.Errorf("platforms %v, want one per archive: %v", slices.Sorted(maps.Keys(seen)), want)
	}
	run(t, nil, filepath.Join(r.bin, "validate-krew-manifest"), "-manifest", r.manifestPath(), "-skip-install")
}

// TestArchives: each archive holds exactly the binary, LICENSE and the
// completion script, the binary built for the archive's OS and arch and
// executable, LICENSE and the script as in the repository.
func TestArchives(t *testing.T) {
	r := load(t)
	license := readFile(t, "../../LICENSE")
	for osArch, archive := range r.archives {
		goos, _, _ := strings.Cut(osArch, "/")
		t.Run(osArch, func(t *testing.T) {
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
		})
	}
}

// TestKrewInstall installs every archive the krew way, offline: krew
// install --manifest placement.yaml --archive <archive> (krew checks the
// sha256, unpacks per files, links bin), for the archive's platform
// (KREW_OS/KREW_ARCH, as validate-krew-manifest does per platform). The
// host's install then runs through kubectl: `kubectl placement version`,
// --help, and completion via kubectl_complete-placement linked as the
// caveats say.
func TestKrewInstall(t *testing.T) {
	r := load(t)
	host := runtime.GOOS + "/" + runtime.GOARCH
	for osArch, archive := range r.archives {
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

			version := run(t, env, kubectl, "placement", "version")
			for _, want := range []string{"kubectl-placement " + r.version + " ", "Kubernetes " + r.k8sVersion, runtime.GOOS + "/" + runtime.GOARCH} {
				if !strings.Contains(version, want) {
					t.Errorf("kubectl placement version: %q lacks %q", version, want)
				}
			}
			if strings.Contains(version, "commit unknown") || strings.Contains(version, "built unknown") {
				t.Errorf("kubectl placement version: %q: commit and build date not stamped", version)
			}
			var info map[string]string
			if err := json.Unmarshal([]byte(run(t, env, kubectl, "placement", "version", "-o", "json")), &info); err != nil {
				t.Fatalf("version -o json: %v", err)
			}
			if info["version"] != r.version || info["kubernetes"] != r.k8sVersion {
				t.Errorf("version -o json: %v, want version %s, kubernetes %s", info, r.version, r.k8sVersion)
			}

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

// TestSBOM: one CycloneDX SBOM per binary, naming the binary's main package
// and the Kubernetes modules it links at the versions go.mod pins, and not
// go.mod's tools (etcd's server, KWOK), which no shipped binary links. The
// plugin's SBOM (made for linux/amd64) lists exactly the modules Go
// recorded in the linux/amd64 binary.
func TestSBOM(t *testing.T) {
	r := load(t)
	for binary, wants := range map[string][]string{
		"placement-scheduler": {"k8s.io/kubernetes@" + r.k8sVersion, "k8s.io/component-base@"},
		"kubectl-placement":   {"k8s.io/kubernetes@" + r.k8sVersion, "k8s.io/cli-runtime@"},
		"placement-enforcer":  {"k8s.io/kubernetes@" + r.k8sVersion, "k8s.io/client-go@"},
	} {
		t.Run(binary, func(t *testing.T) {
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
			path := filepath.Join(r.dist, binary+"_"+r.version+".sbom.cdx.json")
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
			archive := r.archives["linux/amd64"]
			if binary != "kubectl-placement" || archive == "" {
				return
			}
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
		})
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
