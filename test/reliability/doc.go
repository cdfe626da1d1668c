// Package reliability runs the real placement-scheduler binary through
// faults and load and checks the apiserver's record of what it did: leader
// churn under load (SIGKILLs of whichever replica leads), kube-apiserver,
// etcd and network outages in the middle of a stream of pods, and a soak of
// pods created and deleted in waves while the scheduler's heap and
// goroutines are sampled.
//
// Every test reads its sizes from environment variables (knobs_test.go).
// The defaults are short variants, which `make test` runs; `make
// test-reliability` sets RELIABILITY_LONG=1, whose defaults are the full
// sizes (2,000 pods and 20 kills, 10-30 s outages, 20,000 pods against
// 500 nodes for 15 minutes). Each test logs a result row; with
// RELIABILITY_REPORT set, it also appends the row to that file (Markdown).
package reliability
