package commitmeta

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// sameLoss reports whether a and b are equal, Since compared as an instant.
func sameLoss(a, b Loss) bool {
	return a.First == b.First && a.Last == b.Last && a.Count == b.Count && a.Since.Equal(b.Since) && a.Reason == b.Reason
}

// lossBack decodes fields as DecodeFields returns them from a commit and
// reads the Loss.
func lossBack(t *testing.T, fields string) (Loss, bool, error) {
	t.Helper()
	_, got, err := DecodeFields(Prefix + "o=0 e=0 " + fields)
	if err != nil {
		t.Fatalf("DecodeFields(%q) = %v, want the fields", fields, err)
	}
	return LossFromFields(got)
}

// validLoss reports why l breaks a bound stated on Loss's fields, or "".
func validLoss(l Loss) string {
	switch {
	case l.First < 0:
		return "First < 0"
	case l.Last < l.First:
		return "Last < First"
	case l.Count < 1:
		return "Count < 1"
	case l.Count-1 > l.Last-l.First:
		return "Count > Last-First+1"
	case l.Since.UnixMilli() < 0:
		return "Since before 1970"
	case l.Reason != CauseRetention && l.Reason != CauseTruncation && l.Reason != CauseUnknown:
		return "unknown cause"
	}
	return ""
}

func TestLossFields(t *testing.T) {
	for _, tc := range []struct {
		l    Loss
		want string
		back Loss // what LossFromFields returns
	}{
		{
			Loss{Report{100, 1499, since, CauseRetention}, 1100},
			"lf=100 ll=1499 ln=1100 ls=1767225600000 lc=retention",
			Loss{Report{100, 1499, since, CauseRetention}, 1100},
		},
		{
			Loss{Report{0, 0, time.UnixMilli(0), CauseTruncation}, 1},
			"lf=0 ll=0 ln=1 ls=0 lc=truncation",
			Loss{Report{0, 0, time.UnixMilli(0), CauseTruncation}, 1},
		},
		// 0..MaxInt64 holds MaxInt64+1 offsets: the count cannot overflow.
		{
			Loss{Report{0, math.MaxInt64, time.UnixMilli(math.MaxInt64), CauseUnknown}, math.MaxInt64},
			"lf=0 ll=9223372036854775807 ln=9223372036854775807 ls=9223372036854775807 lc=unknown",
			Loss{Report{0, math.MaxInt64, time.UnixMilli(math.MaxInt64), CauseUnknown}, math.MaxInt64},
		},
		{
			Loss{Report{math.MaxInt64, math.MaxInt64, since, CauseRetention}, 1},
			"lf=9223372036854775807 ll=9223372036854775807 ln=1 ls=1767225600000 lc=retention",
			Loss{Report{math.MaxInt64, math.MaxInt64, since, CauseRetention}, 1},
		},
		// Since keeps milliseconds only.
		{
			Loss{Report{5, 9, since.Add(1500 * time.Microsecond), CauseRetention}, 5},
			"lf=5 ll=9 ln=5 ls=1767225600001 lc=retention",
			Loss{Report{5, 9, since.Add(time.Millisecond), CauseRetention}, 5},
		},
		// A cause that is none of the three is written as unknown: the
		// report is kept, and Encode accepts it.
		{
			Loss{Report{5, 9, since, ""}, 2},
			"lf=5 ll=9 ln=2 ls=1767225600000 lc=unknown",
			Loss{Report{5, 9, since, CauseUnknown}, 2},
		},
		{
			Loss{Report{5, 9, since, "log compaction ate it"}, 2},
			"lf=5 ll=9 ln=2 ls=1767225600000 lc=unknown",
			Loss{Report{5, 9, since, CauseUnknown}, 2},
		},
	} {
		got := tc.l.Fields()
		if got != tc.want {
			t.Errorf("%+v.Fields() = %q, want %q", tc.l, got, tc.want)
			continue
		}
		if len(got) > MaxLossFieldsLen {
			t.Errorf("%+v.Fields() is %d bytes, above MaxLossFieldsLen %d", tc.l, len(got), MaxLossFieldsLen)
		}
		back, ok, err := lossBack(t, got)
		if err != nil || !ok || !sameLoss(back, tc.back) {
			t.Errorf("LossFromFields(%q) = %+v, %v, %v, want %+v, true, nil", got, back, ok, err, tc.back)
		}
		if back.Since.Location() != time.UTC {
			t.Errorf("LossFromFields(%q).Since is in %v, want UTC", got, back.Since.Location())
		}
		if again := back.Fields(); again != got {
			t.Errorf("Fields of LossFromFields(%q) = %q, want the same", got, again)
		}
	}
}

