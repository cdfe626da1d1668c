package reliability

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// LongEnv selects the long variants' defaults (the full sizes); the
// Makefile's test-reliability target sets it. Every size below can also be
// set on its own.
const LongEnv = "RELIABILITY_LONG"

// ReportEnv names a file each test appends its Markdown result row to.
const ReportEnv = "RELIABILITY_REPORT"

func long() bool { return os.Getenv(LongEnv) == "1" }

// knob is the value of the environment variable name, parsed, else short
// or, with LongEnv=1, long. want says what a value looks like.
func knob[T any](t testing.TB, name string, short, long_ T, want string, parse func(string) (T, bool)) T {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if long() {
			return long_
		}
		return short
	}
	x, ok := parse(v)
	if !ok {
		t.Fatalf("%s=%q: want %s", name, v, want)
	}
	return x
}

// intKnob is a non-negative integer knob.
func intKnob(t testing.TB, name string, short, long_ int) int {
	t.Helper()
	return knob(t, name, short, long_, "a non-negative integer", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0
	})
}

// durationKnob is a time.Duration knob ("20s", "15m").
func durationKnob(t testing.TB, name string, short, long_ time.Duration) time.Duration {
	t.Helper()
	return knob(t, name, short, long_, "a duration such as 20s", func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		return d, err == nil && d >= 0
	})
}

// report logs a result row and appends it to $RELIABILITY_REPORT, if set.
func report(t testing.TB, row string) {
	t.Helper()
	t.Logf("result: %s", row)
	path := os.Getenv(ReportEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("%s: %v", ReportEnv, err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "| %s | %s |\n", time.Now().UTC().Format("15:04"), row); err != nil {
		t.Errorf("%s: %v", ReportEnv, err)
	}
}

// loadAverage is /proc/loadavg's first three fields, for the report.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	var a, b5, c string
	if _, err := fmt.Sscan(string(b), &a, &b5, &c); err != nil {
		return "?"
	}
	return a + " " + b5 + " " + c
}
