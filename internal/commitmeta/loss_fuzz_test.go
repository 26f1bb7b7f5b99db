package commitmeta

import (
	"errors"
	"math"
	"testing"
	"time"
)

// FuzzLossFromFields feeds LossFromFields arbitrary values for the five
// keys, each present or not (a bit of present), as anyone who can commit to
// the group may write them, and checks:
//   - it never panics;
//   - without lf the result is zero, false, nil;
//   - an error is a loss *ReportError naming one of the five keys, with a zero
//     Loss and ok false, and a message of bounded length;
//   - a Loss it returns keeps every bound: 0 <= First <= Last,
//     1 <= Count <= Last-First+1, Since >= 0, Reason one of the three causes;
//   - its Fields are at most MaxLossFieldsLen bytes, form valid extra
//     fields for Encode, and read back to the same Loss: a second round
//     trip is a fixed point;
//   - merging it with itself keeps First, Last, Since and Reason, and a
//     Count within the bounds.
func FuzzLossFromFields(f *testing.F) {
	f.Add("100", "1499", "1100", "1767225600000", "retention", uint8(31))
	f.Add("0", "0", "1", "0", "truncation", uint8(31))
	f.Add("0", "9223372036854775807", "9223372036854775807", "9223372036854775807", "unknown", uint8(31))
	f.Add("0", "9223372036854775807", "9223372036854775808", "0", "unknown", uint8(31))
	f.Add("10", "9", "1", "1", "retention", uint8(31))
	f.Add("1", "2", "3", "4", "retention", uint8(31))
	f.Add("1", "2", "0", "4", "retention", uint8(31))
	f.Add("1", "2", "1", "-4", "retention", uint8(31))
	f.Add("1", "2", "1", "4", "RETENTION", uint8(31))
	f.Add("01", "2", "1", "4", "unknown", uint8(31))
	f.Add("1", "2", "1", "4", "unknown", uint8(1))
	f.Add("", "", "", "", "", uint8(30))
	f.Fuzz(func(t *testing.T, lf, ll, ln, ls, lc string, present uint8) {
		fields := map[string]string{}
		for i, kv := range [][2]string{{"lf", lf}, {"ll", ll}, {"ln", ln}, {"ls", ls}, {"lc", lc}} {
			if present&(1<<i) != 0 {
				fields[kv[0]] = kv[1]
			}
		}
		l, ok, err := LossFromFields(fields)
		if _, has := fields["lf"]; !has {
			if ok || err != nil || !sameLoss(l, Loss{}) {
				t.Fatalf("LossFromFields(%q) = %+v, %v, %v without lf, want zero, false, nil", fields, l, ok, err)
			}
			return
		}
		if err != nil {
			var le *ReportError
			if ok || !sameLoss(l, Loss{}) || !errors.As(err, &le) || le.Kind != KindLoss {
				t.Fatalf("LossFromFields(%q) = %+v, %v, %v, want zero, false and a loss *ReportError", fields, l, ok, err)
			}
			if _, known := map[string]bool{"lf": true, "ll": true, "ln": true, "ls": true, "lc": true}[le.Key]; !known {
				t.Fatalf("LossFromFields(%q) error names key %q", fields, le.Key)
			}
			// 40 bytes of value, quoted (at most 4 bytes a byte), and the
			// longest expected form.
			if len(err.Error()) > 400 {
				t.Fatalf("LossFromFields(%q) error is %d bytes", fields, len(err.Error()))
			}
			return
		}
		if !ok {
			t.Fatalf("LossFromFields(%q) = %+v, false, nil with lf present", fields, l)
		}
		if why := validLoss(l); why != "" {
			t.Fatalf("LossFromFields(%q) = %+v, which breaks a bound: %s", fields, l, why)
		}
		enc := l.Fields()
		if len(enc) > MaxLossFieldsLen {
			t.Fatalf("Fields of %+v is %d bytes, above MaxLossFieldsLen", l, len(enc))
		}
		if err := checkExtra(enc); err != nil {
			t.Fatalf("Fields of %+v = %q, not valid extra fields: %v", l, enc, err)
		}
		back, ok, err := lossBack(t, enc)
		if err != nil || !ok || !sameLoss(back, l) || back.Fields() != enc {
			t.Fatalf("LossFromFields(Fields of %+v = %q) = %+v, %v, %v, want the same Loss", l, enc, back, ok, err)
		}
		m := MergeLoss(l, l)
		if why := validLoss(m); why != "" || m.First != l.First || m.Last != l.Last || !m.Since.Equal(l.Since) || m.Reason != l.Reason || m.Count < l.Count {
			t.Fatalf("MergeLoss(%+v, itself) = %+v (%s)", l, m, why)
		}
	})
}