// TestLossFieldsLongest: MaxLossFieldsLen is exactly the longest Fields of a
// valid Loss, so a writer reserving it reserves neither too little nor more
// than needed.
func TestLossFieldsLongest(t *testing.T) {
	// Four numbers of 19 digits and the longest cause.
	worst := Loss{Report{1_000_000_000_000_000_000, math.MaxInt64, time.UnixMilli(math.MaxInt64), CauseTruncation}, 1_000_000_000_000_000_000}
	if got := len(worst.Fields()); got != MaxLossFieldsLen {
		t.Errorf("the longest Fields() is %d bytes, want MaxLossFieldsLen %d", got, MaxLossFieldsLen)
	}
	if why := validLoss(worst); why != "" {
		t.Fatalf("the longest Loss %+v is not valid: %s", worst, why)
	}
}

func TestLossFromFieldsNone(t *testing.T) {
	for _, fields := range []map[string]string{
		nil,
		{},
		// l is the leader epoch, not a loss.
		{"l": "3"},
		// Without lf there is no loss, whatever else is there.
		{"ll": "x", "ln": "0", "lc": "nope", "sf": "1"},
	} {
		l, ok, err := LossFromFields(fields)
		if ok || err != nil || !sameLoss(l, Loss{}) {
			t.Errorf("LossFromFields(%v) = %+v, %v, %v, want zero, false, nil", fields, l, ok, err)
		}
	}
}

