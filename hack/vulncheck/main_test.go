package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A govulncheck -format json stream: GO-1 called, GO-2 called (the one to
// accept), GO-3 only imported (no function at the trace's top).
const stream = `{"config":{"protocol_version":"v1.0.0","db":"file:///db","db_last_modified":"2026-11-05T12:00:00Z"}}
{"progress":{"message":"Scanning your code..."}}
{"osv":{"id":"GO-1","summary":"Panic in a"}}
{"osv":{"id":"GO-2","summary":"Flaw in kube-apiserver"}}
{"osv":{"id":"GO-3","summary":"Flaw in c"}}
{"finding":{"osv":"GO-1","fixed_version":"v1.2.0","trace":[{"module":"example.com/a","version":"v1.1.0","package":"example.com/a","function":"Do"},{"module":"example.com/me","package":"example.com/me","function":"main"}]}}
{"finding":{"osv":"GO-1","fixed_version":"v1.2.0","trace":[{"module":"example.com/a","version":"v1.1.0","package":"example.com/a","function":"Other"}]}}
{"finding":{"osv":"GO-2","trace":[{"module":"k8s.io/kubernetes","version":"v1.37.2","package":"k8s.io/kubernetes/pkg/x","function":"F"}]}}
{"finding":{"osv":"GO-3","fixed_version":"v0.3.0","trace":[{"module":"example.com/c","version":"v0.2.0","package":"example.com/c"}]}}
`

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name       string
		accepted   map[string]string
		wantFailed bool
		want       []string
		notWant    []string
	}{{
		name:       "nothing accepted",
		wantFailed: true,
		want: []string{
			"vulnerability data: file:///db, last modified 2026-11-05",
			"CALLED GO-1 in example.com/a@v1.1.0, fixed in v1.2.0: Panic in a",
			"CALLED GO-2 in k8s.io/kubernetes@v1.37.2, no fixed version: Flaw in kube-apiserver",
			"2 vulnerabilities called (0 accepted), 1 more in imported code that is not called",
		},
		notWant: []string{"GO-3:", "CALLED GO-3"},
	}, {
		name:       "one accepted, one not",
		accepted:   map[string]string{"GO-2": "not in a shipped binary"},
		wantFailed: true,
		want: []string{
			"CALLED GO-1 in example.com/a@v1.1.0",
			"accepted GO-2 (k8s.io/kubernetes@v1.37.2): not in a shipped binary",
			"2 vulnerabilities called (1 accepted)",
		},
	}, {
		name:     "all accepted, one stale",
		accepted: map[string]string{"GO-1": "r1", "GO-2": "r2", "GO-9": "r9"},
		want: []string{
			"accepted GO-9 is no longer called",
			"2 vulnerabilities called (2 accepted)",
		},
		notWant: []string{"CALLED"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			failed, err := judge(strings.NewReader(stream), tc.accepted, &out)
			if err != nil {
				t.Fatal(err)
			}
			if failed != tc.wantFailed {
				t.Errorf("failed = %v, want %v; output:\n%s", failed, tc.wantFailed, out.String())
			}
			for _, s := range tc.want {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(out.String(), s) {
					t.Errorf("output has %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestJudgeUndatedData(t *testing.T) {
	var out bytes.Buffer
	if _, err := judge(strings.NewReader(`{"config":{"db":"file:///osv","db_last_modified":"0001-01-01T00:00:00Z"}}`), nil, &out); err != nil {
		t.Fatal(err)
	}
	if want := "vulnerability data: file:///osv\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("output %q, want it to start with %q", out.String(), want)
	}
}

func TestJudgeBadStream(t *testing.T) {
	if _, err := judge(strings.NewReader("Scanning your code...\n"), nil, &bytes.Buffer{}); err == nil {
		t.Error("judge accepted text output, want an error")
	}
}

func TestReadAccepted(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("# comment\n\nGO-2025-1  kube-apiserver only   \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readAccepted(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["GO-2025-1"] != "kube-apiserver only" {
		t.Errorf("readAccepted = %v", got)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("GO-2025-1 why\nGO-2025-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readAccepted(bad); err == nil || !strings.Contains(err.Error(), bad+":2: GO-2025-2 has no reason") {
		t.Errorf("readAccepted(no reason) error %v", err)
	}
}
