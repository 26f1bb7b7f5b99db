package commitmeta

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// plainDeadLetter is the dead-letter report of the tests below.
var plainDeadLetter = DeadLetter{Report: Report{First: 100, Last: 140, Since: since, Reason: "http 503"}, Count: 12}

// TestEncodeCommitAttemptsAndDeadLetter pins the bytes of commits with the
// new parts, and where the budget cuts them: the attempts keep the longest
// prefix that fits and never end the metadata; the dead-letter report is
// written whole or ends it.
func TestEncodeCommitAttemptsAndDeadLetter(t *testing.T) {
	const (
		h  = "wm1 o=1200 e=3"
		d2 = " d=10.50,20.40"
		d1 = " d=10.50"
		st = " sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503"
		a1 = " a=0.10.3"
		a2 = ",0.5.1"
		x  = " xf=100 xl=140 xn=12 xs=1767225600000 xr=http+503"
	)
	full := h + d2 + st + a1 + a2 + x + " l=4"
	attempts := []Attempts{{1200, 1210, 3}, {1210, 1215, 1}}
	// " a=1000000000000000000.1000000000000000000.2147483647": 53 bytes,
	// more than the dead-letter report.
	far := []Attempts{{1200 + 1e18, 1200 + 2e18, math.MaxInt32}}
	for _, tc := range []struct {
		name     string
		attempts []Attempts
		dead     *DeadLetter
		maxBytes int
		want     string
		kept     Kept
	}{
		{"generous", attempts, &plainDeadLetter, 4096, full, Kept{0, 1320, 2}},
		{"exactly filling", attempts, &plainDeadLetter, len(full), full, Kept{0, 1320, 2}},
		{"one byte short: a range is cut", attempts, &plainDeadLetter, len(full) - 1, h + d1 + st + a1 + a2 + x + " l=3", Kept{1, 1260, 2}},
		{"no range fits", attempts, &plainDeadLetter, len(h+st+a1+a2+x+" d=10.50 l=3") - 1, h + st + a1 + a2 + x, Kept{2, 1200, 2}},
		{"the dead letter does not fit: it ends the metadata", attempts, &plainDeadLetter, len(h+st+a1+a2+x) - 1, h + st + a1 + a2, Kept{2, 1200, 2}},
		{"one run of attempts is cut", attempts, &plainDeadLetter, len(h+st+a1+a2) - 1, h + st + a1, Kept{2, 1200, 1}},
		{"no run fits: the part is empty", attempts, &plainDeadLetter, len(h+st+a1) - 1, h + st, Kept{2, 1200, 0}},
		{"no run fits, the ranges go on", far, nil, len(h + st + d1 + " l=3"), h + d1 + st + " l=3", Kept{1, 1260, 0}},
		{"no run fits, the dead letter goes on", far, &plainDeadLetter, len(h + st + x), h + st + x, Kept{2, 1200, 0}},
		{"attempts without a dead letter", attempts, &DeadLetter{}, 4096, h + d2 + st + a1 + a2 + " l=4", Kept{0, 1320, 2}},
		{"a dead letter without attempts", nil, &plainDeadLetter, 4096, h + d2 + st + x + " l=4", Kept{0, 1320, 0}},
		{"too small for the header", attempts, &plainDeadLetter, len(h) - 1, "", Kept{2, 1200, 0}},
	} {
		c := Commit{Base: 1200, Epoch: 3, Stall: &plainStall, Attempts: tc.attempts, DeadLetter: tc.dead,
			Delivered: []Range{{1210, 1260}, {1280, 1320}}}
		epochs := []int32{3, 4}
		var calls int
		c.EpochOf = epochsOf(t, c.Delivered, epochs, &calls)
		got, k := EncodeCommitKept(c, tc.maxBytes)
		if got != tc.want || k != tc.kept {
			t.Errorf("%s: EncodeCommitKept(%d) = %q, %+v, want %q, %+v", tc.name, tc.maxBytes, got, k, tc.want, tc.kept)
		}
		checkEncodeCommit(t, tc.name, c, epochs, tc.maxBytes)
	}
}

