// Command krew packs one Kubernetes line's kubectl-placement release
// archives (kubectl-placement_<version>-k8s<line>_<os>_<arch>) and, with
// -manifest, writes the krew plugin manifest (placement.yaml) that points at
// them, with each archive's sha256: krew installs the newest line, so `make
// release-plugin` asks for the manifest on that line only. It runs after
// cross-building the binaries.
//
// One archive per OS/arch, as krew's plugin guide asks: a .tar.gz, a .zip on
// Windows, each holding the binary (.exe on Windows), LICENSE and the
// kubectl_complete-placement script (.bat on Windows). Entries carry the
// commit's time and fixed modes, so that the same binaries give the same
// archives and the same sha256.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/placementcmd/skew"
)

// Manifest is krew's index format (krew.googlecontainertools.github.com/v1alpha2,
// kind Plugin), the fields this plugin uses.
type Manifest struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec Spec `json:"spec"`
}

type Spec struct {
	Version          string     `json:"version"`
	Homepage         string     `json:"homepage"`
	ShortDescription string     `json:"shortDescription"`
	Description      string     `json:"description"`
	Caveats          string     `json:"caveats"`
	Platforms        []Platform `json:"platforms"`
}

type Platform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Files    []File                `json:"files"`
	Bin      string                `json:"bin"`
}

type File struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// lineRE is a Kubernetes minor as the Makefile's K8S_LINES spell it.
var lineRE = regexp.MustCompile(`^1\.[0-9]+$`)

const (
	pluginName = "placement"
	binary     = "kubectl-placement"
	completer  = "kubectl_complete-placement"
	homepage   = "https://github.com/placement-scheduler/placement-scheduler"
)

func main() {
	var (
		version    = flag.String("version", "", "release version, vX.Y.Z")
		line       = flag.String("line", "", "the Kubernetes line (minor) the binaries were built for, e.g. 1.37; archives are named kubectl-placement_<version>-k8s<line>_<os>_<arch>")
		manifest   = flag.String("manifest", "", "file name (in -out) of the krew manifest to write for these archives, e.g. placement.yaml; empty writes none")
		builds     = flag.String("builds", "", "directory with <os>-<arch>/kubectl-placement[.exe] for each platform")
		platforms  = flag.String("platforms", "", "space-separated os/arch list, e.g. \"linux/amd64 windows/amd64\"")
		license    = flag.String("license", "LICENSE", "license file shipped in every archive")
		completion = flag.String("completion", "cmd/kubectl-placement", "directory with kubectl_complete-placement and its .bat")
		out        = flag.String("out", "dist", "directory the archives and placement.yaml are written to")
		urlBase    = flag.String("url-base", homepage+"/releases/download", "archives are downloaded from <url-base>/<version>/<archive>")
		mtime      = flag.Int64("mtime", 0, "archive entry time, Unix seconds (the release commit's time)")
	)
	flag.Parse()
	if err := run(*version, *line, *manifest, *builds, *platforms, *license, *completion, *out, *urlBase, time.Unix(*mtime, 0).UTC()); err != nil {
		fmt.Fprintln(os.Stderr, "krew: "+err.Error())
		os.Exit(1)
	}
}

func run(version, line, manifest, builds, platforms, license, completion, out, urlBase string, mtime time.Time) error {
	switch {
	case !strings.HasPrefix(version, "v"):
		return fmt.Errorf("-version %q: want vX.Y.Z", version)
	case !lineRE.MatchString(line):
		return fmt.Errorf("-line %q: want the Kubernetes minor the binaries were built for, e.g. -line 1.37", line)
	case manifest != "" && filepath.Base(manifest) != manifest:
		return fmt.Errorf("-manifest %q: want a file name, written in -out (e.g. placement.yaml)", manifest)
	case builds == "":
		return errors.New("-builds: give the directory of the cross-built binaries")
	case len(strings.Fields(platforms)) == 0:
		return errors.New("-platforms: give at least one os/arch")
	}
	m := Manifest{TypeMeta: metav1.TypeMeta{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin"}}
	m.Metadata.Name = pluginName
	m.Spec = Spec{
		Version:          version,
		Homepage:         homepage,
		ShortDescription: "Explain placement-scheduler's decisions",
		Description: `Explains why a pod is Pending, or why it landed where it did, as
placement-scheduler (a second scheduler beside kube-scheduler) would decide:
every filter plugin on every node, every score plugin on the feasible nodes,
per term. Runs the scheduler framework itself, read-only, against the live
cluster or an offline snapshot.
`,
		Caveats: `Shell completion of "kubectl placement" (kubectl 1.26+) needs the
kubectl_complete-placement script on your PATH. Link it next to the plugin:

  ln -s "${KREW_ROOT:-$HOME/.krew}/store/placement/` + version + `/kubectl_complete-placement" "${KREW_ROOT:-$HOME/.krew}/bin/"

(on Windows copy kubectl_complete-placement.bat into a PATH directory).
`,
	}
	for _, osArch := range strings.Fields(platforms) {
		goos, goarch, ok := strings.Cut(osArch, "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not os/arch", osArch)
		}
		p, err := pack(version, line, goos, goarch, builds, license, completion, out, mtime)
		if err != nil {
			return fmt.Errorf("%s: %w", osArch, err)
		}
		p.URI = strings.TrimSuffix(urlBase, "/") + "/" + version + "/" + p.URI
		m.Spec.Platforms = append(m.Spec.Platforms, p)
	}
	if manifest == "" {
		return nil
	}
	data, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, manifest), data, 0o644)
}

// entry is one file of an archive: its name in the archive, its source and
// mode.
type entry struct {
	name, src string
	mode      os.FileMode
}

// pack writes the archive of one platform of version's line, named as
// skew.Archive names it (the name kubectl placement's skew warning points
// users to), and returns its manifest entry, URI holding the archive's file
// name.
func pack(version, line, goos, goarch, builds, license, completion, out string, mtime time.Time) (Platform, error) {
	bin, script := binary, completer
	if goos == "windows" {
		bin, script = binary+".exe", completer+".bat"
	}
	entries := []entry{
		{bin, filepath.Join(builds, goos+"-"+goarch, bin), 0o755},
		{"LICENSE", license, 0o644},
		{script, filepath.Join(completion, script), 0o755},
	}
	name := skew.Archive(version, line, goos, goarch)
	path := filepath.Join(out, name)
	f, err := os.Create(path)
	if err != nil {
		return Platform{}, err
	}
	h := sha256.New()
	w := io.MultiWriter(f, h)
	if goos == "windows" {
		err = writeZip(w, entries, mtime)
	} else {
		err = writeTarGz(w, entries, mtime)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Platform{}, fmt.Errorf("%s: %w", path, err)
	}
	p := Platform{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": goos, "arch": goarch}},
		URI:      name,
		Sha256:   hex.EncodeToString(h.Sum(nil)),
		Bin:      bin,
	}
	for _, e := range entries {
		p.Files = append(p.Files, File{From: e.name, To: "."})
	}
	return p, nil
}

func writeTarGz(w io.Writer, entries []entry, mtime time.Time) error {
	// No name or time in the gzip header: the bytes follow from the content.
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: e.name, Mode: int64(e.mode), Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, entries []entry, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		hdr.SetMode(e.mode)
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}
