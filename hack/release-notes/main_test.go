package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const changelog = `# Changelog

Intro text.

## [Unreleased]

### Added

- Something not yet released.

## [1.2.0-rc.1] - 2026-11-02

### Fixed

- A candidate's fix.

## [1.1.0] - 2026-10-01

### Added

- Feature one.
  Continued.

### Fixed

- Bug two.

## v1.0.0

- First.

[Unreleased]: https://example.com/compare/v1.1.0...HEAD
[1.1.0]: https://example.com/releases/tag/v1.1.0
`

func TestSection(t *testing.T) {
	for _, tc := range []struct {
		version, want string
	}{
		{"v1.1.0", "### Added\n\n- Feature one.\n  Continued.\n\n### Fixed\n\n- Bug two.\n"},
		{"1.1.0", "### Added\n\n- Feature one.\n  Continued.\n\n### Fixed\n\n- Bug two.\n"},
		{"v1.2.0-rc.1", "### Fixed\n\n- A candidate's fix.\n"},
		// The last section stops at the link definitions.
		{"v1.0.0", "- First.\n"},
	} {
		got, err := section([]byte(changelog), tc.version)
		if err != nil {
			t.Errorf("section(%s): %v", tc.version, err)
			continue
		}
		if got != tc.want {
			t.Errorf("section(%s) = %q, want %q", tc.version, got, tc.want)
		}
	}
}

func TestSectionMissingOrEmpty(t *testing.T) {
	empty := "## [2.0.0] - 2026-12-01\n\n\n## [1.0.0]\n\n- x\n"
	for _, tc := range []struct {
		changelog, version, wantErr string
	}{
		// A prefix of a listed version is not that version.
		{changelog, "v1.1", `no section "## [1.1]" for v1.1`},
		{changelog, "v9.9.9", `no section "## [9.9.9]" for v9.9.9`},
		{empty, "v2.0.0", `the section "## [2.0.0]" for v2.0.0 is empty`},
		{changelog, "v", "no version given"},
	} {
		got, err := section([]byte(tc.changelog), tc.version)
		if err == nil {
			t.Errorf("section(%s) = %q, want an error", tc.version, got)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("section(%s) error %q, want it to say %q", tc.version, err, tc.wantErr)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("section(%s) error %q spans lines", tc.version, err)
		}
	}
}

func TestRunNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(path, []byte(changelog), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run("v1.2.0-rc.1", path, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "### Fixed\n\n- A candidate's fix.\n" {
		t.Errorf("run wrote %q", out.String())
	}
	err := run("v3.0.0", path, &out)
	if err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("run(v3.0.0) error %v, want it to start with the file's name", err)
	}
}
