package commitmeta

import (
	"math"
	"strings"
	"testing"
)

// TestStallMarkFitsTheSmallestBudget pins issue 29: with
// commit_metadata_max_bytes: 64 (the least the plugin accepts), or after a
// broker refused metadata and the budget was halved, the stall provenance
// did not fit and the commit was the header alone, which `status` read as
// a partition that is not stalled (STALLED no, exit 0) while the pipeline
// logged the stall. The whole provenance still does not fit; its mark
// must, whatever the offsets and epoch.
func TestStallMarkFitsTheSmallestBudget(t *testing.T) {
	if MinCommitBudget != 61 || MinCommitBudget > 64 {
		t.Fatalf("MinCommitBudget = %d, want 61: within the plugin's smallest commit_metadata_max_bytes (64)", MinCommitBudget)
	}
	worst := Stall{Report: Report{First: math.MaxInt64, Last: math.MaxInt64, Since: since, Reason: "http 503"}, Attempts: 3, Member: "orders-sink@pod-7"}
	for _, tc := range []struct {
		name     string
		c        Commit
		maxBytes int
		want     string
	}{
		{"plain, 64 bytes", Commit{Base: 1200, Epoch: 3, Stall: &plainStall, Loss: &plainLoss}, 64,
			"wm1 o=1200 e=3 sf=1200"},
		{"plain, ranges and attempts too, 64 bytes", Commit{Base: 1200, Epoch: 3, Stall: &plainStall,
			Attempts: []Attempts{{From: 1200, To: 1210, N: 3}}, Delivered: []Range{{1210, 1260}}, EpochOf: func(int64) int32 { return 3 }}, 64,
			"wm1 o=1200 e=3 sf=1200"},
		{"the longest header and mark, 64 bytes", Commit{Base: math.MaxInt64, Epoch: math.MaxInt32, Stall: &worst}, 64,
			"wm1 o=9223372036854775807 e=2147483647 sf=9223372036854775807"},
		{"the longest header and mark, MinCommitBudget", Commit{Base: math.MaxInt64, Epoch: math.MaxInt32, Stall: &worst}, MinCommitBudget,
			"wm1 o=9223372036854775807 e=2147483647 sf=9223372036854775807"},
		// Below it, never the header alone: no metadata, which cannot say.
		{"the longest header and mark, one byte short", Commit{Base: math.MaxInt64, Epoch: math.MaxInt32, Stall: &worst}, MinCommitBudget - 1,
			""},
		// A commit that carries a mark it read back keeps writing it.
		{"a mark carried", Commit{Base: 1200, Epoch: 3, Stall: &Stall{Report: Report{First: 1200}, MarkOnly: true}}, 4096,
			"wm1 o=1200 e=3 sf=1200"},
	} {
		got, _ := EncodeCommitKept(tc.c, tc.maxBytes)
		if got != tc.want {
			t.Errorf("%s: EncodeCommit(%d) = %q, want %q", tc.name, tc.maxBytes, got, tc.want)
			continue
		}
		if got == "" {
			continue
		}
		d, err := DecodeCommit(got)
		if err != nil || d.StallErr != nil || d.Stall == nil || !d.Stall.MarkOnly || d.Stall.First != tc.c.Stall.First {
			t.Errorf("%s: DecodeCommit(%q) = stall %+v, %v, %v, want the mark at %d", tc.name, got, d.Stall, d.StallErr, err, tc.c.Stall.First)
		}
	}
}

// TestStallMarkDecode checks that sf alone reads as the mark, and that sf
// with some but not all of the other five keys is still malformed.
func TestStallMarkDecode(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     *Stall
		stallErr string
	}{
		{"wm1 o=1200 e=3 sf=1200", &Stall{Report: Report{First: 1200}, MarkOnly: true}, ""},
		{"wm1 o=1200 e=3 d=10.50 sf=1205 l=3", &Stall{Report: Report{First: 1205}, MarkOnly: true}, ""},
		{"wm1 o=1200 e=3 sf=1200 sl=1209", nil, "stall field ss"},
		{"wm1 o=1200 e=3 sf=1200 sr=http+503", nil, "stall field sl"},
		{"wm1 o=1200 e=3 sf=01200", nil, "stall field sf"},
		{"wm1 o=1200 e=3 sf=-1", nil, "stall field sf"},
		{"wm1 o=1200 e=3 sf=", nil, "stall field sf"},
		{"wm1 o=1200 e=3 sl=1209", nil, ""},
	} {
		d, err := DecodeCommit(tc.in)
		if err != nil {
			t.Fatalf("DecodeCommit(%q) = %v", tc.in, err)
		}
		gotErr := ""
		if d.StallErr != nil {
			gotErr = d.StallErr.Error()
		}
		if (d.Stall == nil) != (tc.want == nil) || d.Stall != nil && !sameStall(*d.Stall, *tc.want) ||
			tc.stallErr == "" && gotErr != "" || tc.stallErr != "" && !strings.Contains(gotErr, tc.stallErr) {
			t.Errorf("DecodeCommit(%q) = stall %+v, error %q, want %+v, an error naming %q", tc.in, d.Stall, gotErr, tc.want, tc.stallErr)
		}
	}
}
