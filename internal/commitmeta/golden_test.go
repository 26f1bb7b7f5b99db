package commitmeta

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// top is the largest offset.
const top = math.MaxInt64

// epochRange is a delivered range and the leader epoch of its last record,
// the value l= carries when the range is the last one kept.
type epochRange struct {
	from, to int64
	epoch    int32
}

// The reports of the golden commits: plain ones, and ones that exercise the
// escaping of the stall's text, the largest numbers and a cause that is not
// one of the constants.
var (
	plainStall = Stall{Report: Report{First: 1200, Last: 1209, Since: since, Reason: "http 503"}, Attempts: 3, Member: "orders-sink@pod-7"}
	oddStall   = Stall{Report: Report{First: 1200, Last: 1200, Since: since.Add(1500 * time.Microsecond), Reason: "tab\there \u00e9 100%+"}, Attempts: math.MaxInt32, Member: "a b/c~d_e.f-g"}
	plainLoss  = Loss{Report: Report{First: 100, Last: 1199, Since: since, Reason: CauseRetention}, Count: 1100}
	oddLoss    = Loss{Report: Report{First: 0, Last: math.MaxInt64 - 1, Since: since, Reason: "weird"}, Count: math.MaxInt64}
)

// goldenCommits pins the bytes of one commit's metadata as the plugin wrote
// them at 23d44c0: plugin/metadata.go's encodeMeta, given the stall
// provenance and the loss report joined as plugin/metadata.go's plan joins
// them and an epochOf that answers each range's epoch. The strings were
// printed by running that code, not written by hand; a change to any of
// them is a change of the wire format.
//
// Only states where that code's answer is self-consistent are here: l= is
// the epoch of the last range kept, and no more ranges would fit. Near some
// limits its retry loop (up to three Encodes) answers otherwise: see
// commitFixes.
var goldenCommits = []struct {
	name     string
	base     int64
	epoch    int32
	ranges   []epochRange
	stall    *Stall
	loss     *Loss
	maxBytes int
	want     string
	cut      int
	keptTo   int64
}{
	{"nothing above the base: generous", 1200, 3, []epochRange{}, nil, nil, 4096, "wm1 o=1200 e=3", 0, 1200},
	{"nothing above the base: exactly filling", 1200, 3, []epochRange{}, nil, nil, 14, "wm1 o=1200 e=3", 0, 1200},
	{"nothing above the base: too small for the header", 1200, 3, []epochRange{}, nil, nil, 13, "", 0, 1200},
	{"ranges: generous", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 4096, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 l=12", 0, 2001},
	{"ranges: exactly filling", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 46, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 l=12", 0, 2001},
	{"ranges: one byte short: the last range is cut", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 44, "wm1 o=1200 e=3 d=10.50,20.40,80.100 l=4", 1, 1500},
	{"ranges: two ranges cut", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 30, "wm1 o=1200 e=3 d=10.50 l=3", 3, 1260},
	{"ranges: no range fits", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 21, "wm1 o=1200 e=3", 4, 1200},
	{"ranges: exactly the header", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 14, "wm1 o=1200 e=3", 4, 1200},
	{"ranges: too small for the header", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 13, "", 4, 1200},
	{"ranges, epochs unknown: generous", 0, -1, []epochRange{{5, 6, -1}, {8, 9, -1}}, nil, nil, 4096, "wm1 o=0 e=-1 d=5.1,2.1 l=-1", 0, 9},
	{"ranges, epochs unknown: exactly filling", 0, -1, []epochRange{{5, 6, -1}, {8, 9, -1}}, nil, nil, 27, "wm1 o=0 e=-1 d=5.1,2.1 l=-1", 0, 9},
	{"ranges, epochs unknown: one range", 0, -1, []epochRange{{5, 6, -1}, {8, 9, -1}}, nil, nil, 23, "wm1 o=0 e=-1 d=5.1 l=-1", 1, 6},
	{"ranges, epochs unknown: header only", 0, -1, []epochRange{{5, 6, -1}, {8, 9, -1}}, nil, nil, 17, "wm1 o=0 e=-1", 2, 0},
	{"a stall: generous", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, nil, 4096, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=12", 0, 2001},
	{"a stall: exactly filling", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, nil, 119, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=12", 0, 2001},
	{"a stall: ranges cut before the stall", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, nil, 100, "wm1 o=1200 e=3 d=10.50 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=3", 3, 1260},
	{"a stall: exactly the header and the stall", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, nil, 87, "wm1 o=1200 e=3 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503", 4, 1200},
	{"a stall: too small for the header", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, nil, 13, "", 4, 1200},
	{"a loss: generous", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, &plainLoss, 4096, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=12", 0, 2001},
	{"a loss: exactly filling", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, &plainLoss, 99, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=12", 0, 2001},
	{"a loss: ranges cut before the loss", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, &plainLoss, 80, "wm1 o=1200 e=3 d=10.50 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=3", 3, 1260},
	{"a loss: exactly the header and the loss", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, &plainLoss, 67, "wm1 o=1200 e=3 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention", 4, 1200},
	{"a stall and a loss: generous", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 4096, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=12", 0, 2001},
	{"a stall and a loss: exactly filling", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 172, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=12", 0, 2001},
	{"a stall and a loss: one range cut", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 169, "wm1 o=1200 e=3 d=10.50,20.40,80.100 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=4", 1, 1500},
	{"a stall and a loss: two ranges cut", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 160, "wm1 o=1200 e=3 d=10.50,20.40 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=4", 2, 1320},
	{"a stall and a loss: exactly the header and both reports", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 140, "wm1 o=1200 e=3 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention", 4, 1200},
	{"a stall and a loss: too small for the header", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 13, "", 4, 1200},
	{"a stall and a loss, nothing above the base: generous", 1200, 3, []epochRange{}, &plainStall, &plainLoss, 4096, "wm1 o=1200 e=3 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention", 0, 1200},
	{"a stall and a loss, nothing above the base: exactly filling", 1200, 3, []epochRange{}, &plainStall, &plainLoss, 140, "wm1 o=1200 e=3 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention", 0, 1200},
	{"a stall only: generous", 1200, 3, []epochRange{}, &plainStall, nil, 4096, "wm1 o=1200 e=3 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503", 0, 1200},
	{"a loss only: generous", 1200, 3, []epochRange{}, nil, &plainLoss, 4096, "wm1 o=1200 e=3 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention", 0, 1200},
	{"escapes, extremes: generous", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &oddStall, &oddLoss, 4096, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 sf=1200 sl=1200 ss=1767225600001 sa=2147483647 sm=a+b%2Fc~d_e.f-g sr=tab+here+%3F%3F+100%25%2B lf=0 ll=9223372036854775806 ln=9223372036854775807 ls=1767225600000 lc=unknown l=12", 0, 2001},
	{"escapes, extremes: exactly filling", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &oddStall, &oddLoss, 220, "wm1 o=1200 e=3 d=10.50,20.40,80.100,500.1 sf=1200 sl=1200 ss=1767225600001 sa=2147483647 sm=a+b%2Fc~d_e.f-g sr=tab+here+%3F%3F+100%25%2B lf=0 ll=9223372036854775806 ln=9223372036854775807 ls=1767225600000 lc=unknown l=12", 0, 2001},
	{"largest numbers: generous", top - 10, math.MaxInt32, []epochRange{{top - 9, top - 5, math.MaxInt32}, {top - 2, top, math.MaxInt32}}, nil, nil, 4096, "wm1 o=9223372036854775797 e=2147483647 d=1.4,3.2 l=2147483647", 0, top},
	{"largest numbers: exactly filling", top - 10, math.MaxInt32, []epochRange{{top - 9, top - 5, math.MaxInt32}, {top - 2, top, math.MaxInt32}}, nil, nil, 61, "wm1 o=9223372036854775797 e=2147483647 d=1.4,3.2 l=2147483647", 0, top},
	{"largest numbers: one range", top - 10, math.MaxInt32, []epochRange{{top - 9, top - 5, math.MaxInt32}, {top - 2, top, math.MaxInt32}}, nil, nil, 60, "wm1 o=9223372036854775797 e=2147483647 d=1.4 l=2147483647", 1, top - 5},
	{"largest numbers: exactly the header", top - 10, math.MaxInt32, []epochRange{{top - 9, top - 5, math.MaxInt32}, {top - 2, top, math.MaxInt32}}, nil, nil, 38, "wm1 o=9223372036854775797 e=2147483647", 2, top - 10},
	{"largest numbers: too small for the header", top - 10, math.MaxInt32, []epochRange{{top - 9, top - 5, math.MaxInt32}, {top - 2, top, math.MaxInt32}}, nil, nil, 37, "", 2, top - 10},
	{"epoch crosses a digit: generous", 1200, 9, []epochRange{{1210, 1260, 9}, {1280, 1320, 10}}, nil, nil, 4096, "wm1 o=1200 e=9 d=10.50,20.40 l=10", 0, 1320},
	{"epoch crosses a digit: exactly filling", 1200, 9, []epochRange{{1210, 1260, 9}, {1280, 1320, 10}}, nil, nil, 33, "wm1 o=1200 e=9 d=10.50,20.40 l=10", 0, 1320},
	{"epoch crosses a digit: the shorter l leaves one range", 1200, 9, []epochRange{{1210, 1260, 9}, {1280, 1320, 10}}, nil, nil, 31, "wm1 o=1200 e=9 d=10.50 l=9", 1, 1260},
	{"epoch crosses a digit, with a stall: generous", 1200, 9, []epochRange{{1210, 1260, 9}, {1280, 1320, 10}, {1330, 1331, 100}}, &plainStall, nil, 4096, "wm1 o=1200 e=9 d=10.50,20.40,10.1 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=100", 0, 1331},
	{"epoch crosses a digit, with a stall: exactly filling", 1200, 9, []epochRange{{1210, 1260, 9}, {1280, 1320, 10}, {1330, 1331, 100}}, &plainStall, nil, 112, "wm1 o=1200 e=9 d=10.50,20.40,10.1 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=100", 0, 1331},
	{"epoch crosses a digit, with a stall: two ranges", 1200, 9, []epochRange{{1210, 1260, 9}, {1280, 1320, 10}, {1330, 1331, 100}}, &plainStall, nil, 110, "wm1 o=1200 e=9 d=10.50,20.40 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 l=10", 1, 1320},
	{"unknown then known epoch: generous", 1200, -1, []epochRange{{1210, 1260, -1}, {1280, 1320, 5}, {1330, 1340, 5}}, nil, nil, 4096, "wm1 o=1200 e=-1 d=10.50,20.40,10.10 l=5", 0, 1340},
	{"unknown then known epoch: exactly filling", 1200, -1, []epochRange{{1210, 1260, -1}, {1280, 1320, 5}, {1330, 1340, 5}}, nil, nil, 39, "wm1 o=1200 e=-1 d=10.50,20.40,10.10 l=5", 0, 1340},
	{"unknown then known epoch: two ranges", 1200, -1, []epochRange{{1210, 1260, -1}, {1280, 1320, 5}, {1330, 1340, 5}}, nil, nil, 33, "wm1 o=1200 e=-1 d=10.50,20.40 l=5", 1, 1320},
	{"unknown then two-digit epoch: generous", 1200, -1, []epochRange{{1210, 1260, -1}, {1280, 1320, 5}, {1330, 1340, 50}}, nil, nil, 4096, "wm1 o=1200 e=-1 d=10.50,20.40,10.10 l=50", 0, 1340},
	{"spiky: generous", 0, 0, []epochRange{{1, 2, 0}, {1000000000, 1000000001, 1}, {1000000003, 1000000004, 1}}, nil, nil, 4096, "wm1 o=0 e=0 d=1.1,999999998.1,2.1 l=1", 0, 1000000004},
	{"spiky: a prefix stops at the long range", 0, 0, []epochRange{{1, 2, 0}, {1000000000, 1000000001, 1}, {1000000003, 1000000004, 1}}, nil, nil, 28, "wm1 o=0 e=0 d=1.1 l=0", 2, 2},
}

// goldenMeta returns the Meta of a golden commit's header and ranges.
func goldenMeta(base int64, epoch int32, ranges []epochRange) Meta {
	m := Meta{Base: base, Epoch: epoch}
	for _, r := range ranges {
		m.Delivered = append(m.Delivered, Range{r.from, r.to})
	}
	return m
}

// TestGoldenEncode checks each golden commit against Encode given the extra
// fields the plugin passes for the ranges the commit keeps: the stall
// provenance, the loss report and l=. The golden strings are fixed points of
// the plugin's retry loop, so one Encode with the right l reproduces them.
func TestGoldenEncode(t *testing.T) {
	for _, tc := range goldenCommits {
		var extra []string
		if tc.stall != nil {
			extra = append(extra, tc.stall.Fields())
		}
		if tc.loss != nil {
			extra = append(extra, tc.loss.Fields())
		}
		kept := len(tc.ranges) - tc.cut
		keptTo := tc.base
		if kept > 0 {
			extra = append(extra, "l="+strconv.Itoa(int(tc.ranges[kept-1].epoch)))
			keptTo = tc.ranges[kept-1].to
		}
		got, cut := Encode(goldenMeta(tc.base, tc.epoch, tc.ranges), strings.Join(extra, " "), tc.maxBytes)
		if got != tc.want || cut != tc.cut || keptTo != tc.keptTo {
			t.Errorf("%s: Encode = %q, cut %d, keptTo %d, want %q, cut %d, keptTo %d", tc.name, got, cut, keptTo, tc.want, tc.cut, tc.keptTo)
		}
	}
}

// goldenCommit returns the Commit of a golden row and the epochs of its ranges.
func goldenCommit(base int64, epoch int32, ranges []epochRange, stall *Stall, loss *Loss) (Commit, []int32) {
	m := goldenMeta(base, epoch, ranges)
	epochs := make([]int32, len(ranges))
	for i, r := range ranges {
		epochs[i] = r.epoch
	}
	return Commit{Base: base, Epoch: epoch, Stall: stall, Loss: loss, Delivered: m.Delivered}, epochs
}

// TestGoldenEncodeCommit holds EncodeCommit to the bytes the plugin wrote,
// and each golden commit to checkEncodeCommit.
func TestGoldenEncodeCommit(t *testing.T) {
	for _, tc := range goldenCommits {
		c, epochs := goldenCommit(tc.base, tc.epoch, tc.ranges, tc.stall, tc.loss)
		var calls int
		c.EpochOf = epochsOf(t, c.Delivered, epochs, &calls)
		got, cut, keptTo := EncodeCommit(c, tc.maxBytes)
		if got != tc.want || cut != tc.cut || keptTo != tc.keptTo {
			t.Errorf("%s: EncodeCommit = %q, cut %d, keptTo %d, want %q, cut %d, keptTo %d", tc.name, got, cut, keptTo, tc.want, tc.cut, tc.keptTo)
		}
		checkEncodeCommit(t, tc.name, c, epochs, tc.maxBytes)
	}
}

// commitFixes are the states for which the plugin's encodeMeta, at
// 23d44c0, wrote what today holds (printed by running it, as the golden
// strings were), and what EncodeCommit writes instead. encodeMeta encoded
// with the l= of the ranges it kept the time before, up to three times, and
// kept the third answer whether or not it had settled. So near a budget's
// limit, where the length of l= decides whether a range fits:
//
//   - it wrote the l= of a range it then cut, higher than the epoch of the
//     last range kept (l of a cut range): the reader's check then misses a
//     record of the kept ranges rewritten in any epoch up to that l=;
//   - it wrote ranges with no l= at all, which the reader refuses, so the
//     commit skipped nothing after a restart (ranges without l);
//   - it kept fewer ranges than fit, when -1 (two bytes) stood before a
//     one-digit epoch (fewer ranges than fit);
//   - it wrote l= with no ranges (l without ranges), or nothing at all
//     where the header fits (nothing, though the header fits).
//
// And it gave the header and all the reports their room together, so a
// budget too small for the stall and the loss got no metadata at all; the
// priority order writes the header, then the stall, then the loss, each
// while it fits (the rows whose today is ""). When the whole stall does not
// fit after the header, its mark does (issue 29: the header alone read as
// a partition that is not stalled).
var commitFixes = []struct {
	name     string
	base     int64
	epoch    int32
	ranges   []epochRange
	stall    *Stall
	loss     *Loss
	maxBytes int
	want     string
	cut      int
	keptTo   int64
	today    string // what encodeMeta wrote
}{
	{"ranges: l of a cut range", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 45, "wm1 o=1200 e=3 d=10.50,20.40,80.100 l=4", 1, 1500, "wm1 o=1200 e=3 d=10.50,20.40,80.100 l=12"},
	{"epoch crosses a digit: l of a cut range", 1200, 9, []epochRange{{1210, 1260, 9}, {1280, 1320, 10}}, nil, nil, 32, "wm1 o=1200 e=9 d=10.50 l=9", 1, 1260, "wm1 o=1200 e=9 d=10.50 l=10"},
	{"unknown then known epoch: ranges without l", 1200, -1, []epochRange{{1210, 1260, -1}, {1280, 1320, 5}, {1330, 1340, 5}}, nil, nil, 27, "wm1 o=1200 e=-1", 3, 1200, "wm1 o=1200 e=-1 d=10.50"},
	{"unknown then two-digit epoch: fewer ranges than fit", 1200, -1, []epochRange{{1210, 1260, -1}, {1280, 1320, 5}, {1330, 1340, 50}}, nil, nil, 33, "wm1 o=1200 e=-1 d=10.50,20.40 l=5", 1, 1320, "wm1 o=1200 e=-1 d=10.50 l=-1"},
	{"ranges: l without ranges", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, nil, nil, 22, "wm1 o=1200 e=3", 4, 1200, "wm1 o=1200 e=3 l=3"},
	{"a stall: the header fits, the stall does not", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, nil, 50, "wm1 o=1200 e=3 sf=1200", 4, 1200, ""},
	{"a stall: the header fits, the stall's mark does not", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, nil, 21, "", 4, 1200, ""},
	{"a stall and a loss, nothing above the base: the stall fits, the loss does not", 1200, 3, []epochRange{}, &plainStall, &plainLoss, 139, "wm1 o=1200 e=3 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503", 0, 1200, ""},
	{"a stall and a loss: the stall fits, the loss does not", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 100, "wm1 o=1200 e=3 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503", 4, 1200, ""},
	{"a stall and a loss: l of a cut range", 1200, 3, []epochRange{{1210, 1260, 3}, {1280, 1320, 4}, {1400, 1500, 4}, {2000, 2001, 12}}, &plainStall, &plainLoss, 171, "wm1 o=1200 e=3 d=10.50,20.40,80.100 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=4", 1, 1500, "wm1 o=1200 e=3 d=10.50,20.40,80.100 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=12"},
	{"largest numbers: nothing, though the header fits", top - 10, math.MaxInt32, []epochRange{{top - 9, top - 5, math.MaxInt32}, {top - 2, top, math.MaxInt32}}, nil, nil, 50, "wm1 o=9223372036854775797 e=2147483647", 2, top - 10, ""},
}

func TestEncodeCommitFixes(t *testing.T) {
	for _, tc := range commitFixes {
		c, epochs := goldenCommit(tc.base, tc.epoch, tc.ranges, tc.stall, tc.loss)
		var calls int
		c.EpochOf = epochsOf(t, c.Delivered, epochs, &calls)
		got, cut, keptTo := EncodeCommit(c, tc.maxBytes)
		if got != tc.want || cut != tc.cut || keptTo != tc.keptTo {
			t.Errorf("%s: EncodeCommit = %q, cut %d, keptTo %d, want %q, cut %d, keptTo %d (encodeMeta wrote %q)",
				tc.name, got, cut, keptTo, tc.want, tc.cut, tc.keptTo, tc.today)
		}
		checkEncodeCommit(t, tc.name, c, epochs, tc.maxBytes)
	}
}
