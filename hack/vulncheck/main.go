// Command vulncheck judges govulncheck's findings: it reads the JSON stream
// of `govulncheck -format json` on stdin and fails when the code calls a
// vulnerable symbol whose report is not accepted in the -accept file.
//
//	govulncheck -db file://... -format json ./... | go run ./hack/vulncheck -accept tools/vuln/accepted.txt
//
// govulncheck has no way to accept a finding, and some reports can never be
// fixed by a module upgrade (k8s.io/kubernetes' reports of kube-apiserver or
// kubelet flaws name every version of the module, fixed in none). The
// accept file lists those, one report ID and the reason per line; anything
// else the code reaches fails the check, naming the module and the fix.
// Findings in imported packages or required modules that the code does not
// call are counted, not failed, as govulncheck's own text output does.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	accept := flag.String("accept", "", "file of accepted report IDs, one `GO-YYYY-NNNN reason` per line")
	flag.Parse()
	accepted := map[string]string{}
	if *accept != "" {
		var err error
		if accepted, err = readAccepted(*accept); err != nil {
			fmt.Fprintln(os.Stderr, "vulncheck:", err)
			os.Exit(2)
		}
	}
	failed, err := judge(os.Stdin, accepted, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// message is one object of govulncheck's JSON stream (x/vuln's
// internal/govulncheck.Message), only the fields read here.
type message struct {
	Config *struct {
		DB             string     `json:"db"`
		DBLastModified *time.Time `json:"db_last_modified"`
	} `json:"config"`
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
	Finding *struct {
		OSV          string `json:"osv"`
		FixedVersion string `json:"fixed_version"`
		Trace        []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Function string `json:"function"`
		} `json:"trace"`
	} `json:"finding"`
}

type called struct {
	id, module, version, fixed string
}

// judge reports the stream's called findings; failed when one is not accepted.
func judge(r io.Reader, accepted map[string]string, w io.Writer) (failed bool, err error) {
	summaries := map[string]string{}
	calls := map[string]called{}
	uncalled := map[string]bool{}
	dec := json.NewDecoder(r)
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return false, fmt.Errorf("reading govulncheck's JSON output: %w", err)
		}
		switch {
		case m.Config != nil:
			// A flat directory of OSV files (make vuln's pinned data) has no
			// index to date it: its age is the pinned module version's.
			if t := m.Config.DBLastModified; t != nil && !t.IsZero() {
				fmt.Fprintf(w, "vulnerability data: %s, last modified %s\n", m.Config.DB, t.UTC().Format(time.DateOnly))
			} else {
				fmt.Fprintf(w, "vulnerability data: %s\n", m.Config.DB)
			}
		case m.OSV != nil:
			summaries[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil && len(m.Finding.Trace) > 0:
			f := m.Finding
			// The trace starts at the vulnerable symbol; a function there
			// means govulncheck found a call path to it.
			if f.Trace[0].Function == "" {
				uncalled[f.OSV] = true
				continue
			}
			calls[f.OSV] = called{id: f.OSV, module: f.Trace[0].Module, version: f.Trace[0].Version, fixed: f.FixedVersion}
		}
	}
	ids := make([]string, 0, len(calls))
	for id := range calls {
		ids = append(ids, id)
		delete(uncalled, id)
	}
	slices.Sort(ids)
	nAccepted := 0
	for _, id := range ids {
		c := calls[id]
		fixed := "no fixed version"
		if c.fixed != "" {
			fixed = "fixed in " + c.fixed
		}
		if reason, ok := accepted[id]; ok {
			nAccepted++
			fmt.Fprintf(w, "accepted %s (%s@%s): %s\n", id, c.module, c.version, reason)
			continue
		}
		failed = true
		fmt.Fprintf(w, "CALLED %s in %s@%s, %s: %s (https://pkg.go.dev/vuln/%s)\n", id, c.module, c.version, fixed, summaries[id], id)
	}
	for _, id := range slices.Sorted(maps.Keys(accepted)) {
		if _, ok := calls[id]; !ok {
			fmt.Fprintf(w, "accepted %s is no longer called: remove it from the accept file\n", id)
		}
	}
	fmt.Fprintf(w, "%d vulnerabilities called (%d accepted), %d more in imported code that is not called\n",
		len(ids), nAccepted, len(uncalled))
	return failed, nil
}

// readAccepted reads `ID reason` lines; blank lines and # comments are skipped.
func readAccepted(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	accepted := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: %s has no reason; write why it is accepted after the ID", path, n, id)
		}
		accepted[id] = strings.TrimSpace(reason)
	}
	return accepted, sc.Err()
}
