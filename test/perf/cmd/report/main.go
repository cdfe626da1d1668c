// Command report reads the data items a `make bench` run left in a
// directory and writes the side-by-side tables: report.md for people,
// report.json for machines. The Markdown is also printed to stdout.
//
//	go run ./test/perf/cmd/report -dir results/bench-<timestamp>
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/placement-scheduler/placement-scheduler/test/perf/report"
)

func main() {
	dir := flag.String("dir", "", "directory holding scheduler_perf's JSON data items (its -data-items-dir)")
	out := flag.String("out", "", "where to write report.md and report.json (default: -dir)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "report: -dir is required")
		os.Exit(2)
	}
	if *out == "" {
		*out = *dir
	}
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	res, err := report.Load(dir)
	if err != nil {
		return err
	}
	if len(res.Samples) == 0 {
		return fmt.Errorf("no data items in %s (did the benchmark run any workload?)", dir)
	}
	rep := report.Build(res)
	md := report.Markdown(rep)
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "report.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	fmt.Fprintf(os.Stderr, "report: wrote %s and %s\n", filepath.Join(out, "report.md"), filepath.Join(out, "report.json"))
	return nil
}
