package testutil

import (
	"fmt"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
)

// StatusString renders a status as "Code: message", "Code" when the message
// is empty, and "" for success (nil included). It is for tables that collect
// many statuses (per node, per extension point) and diff them as strings;
// single statuses are asserted with CheckStatus.
func StatusString(s *fwk.Status) string {
	if s.IsSuccess() {
		return ""
	}
	if s.Message() == "" {
		return s.Code().String()
	}
	return fmt.Sprintf("%s: %s", s.Code(), s.Message())
}

// CheckStatus is the one status assertion of our plugin tests: it reports
// (t.Errorf) unless got has exactly wantCode and wantMsg. A nil status is
// Success with an empty message, as the framework treats it. what names the
// call being checked, e.g. "Filter(node-a)". The result lets a caller stop
// when later checks would only repeat the failure:
//
//	if !testutil.CheckStatus(t, "PreFilter", st, fwk.Success, "") { return }
func CheckStatus(t testing.TB, what string, got *fwk.Status, wantCode fwk.Code, wantMsg string) bool {
	t.Helper()
	if got.Code() == wantCode && got.Message() == wantMsg {
		return true
	}
	// Code and message are printed separately: StatusString would hide a
	// message carried by a Success status.
	t.Errorf("%s = %v %q, want %v %q", what, got.Code(), got.Message(), wantCode, wantMsg)
	return false
}
