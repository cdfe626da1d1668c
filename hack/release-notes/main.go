// Command release-notes prints the CHANGELOG.md section of one version: the
// body of the GitHub release the release workflow creates for its tag.
//
//	go run ./hack/release-notes -version v0.1.0 CHANGELOG.md > notes.md
//
// The section is the one under the heading `## [0.1.0]` (Keep a Changelog,
// with or without the leading v, date or not), up to the next `## ` heading
// or the link definitions at the bottom. A tag without a section, or with an
// empty one, is an error: a release must say what it changes.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// A link reference definition ("[0.1.0]: https://...") ends the last section.
var linkDefinition = regexp.MustCompile(`^\[[^\]]+\]:\s`)

func main() {
	version := flag.String("version", "", "the release's tag, vX.Y.Z")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: release-notes -version vX.Y.Z CHANGELOG.md")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *version == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*version, flag.Arg(0), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release-notes:", err)
		os.Exit(1)
	}
}

func run(version, path string, w io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	notes, err := section(b, version)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, err = io.WriteString(w, notes)
	return err
}

// section returns the lines under version's heading, blank lines around them
// trimmed, with a final newline.
func section(changelog []byte, version string) (string, error) {
	want := strings.TrimPrefix(version, "v")
	if want == "" {
		return "", errors.New("no version given")
	}
	var lines []string
	in, found := false, false
	sc := bufio.NewScanner(bytes.NewReader(changelog))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			if headingVersion(line) == want {
				in, found = true, true
			}
			continue
		}
		if !in {
			continue
		}
		if linkDefinition.MatchString(line) {
			break
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("no section %q for %s; add `## [%s] - YYYY-MM-DD` with the release's changes (docs/releasing.md)", "## ["+want+"]", version, want)
	}
	notes := strings.Trim(strings.Join(lines, "\n"), "\n")
	if strings.TrimSpace(notes) == "" {
		return "", fmt.Errorf("the section %q for %s is empty; list the release's changes under it", "## ["+want+"]", version)
	}
	return notes + "\n", nil
}

// headingVersion reads the version of a `## [X.Y.Z] - date` heading (the
// brackets optional, a leading v ignored); "" for any other heading.
func headingVersion(line string) string {
	h := strings.TrimSpace(strings.TrimPrefix(line, "## "))
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return ""
		}
		h = h[1:end]
	} else if f := strings.Fields(h); len(f) > 0 {
		h = f[0]
	}
	return strings.TrimPrefix(h, "v")
}