func TestDecodeCommitAttempts(t *testing.T) {
	const h = "wm1 o=1200 e=3 "
	for _, tc := range []struct {
		in   string
		want []Attempts
		err  string // a part of AttemptsErr's message; "" for none
		is   error  // what it wraps
	}{
		{h + "a=0.10.3", []Attempts{{1200, 1210, 3}}, "", nil},
		{h + "a=0.10.3,0.5.1,20.1.2147483647", []Attempts{{1200, 1210, 3}, {1210, 1215, 1}, {1235, 1236, math.MaxInt32}}, "", nil},
		{"wm1 o=9223372036854775806 e=3 a=0.1.1", []Attempts{{math.MaxInt64 - 1, math.MaxInt64, 1}}, "", nil},
		{"wm1 o=1200 e=3", nil, "", nil},
		{h + "a=", nil, "at byte 0 want a decimal digit in an a gap", nil},
		{h + "a=0.10", nil, "at byte 4 want a decimal digit or '.' after an a length", nil},
		{h + "a=0.0.1", nil, "at byte 2 want an a length >= 1", nil},
		{h + "a=0.1.0", nil, "at byte 4 want an a count from 1 to 2147483647", nil},
		{h + "a=0.1.2147483648", nil, "at byte 4 want an a count that fits its type", ErrOverflow},
		{h + "a=01.1.1", nil, "at byte 0 want an a gap without leading zeros", nil},
		{h + "a=0.1.1,", nil, "at byte 6 want a decimal digit in an a gap", nil},
		{h + "a=0.1.1;0.1.1", nil, "at byte 5 want a decimal digit, ',' or the end of a", nil},
		{h + "a=+1.1.1", nil, "at byte 0 want a decimal digit", nil},
		{h + "a=9223372036854775807.1.1", nil, "at byte 0 want an a gap that keeps From at most", ErrOverflow},
		{h + "a=9223372036854774607.1.1", nil, "at byte 20 want an a length that keeps To at most", ErrOverflow},
		{h + "a=" + strings.Repeat("9", 100), nil, `a="9999999999999999999999999999999999999999..."`, ErrOverflow},
	} {
		d, err := DecodeCommit(tc.in)
		if err != nil {
			t.Fatalf("DecodeCommit(%q) = %v", tc.in, err)
		}
		if !slices.Equal(d.Attempts, tc.want) || (d.Attempts == nil) != (tc.want == nil) {
			t.Errorf("DecodeCommit(%q).Attempts = %v, want %v", tc.in, d.Attempts, tc.want)
		}
		if tc.err == "" {
			if d.AttemptsErr != nil {
				t.Errorf("DecodeCommit(%q).AttemptsErr = %v, want nil", tc.in, d.AttemptsErr)
			}
			continue
		}
		var ae *AttemptsError
		if !errors.As(d.AttemptsErr, &ae) || !strings.Contains(d.AttemptsErr.Error(), tc.err) || tc.is != nil && !errors.Is(d.AttemptsErr, tc.is) {
			t.Errorf("DecodeCommit(%q).AttemptsErr = %v, want an *AttemptsError naming %q, wrapping %v", tc.in, d.AttemptsErr, tc.err, tc.is)
		}
	}
}

// TestDecodeCommitNewPartsAlone: a malformed a= or dead-letter report hides
// nothing else the metadata carries.
func TestDecodeCommitNewPartsAlone(t *testing.T) {
	in := "wm1 o=1200 e=3 d=10.50 " + plainStall.Fields() + " " + plainLoss.Fields() + " a=0.0.1 xf=100 xl=99 l=3"
	d, err := DecodeCommit(in)
	if err != nil || d.Delivered == nil || d.Stall == nil || d.Loss == nil ||
		d.Attempts != nil || d.AttemptsErr == nil || d.DeadLetter != nil || d.DeadLetterErr == nil ||
		!strings.Contains(d.DeadLetterErr.Error(), "dead-letter field xl") {
		t.Errorf("DecodeCommit(%q) = %+v, %v, want every part but the attempts and the dead letter, with their errors", in, d, err)
	}
}