func TestLossFromFieldsMalformed(t *testing.T) {
	const missing = "\x00missing"
	valid := map[string]string{"lf": "100", "ll": "1499", "ln": "1100", "ls": "1767225600000", "lc": "retention"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range valid {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == missing {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, tc := range []struct {
		fields map[string]string
		key    string // the key the error names
		want   string // a part of the message
		is     error
	}{
		{with("ll", missing), "ll", "loss field ll: want a decimal offset", ErrMissingField},
		{with("ln", missing), "ln", "loss field ln: want a decimal count from 1 to ll-lf+1 (1400)", ErrMissingField},
		{with("ls", missing), "ls", "loss field ls: want Unix milliseconds", ErrMissingField},
		{with("lc", missing), "lc", "loss field lc: want retention, truncation or unknown: missing field", ErrMissingField},
		{with("lf", ""), "lf", `loss field lf="": want a decimal offset from 0 to 9223372036854775807`, nil},
		{with("lf", "-1"), "lf", `loss field lf="-1"`, nil},
		{with("lf", "+1"), "lf", `loss field lf="+1"`, nil},
		{with("lf", "0100"), "lf", `loss field lf="0100": want a decimal offset`, nil},
		{with("lf", "1e3"), "lf", `loss field lf="1e3"`, nil},
		{with("lf", "9223372036854775808"), "lf", `loss field lf="9223372036854775808"`, ErrOverflow},
		{with("ll", "99"), "ll", `loss field ll="99": want an offset at least lf (100)`, nil},
		{with("ll", "18446744073709551615"), "ll", `loss field ll="18446744073709551615"`, ErrOverflow},
		{with("ln", "0"), "ln", `loss field ln="0": want a decimal count from 1 to ll-lf+1 (1400)`, nil},
		{with("ln", "1401"), "ln", `loss field ln="1401": want a decimal count from 1 to ll-lf+1 (1400)`, nil},
		{with("ln", "-5"), "ln", `loss field ln="-5"`, nil},
		{with("ln", "9223372036854775808"), "ln", `loss field ln="9223372036854775808"`, ErrOverflow},
		// The one span that overflows int64: 0..MaxInt64 holds MaxInt64+1
		// offsets, and any int64 count fits it (below); one more cannot.
		{with("lf", "0", "ll", "9223372036854775807", "ln", "9223372036854775808"), "ln", `loss field ln="9223372036854775808": want a decimal count from 1 to 9223372036854775807, no sign`, ErrOverflow},
		{with("lf", "7", "ll", "7", "ln", "2"), "ln", `loss field ln="2": want a decimal count from 1 to ll-lf+1 (1)`, nil},
		{with("ls", "-1"), "ls", `loss field ls="-1": want Unix milliseconds from 0`, nil},
		{with("ls", "1.5"), "ls", `loss field ls="1.5"`, nil},
		{with("ls", "99999999999999999999"), "ls", `loss field ls="99999999999999999999"`, ErrOverflow},
		{with("lc", ""), "lc", `loss field lc="": want retention, truncation or unknown`, nil},
		{with("lc", "Retention"), "lc", `loss field lc="Retention"`, nil},
		{with("lc", "retention%20"), "lc", `loss field lc="retention%20"`, nil},
		{with("lc", strings.Repeat("r", 1<<20)), "lc", `loss field lc="rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr..."`, nil},
		{with("lf", strings.Repeat("1", 1<<20)), "lf", `loss field lf="1111111111111111111111111111111111111111..."`, ErrOverflow},
		// The first bad field is named, in the order Fields writes them.
		{with("ll", "x", "ln", "x", "lc", "x"), "ll", `loss field ll="x"`, nil},
	} {
		l, ok, err := LossFromFields(tc.fields)
		var le *ReportError
		if err == nil || ok || !sameLoss(l, Loss{}) || !errors.As(err, &le) || le.Kind != KindLoss || le.Key != tc.key {
			t.Errorf("LossFromFields(%.200q) = %+v, %v, %v, want zero, false and a loss *ReportError for %s", tc.fields, l, ok, err, tc.key)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LossFromFields(%.200q) error %q, want it to contain %q", tc.fields, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("LossFromFields(%.200q) error %v, want errors.Is %v", tc.fields, err, tc.is)
		}
		if len(err.Error()) > 300 {
			t.Errorf("LossFromFields(%.200q) error is %d bytes: a hostile value must be clipped", tc.fields, len(err.Error()))
		}
	}

	// The widest valid span: every int64 count fits it.
	l, ok, err := LossFromFields(with("lf", "0", "ll", "9223372036854775807", "ln", "9223372036854775807"))
	if err != nil || !ok || l.Count != math.MaxInt64 {
		t.Errorf("LossFromFields(0..MaxInt64, ln=MaxInt64) = %+v, %v, %v, want Count MaxInt64", l, ok, err)
	}
}

func TestMergeLoss(t *testing.T) {
	t1, t2 := since, since.Add(time.Hour)
	for _, tc := range []struct {
		name string
		a, b Loss
		want Loss
	}{
		{"disjoint, b earlier", Loss{Report{100, 199, t2, CauseTruncation}, 100}, Loss{Report{500, 599, t1, CauseRetention}, 100},
			Loss{Report{100, 599, t1, CauseRetention}, 200}},
		{"disjoint, a earlier", Loss{Report{500, 599, t1, CauseRetention}, 100}, Loss{Report{100, 199, t2, CauseTruncation}, 100},
			Loss{Report{100, 599, t1, CauseRetention}, 200}},
		{"adjacent", Loss{Report{0, 9, t1, CauseRetention}, 10}, Loss{Report{10, 19, t1, CauseRetention}, 10},
			Loss{Report{0, 19, t1, CauseRetention}, 20}},
		{"the same Since: a's cause", Loss{Report{0, 9, t1, CauseTruncation}, 10}, Loss{Report{10, 19, t1, CauseRetention}, 10},
			Loss{Report{0, 19, t1, CauseTruncation}, 20}},
		// The same offsets reported twice: the cap keeps Count in its span.
		{"overlapping, capped", Loss{Report{0, 9, t1, CauseRetention}, 10}, Loss{Report{5, 14, t2, CauseRetention}, 10},
			Loss{Report{0, 14, t1, CauseRetention}, 15}},
		{"contained", Loss{Report{0, 99, t2, CauseUnknown}, 3}, Loss{Report{10, 19, t1, CauseTruncation}, 2},
			Loss{Report{0, 99, t1, CauseTruncation}, 5}},
		{"a zero Since is unknown", Loss{Report{0, 9, time.Time{}, CauseUnknown}, 1}, Loss{Report{20, 29, t2, CauseRetention}, 1},
			Loss{Report{0, 29, t2, CauseRetention}, 2}},
		{"b zero Since is unknown", Loss{Report{0, 9, t2, CauseRetention}, 1}, Loss{Report{20, 29, time.Time{}, CauseUnknown}, 1},
			Loss{Report{0, 29, t2, CauseRetention}, 2}},
		{"the zero Loss is none (b)", Loss{Report{3, 4, t1, CauseTruncation}, 2}, Loss{}, Loss{Report{3, 4, t1, CauseTruncation}, 2}},
		{"the zero Loss is none (a)", Loss{}, Loss{Report{3, 4, t1, CauseTruncation}, 2}, Loss{Report{3, 4, t1, CauseTruncation}, 2}},
		{"saturating", Loss{Report{0, math.MaxInt64, t1, CauseRetention}, math.MaxInt64}, Loss{Report{7, 7, t2, CauseRetention}, 1},
			Loss{Report{0, math.MaxInt64, t1, CauseRetention}, math.MaxInt64}},
		{"saturating, then capped", Loss{Report{0, math.MaxInt64 - 1, t1, CauseRetention}, math.MaxInt64}, Loss{Report{1, 1, t2, CauseRetention}, 1},
			Loss{Report{0, math.MaxInt64 - 1, t1, CauseRetention}, math.MaxInt64}},
	} {
		if got := MergeLoss(tc.a, tc.b); !sameLoss(got, tc.want) {
			t.Errorf("%s: MergeLoss(%+v, %+v) = %+v, want %+v", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}

// randLoss returns a valid Loss: offsets near 0, anywhere and near MaxInt64,
// spans from one offset to the whole int64 range, any cause.
func randLoss(r *rand.Rand) Loss {
	var l Loss
	switch r.IntN(3) {
	case 0:
		l.First = r.Int64N(1000)
	case 1:
		l.First = r.Int64N(math.MaxInt64)
	default:
		l.First = math.MaxInt64 - r.Int64N(1000)
	}
	room := math.MaxInt64 - l.First // Last - First at most
	switch r.IntN(3) {
	case 0:
		l.Last = l.First + r.Int64N(min(room, 5000)+1)
	case 1:
		l.Last = l.First + r.Int64N(room/2+1)
	default:
		l.Last = math.MaxInt64
	}
	span := l.Last - l.First // one less than the offsets in it
	switch r.IntN(3) {
	case 0:
		l.Count = 1
	case 1:
		l.Count = span + 1
		if span == math.MaxInt64 {
			l.Count = math.MaxInt64
		}
	default:
		l.Count = 1 + r.Int64N(min(span, math.MaxInt64-1)+1)
	}
	l.Since = time.UnixMilli(r.Int64N(4_000_000_000_000)).UTC()
	if r.IntN(10) == 0 {
		l.Since = time.UnixMilli(math.MaxInt64 - r.Int64N(10)).UTC()
	}
	l.Reason = []string{CauseRetention, CauseTruncation, CauseUnknown}[r.IntN(3)]
	return l
}

// TestMergeLossProperty merges 20,000 random pairs of valid losses and checks
// what MergeLoss's doc promises: the result is valid and round-trips through
// Fields; it covers both (First, Last); its Count is at least each and at
// most their sum; its Since is the earlier with that event's cause; and it
// is commutative except for the cause of a tie.
func TestMergeLossProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(propertySeed, 11))
	for i := range 20000 {
		a, b := randLoss(r), randLoss(r)
		if r.IntN(8) == 0 {
			b.Since = a.Since
		}
		for _, l := range []Loss{a, b} {
			if why := validLoss(l); why != "" {
				t.Fatalf("seed %d case %d: randLoss gave %+v: %s", propertySeed, i, l, why)
			}
		}
		m := MergeLoss(a, b)
		if why := validLoss(m); why != "" {
			t.Fatalf("seed %d case %d: MergeLoss(%+v, %+v) = %+v: %s", propertySeed, i, a, b, m, why)
		}
		if m.First != min(a.First, b.First) || m.Last != max(a.Last, b.Last) {
			t.Fatalf("seed %d case %d: MergeLoss(%+v, %+v) = %+v, want First..Last %d..%d", propertySeed, i, a, b, m, min(a.First, b.First), max(a.Last, b.Last))
		}
		if m.Count < max(a.Count, b.Count) || m.Count-a.Count > b.Count {
			t.Fatalf("seed %d case %d: MergeLoss(%+v, %+v).Count = %d, want from max to the sum of theirs", propertySeed, i, a, b, m.Count)
		}
		first := a
		if b.Since.Before(a.Since) {
			first = b
		}
		if !m.Since.Equal(first.Since) || m.Reason != first.Reason {
			t.Fatalf("seed %d case %d: MergeLoss(%+v, %+v) = %+v, want the Since and Reason of %+v", propertySeed, i, a, b, m, first)
		}
		swapped := MergeLoss(b, a)
		if a.Since.Equal(b.Since) {
			swapped.Reason = m.Reason
		}
		if !sameLoss(swapped, m) {
			t.Fatalf("seed %d case %d: MergeLoss(b, a) = %+v, MergeLoss(a, b) = %+v", propertySeed, i, swapped, m)
		}
		back, ok, err := lossBack(t, m.Fields())
		if err != nil || !ok || !sameLoss(back, m) {
			t.Fatalf("seed %d case %d: LossFromFields(%q) = %+v, %v, %v, want %+v", propertySeed, i, m.Fields(), back, ok, err, m)
		}
	}
}

// TestStallAndLossFitTheBroker: a stalled partition that also lost records
// commits both reports in one metadata string. With the longest of each,
// the leader epoch l=, the longest header and a thousand ranges, Encode
// within the input's default budget (4000 bytes, under the broker's
// offset.metadata.max.bytes of 4096) cuts ranges, never a report, and
// DecodeFields gives back both.
func TestStallAndLossFitTheBroker(t *testing.T) {
	stall := Stall{
		Report{math.MaxInt64 - 10, math.MaxInt64, time.UnixMilli(math.MaxInt64), strings.Repeat("/", MaxReasonLen)},
		math.MaxInt32,
		strings.Repeat("@", MaxMemberLen),
		false,
	}
	loss := Loss{Report{1_000_000_000_000_000_000, math.MaxInt64, time.UnixMilli(math.MaxInt64), CauseTruncation}, 1_000_000_000_000_000_000}
	extra := stall.Fields() + " " + loss.Fields() + " l=2147483647"
	if len(stall.Fields()) != MaxStallFieldsLen || len(loss.Fields()) != MaxLossFieldsLen {
		t.Fatalf("the reports are %d and %d bytes, want the longest, %d and %d", len(stall.Fields()), len(loss.Fields()), MaxStallFieldsLen, MaxLossFieldsLen)
	}

	// The header at its longest and both reports, without ranges, leave
	// room for ranges under 4096.
	header, _ := Encode(Meta{Base: math.MaxInt64, Epoch: math.MaxInt32}, extra, math.MaxInt)
	if len(header) > 4096-1000 {
		t.Errorf("the longest header with both reports is %d bytes, want room for ranges under 4096", len(header))
	}

	m := Meta{Base: 4_000_000_000, Epoch: math.MaxInt32}
	for i := range int64(1000) {
		m.Delivered = append(m.Delivered, Range{m.Base + 1000*i + 1_000_001, m.Base + 1000*i + 1_000_500})
	}
	enc, n := Encode(m, extra, 4000)
	if len(enc) > 4000 || n == 0 || n == len(m.Delivered) {
		t.Fatalf("Encode(1000 ranges, both reports, 4000) = %d bytes, cut %d: want at most 4000 bytes, some ranges kept, some cut", len(enc), n)
	}
	got, fields, err := DecodeFields(enc)
	if err != nil {
		t.Fatalf("DecodeFields(%q) = %v", enc, err)
	}
	if got.Base != m.Base || len(got.Delivered) != len(m.Delivered)-n {
		t.Errorf("DecodeFields: base %d and %d ranges, want %d and %d", got.Base, len(got.Delivered), m.Base, len(m.Delivered)-n)
	}
	if back, ok, err := StallFromFields(fields); err != nil || !ok || !sameStall(back, stall) {
		t.Errorf("StallFromFields = %+v, %v, %v, want %+v", back, ok, err, stall)
	}
	if back, ok, err := LossFromFields(fields); err != nil || !ok || !sameLoss(back, loss) {
		t.Errorf("LossFromFields = %+v, %v, %v, want %+v", back, ok, err, loss)
	}
	if fields["l"] != "2147483647" {
		t.Errorf("l = %q, want the leader epoch next to the reports", fields["l"])
	}
}