// FuzzMergeLoss merges two losses built from arbitrary numbers, clamped
// into their bounds, and checks that MergeLoss never panics and that its
// result is within the bounds, covers both, counts at least each and at most
// their sum, keeps the earlier Since with its cause, and round-trips through
// Fields and LossFromFields.
func FuzzMergeLoss(f *testing.F) {
	f.Add(int64(100), int64(1399), int64(1100), int64(1767225600000), uint8(0),
		int64(2000), int64(9), int64(10), int64(1767225500000), uint8(1))
	f.Add(int64(0), int64(math.MaxInt64), int64(math.MaxInt64), int64(0), uint8(2),
		int64(5), int64(0), int64(1), int64(math.MaxInt64), uint8(0))
	f.Add(int64(-1), int64(-1), int64(-1), int64(-1), uint8(255),
		int64(math.MinInt64), int64(math.MinInt64), int64(math.MinInt64), int64(math.MinInt64), uint8(7))
	loss := func(first, span, count, ms int64, cause uint8) Loss {
		if first < 0 {
			first = -(first + 1)
		}
		if span < 0 {
			span = -(span + 1)
		}
		span %= math.MaxInt64 - first + 1 // Last <= MaxInt64
		if count < 0 {
			count = -(count + 1)
		}
		if span < math.MaxInt64 {
			count %= span + 1
		}
		count++ // 1 to span+1
		if count < 1 {
			count = math.MaxInt64
		}
		if ms < 0 {
			ms = -(ms + 1)
		}
		return Loss{Report{first, first + span, time.UnixMilli(ms).UTC(), []string{CauseRetention, CauseTruncation, CauseUnknown}[cause%3]}, count}
	}
	f.Fuzz(func(t *testing.T, af, as, ac, at int64, acause uint8, bf, bs, bc, bt int64, bcause uint8) {
		a, b := loss(af, as, ac, at, acause), loss(bf, bs, bc, bt, bcause)
		for _, l := range []Loss{a, b} {
			if why := validLoss(l); why != "" {
				t.Fatalf("the harness built %+v: %s", l, why)
			}
		}
		m := MergeLoss(a, b)
		if why := validLoss(m); why != "" {
			t.Fatalf("MergeLoss(%+v, %+v) = %+v: %s", a, b, m, why)
		}
		if m.First != min(a.First, b.First) || m.Last != max(a.Last, b.Last) ||
			m.Count < max(a.Count, b.Count) || m.Count-a.Count > b.Count {
			t.Fatalf("MergeLoss(%+v, %+v) = %+v, which does not cover both", a, b, m)
		}
		first := a
		if b.Since.Before(a.Since) {
			first = b
		}
		if !m.Since.Equal(first.Since) || m.Reason != first.Reason {
			t.Fatalf("MergeLoss(%+v, %+v) = %+v, want the Since and Reason of %+v", a, b, m, first)
		}
		back, ok, err := lossBack(t, m.Fields())
		if err != nil || !ok || !sameLoss(back, m) {
			t.Fatalf("LossFromFields(%q) = %+v, %v, %v, want %+v", m.Fields(), back, ok, err, m)
		}
	})
}