// TestFullMetadataOldAPI: metadata with every part at its longest, as a
// release that knows the new parts writes it, reads with Decode and
// DecodeFields, which know only o, e and d: the new keys are unknown fields
// among at most MaxUnknownFields, and one field more than the cap allows
// still refuses the whole.
func TestFullMetadataOldAPI(t *testing.T) {
	stall := Stall{
		Report{math.MaxInt64 - 10, math.MaxInt64, time.UnixMilli(math.MaxInt64), strings.Repeat("/", MaxReasonLen)},
		math.MaxInt32,
		strings.Repeat("@", MaxMemberLen),
		false,
	}
	loss := Loss{Report{1_000_000_000_000_000_000, math.MaxInt64, time.UnixMilli(math.MaxInt64), CauseTruncation}, 1_000_000_000_000_000_000}
	dead := DeadLetter{Report{1_000_000_000_000_000_000, math.MaxInt64, time.UnixMilli(math.MaxInt64), strings.Repeat("/", MaxReasonLen)}, 1_000_000_000_000_000_000}
	c := Commit{Base: 4_000_000_000, Epoch: math.MaxInt32, Stall: &stall, Loss: &loss, DeadLetter: &dead,
		EpochOf: func(int64) int32 { return math.MaxInt32 }}
	for i := range int64(20) {
		c.Attempts = append(c.Attempts, Attempts{c.Base + 10*i, c.Base + 10*i + 5, math.MaxInt32})
	}
	for i := range int64(1000) {
		c.Delivered = append(c.Delivered, Range{c.Base + 1000*i + 1_000_001, c.Base + 1000*i + 1_000_500})
	}
	// Within the input's default budget every report and attempt is kept;
	// ranges are cut.
	s, k := EncodeCommitKept(c, 4000)
	if len(s) > 4000 || k.Attempts != len(c.Attempts) || k.Cut == 0 || k.Cut == len(c.Delivered) {
		t.Fatalf("EncodeCommitKept(4000) = %d bytes, %+v: want every run of attempts, some ranges kept, some cut", len(s), k)
	}
	m, fields, err := DecodeFields(s)
	if err != nil || len(m.Delivered) != len(c.Delivered)-k.Cut {
		t.Fatalf("DecodeFields(%q) = %d ranges, %v", s, len(m.Delivered), err)
	}
	if m2, err := Decode(s); err != nil || !sameMeta(m, m2) {
		t.Fatalf("Decode(%q) = %v, want DecodeFields' Meta", s, err)
	}
	if len(fields) != 18 || len(fields) > MaxUnknownFields {
		t.Fatalf("DecodeFields gives %d unknown fields, want 18 (at most MaxUnknownFields): %v", len(fields), fields)
	}
	for _, key := range []string{"l", "a", "xf", "xl", "xn", "xs", "xr", "sf", "lf"} {
		if _, ok := fields[key]; !ok {
			t.Errorf("DecodeFields has no %s among the unknown fields", key)
		}
	}
	d, err := DecodeCommit(s)
	if err != nil || d.Stall == nil || d.Loss == nil || d.DeadLetter == nil || !sameDeadLetter(*d.DeadLetter, dead) ||
		!slices.Equal(d.Attempts, c.Attempts) || d.LastEpoch != math.MaxInt32 {
		t.Fatalf("DecodeCommit(%q) = %+v, %v, want every part", s, d, err)
	}

	// As many other fields as the cap leaves still read; one more does not.
	var more strings.Builder
	more.WriteString(s)
	for i := len(fields); i < MaxUnknownFields; i++ {
		more.WriteString(" " + base26(i) + "=z")
	}
	if _, _, err := DecodeFields(more.String()); err != nil {
		t.Errorf("DecodeFields(every part and %d other fields) = %v", MaxUnknownFields-len(fields), err)
	}
	if _, err := Decode(more.String() + " zzzzz=1"); !errors.Is(err, ErrTooManyFields) {
		t.Errorf("Decode(one field more) = %v, want ErrTooManyFields", err)
	}
}

func TestEncodeCommitPanicsOnBadAttempts(t *testing.T) {
	for _, tc := range []struct {
		attempts []Attempts
		want     string // a part of the panic message
	}{
		{[]Attempts{{9, 12, 1}}, "below base 10"},
		{[]Attempts{{12, 12, 1}}, "is empty"},
		{[]Attempts{{12, 14, 1}, {13, 16, 1}}, "overlaps"},
		{[]Attempts{{12, 14, 1}, {10, 11, 1}}, "precedes"},
		{[]Attempts{{12, 14, 0}}, "has N 0"},
		{[]Attempts{{12, 14, -1}}, "has N -1"},
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			EncodeCommitKept(Commit{Base: 10, Attempts: tc.attempts}, 4096)
			return ""
		}()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("EncodeCommitKept(attempts %v) panics with %q, want a panic naming %q", tc.attempts, msg, tc.want)
		}
	}
	// Touching runs, and a first run at the base, are valid.
	s, k := EncodeCommitKept(Commit{Base: 10, Attempts: []Attempts{{10, 12, 1}, {12, 14, 2}}}, 4096)
	if s != "wm1 o=10 e=0 a=0.2.1,0.2.2" || k != (Kept{0, 10, 2}) {
		t.Errorf("EncodeCommitKept(touching runs) = %q, %+v", s, k)
	}
}

// TestEncodeCommitAllocsWithNewParts holds EncodeCommitKept to the two
// allocations of EncodeCommit with attempts and a dead letter written too.
func TestEncodeCommitAllocsWithNewParts(t *testing.T) {
	c, epochs := benchCommit(600)
	var calls int
	c.EpochOf = epochsOf(t, c.Delivered, epochs, &calls)
	c.Attempts = []Attempts{{c.Base, c.Base + 100, 3}, {c.Base + 100, c.Base + 200, 1}}
	c.DeadLetter = &plainDeadLetter
	var s string
	var k Kept
	n := testing.AllocsPerRun(100, func() { s, k = EncodeCommitKept(c, 4096) })
	for range 4 {
		n = min(n, testing.AllocsPerRun(100, func() { s, k = EncodeCommitKept(c, 4096) }))
	}
	if n != 2 {
		t.Errorf("EncodeCommitKept allocates %v times, want 2 (the buffer and the string)", n)
	}
	if k.Attempts != 2 || !strings.Contains(s, " a=0.100.3,0.100.1 xf=") {
		t.Errorf("EncodeCommitKept = %q, %+v, want both runs and the dead letter", s, k)
	}
}

// TestDecodeCommitHostileAttemptsIsBounded: a= with the most runs per byte,
// and half ranges and half runs, cost DecodeCommit at most five times the
// input in memory, as Decode's worst inputs do.
func TestDecodeCommitHostileAttemptsIsBounded(t *testing.T) {
	header := Prefix + "o=0 e=0 "
	runs := header + "a=0.1.1" + strings.Repeat(",0.1.1", (MaxDecodeBytes-len(header)-7)/6)
	half := (MaxDecodeBytes - len(header) - len(" l=0")) / 2
	both := header + "d=1.1" + strings.Repeat(",1.1", (half-5)/4) + " a=0.1.1" + strings.Repeat(",0.1.1", (half-8)/6) + " l=0"
	for name, s := range map[string]string{"runs": runs, "both": both} {
		if len(s) > MaxDecodeBytes {
			t.Fatalf("hostile input %s is %d bytes, want at most %d", name, len(s), MaxDecodeBytes)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d, err := DecodeCommit(s)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 5*uint64(len(s)) {
			t.Errorf("DecodeCommit(%s: %d bytes) allocated %d bytes, want at most 5 times the input", name, len(s), got)
		}
		if err != nil || d.AttemptsErr != nil || len(d.Attempts) < (MaxDecodeBytes/2)/7 {
			t.Errorf("DecodeCommit(%s) = %d runs, %v, %v, want about %d runs", name, len(d.Attempts), err, d.AttemptsErr, len(s)/6)
		}
	}
}
