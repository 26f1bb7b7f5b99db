package commitmeta

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// sameDeadLetter reports whether a and b are equal, Since compared as an
// instant.
func sameDeadLetter(a, b DeadLetter) bool {
	return a.First == b.First && a.Last == b.Last && a.Count == b.Count && a.Since.Equal(b.Since) && a.Reason == b.Reason
}

// validDeadLetter reports why d breaks a bound stated on DeadLetter's
// fields, or "".
func validDeadLetter(d DeadLetter) string {
	switch {
	case d.First < 0:
		return "First < 0"
	case d.Last < d.First:
		return "Last < First"
	case d.Count < 1:
		return "Count < 1"
	case d.Count-1 > d.Last-d.First:
		return "Count > Last-First+1"
	case d.Since.UnixMilli() < 0:
		return "Since before 1970"
	case len(d.Reason) > MaxReasonLen || printable(d.Reason, MaxReasonLen) != d.Reason:
		return "Error not printable ASCII of at most MaxReasonLen bytes"
	}
	return ""
}

// deadLetterBack decodes fields as DecodeFields returns them from a commit
// and reads the DeadLetter.
func deadLetterBack(t *testing.T, fields string) (DeadLetter, bool, error) {
	t.Helper()
	_, got, err := DecodeFields(Prefix + "o=0 e=0 " + fields)
	if err != nil {
		t.Fatalf("DecodeFields(%q) = %v, want the fields", fields, err)
	}
	return DeadLetterFromFields(got)
}

func TestDeadLetterFields(t *testing.T) {
	for _, tc := range []struct {
		d    DeadLetter
		want string
		back DeadLetter // what DeadLetterFromFields returns
	}{
		{
			DeadLetter{Report{100, 140, since, "http 503"}, 12},
			"xf=100 xl=140 xn=12 xs=1767225600000 xr=http+503",
			DeadLetter{Report{100, 140, since, "http 503"}, 12},
		},
		{
			DeadLetter{Report{0, 0, time.UnixMilli(0), ""}, 1},
			"xf=0 xl=0 xn=1 xs=0 xr=",
			DeadLetter{Report{0, 0, time.UnixMilli(0), ""}, 1},
		},
		{
			// Made printable, cut and escaped as a stall's reason; Since
			// to the millisecond.
			DeadLetter{Report{5, 9, since.Add(1500 * time.Microsecond), "tab\there \u00e9 100%+" + strings.Repeat("z", MaxReasonLen)}, 2},
			"xf=5 xl=9 xn=2 xs=1767225600001 xr=tab+here+%3F%3F+100%25%2B" + strings.Repeat("z", MaxReasonLen-len("tab here ?? 100%+")),
			DeadLetter{Report{5, 9, since.Add(time.Millisecond), "tab here ?? 100%+" + strings.Repeat("z", MaxReasonLen-len("tab here ?? 100%+"))}, 2},
		},
		{
			DeadLetter{Report{0, math.MaxInt64, time.UnixMilli(math.MaxInt64), "x"}, math.MaxInt64},
			"xf=0 xl=9223372036854775807 xn=9223372036854775807 xs=9223372036854775807 xr=x",
			DeadLetter{Report{0, math.MaxInt64, time.UnixMilli(math.MaxInt64), "x"}, math.MaxInt64},
		},
	} {
		got := tc.d.Fields()
		if got != tc.want || len(got) != tc.d.fieldsLen() {
			t.Errorf("%+v.Fields() = %q (fieldsLen %d), want %q", tc.d, got, tc.d.fieldsLen(), tc.want)
		}
		back, ok, err := deadLetterBack(t, got)
		if err != nil || !ok || !sameDeadLetter(back, tc.back) || back.Since.Location() != time.UTC {
			t.Errorf("DeadLetterFromFields(%q) = %+v, %v, %v, want %+v in UTC", got, back, ok, err, tc.back)
		}
	}
}

// TestDeadLetterFieldsLongest: the longest report within the bounds is
// MaxDeadLetterFieldsLen bytes, and reads back.
func TestDeadLetterFieldsLongest(t *testing.T) {
	d := DeadLetter{Report{1_000_000_000_000_000_000, math.MaxInt64, time.UnixMilli(math.MaxInt64), strings.Repeat("/", MaxReasonLen)}, 1_000_000_000_000_000_000}
	if got := d.Fields(); len(got) != MaxDeadLetterFieldsLen {
		t.Fatalf("the longest report is %d bytes, want MaxDeadLetterFieldsLen %d: %q", len(got), MaxDeadLetterFieldsLen, got)
	}
	if back, ok, err := deadLetterBack(t, d.Fields()); err != nil || !ok || !sameDeadLetter(back, d) {
		t.Errorf("DeadLetterFromFields = %+v, %v, %v, want %+v", back, ok, err, d)
	}
}

func TestDeadLetterFromFieldsNone(t *testing.T) {
	for _, fields := range []map[string]string{nil, {}, {"xl": "1", "xn": "1", "xs": "1", "xr": "x"}, {"lf": "1"}} {
		if d, ok, err := DeadLetterFromFields(fields); ok || err != nil || !sameDeadLetter(d, DeadLetter{}) {
			t.Errorf("DeadLetterFromFields(%v) = %+v, %v, %v, want zero, false, nil without xf", fields, d, ok, err)
		}
	}
}

func TestDeadLetterFromFieldsMalformed(t *testing.T) {
	valid := map[string]string{"xf": "100", "xl": "140", "xn": "12", "xs": "1767225600000", "xr": "http+503"}
	for _, tc := range []struct {
		key, value string // "" value with missing: the key is absent
		missing    bool
		want       string // a part of the message
		detail     error
	}{
		{"xl", "", true, "dead-letter field xl: want a decimal offset", ErrMissingField},
		{"xn", "", true, "dead-letter field xn", ErrMissingField},
		{"xs", "", true, "dead-letter field xs", ErrMissingField},
		{"xr", "", true, "dead-letter field xr: want query-escaped printable ASCII", ErrMissingField},
		{"xf", "-1", false, `xf="-1"`, nil},
		{"xf", "01", false, `xf="01"`, nil},
		{"xf", "9223372036854775808", false, `xf="9223372036854775808"`, ErrOverflow},
		{"xl", "99", false, "want an offset at least xf (100)", nil},
		{"xn", "0", false, "want a decimal count from 1 to xl-xf+1 (41)", nil},
		{"xn", "42", false, "from 1 to xl-xf+1 (41)", nil},
		{"xs", "-5", false, `xs="-5"`, nil},
		{"xr", "%ZZ", false, `xr="%ZZ"`, nil},
		{"xr", "%0A", false, `xr="%0A"`, nil}, // unescapes to a control byte
		{"xr", strings.Repeat("a", MaxReasonLen+1), false, "at most 120 bytes", nil},
		{"xr", strings.Repeat("%41", MaxReasonLen+1), false, "at most 120 bytes", nil},
	} {
		fields := map[string]string{}
		for k, v := range valid {
			fields[k] = v
		}
		if tc.missing {
			delete(fields, tc.key)
		} else {
			fields[tc.key] = tc.value
		}
		d, ok, err := DeadLetterFromFields(fields)
		var de *ReportError
		if ok || !sameDeadLetter(d, DeadLetter{}) || !errors.As(err, &de) || de.Kind != KindDeadLetter || de.Key != tc.key || !strings.Contains(err.Error(), tc.want) ||
			tc.detail != nil && !errors.Is(err, tc.detail) || len(de.Value) > 43 {
			t.Errorf("DeadLetterFromFields(%s=%q) = %+v, %v, %v, want zero, false and a dead-letter *ReportError for %s naming %q, wrapping %v",
				tc.key, tc.value, d, ok, err, tc.key, tc.want, tc.detail)
		}
	}
}

func TestMergeDeadLetter(t *testing.T) {
	early, late := since, since.Add(time.Hour)
	for _, tc := range []struct {
		name string
		a, b DeadLetter
		want DeadLetter
	}{
		{"none and one", DeadLetter{}, DeadLetter{Report{100, 140, late, "http 503"}, 12}, DeadLetter{Report{100, 140, late, "http 503"}, 12}},
		{"one and none", DeadLetter{Report{100, 140, late, "http 503"}, 12}, DeadLetter{}, DeadLetter{Report{100, 140, late, "http 503"}, 12}},
		{"disjoint: the later error, the earlier since", DeadLetter{Report{100, 140, early, "http 503"}, 12}, DeadLetter{Report{200, 209, late, "timeout"}, 10}, DeadLetter{Report{100, 209, early, "timeout"}, 22}},
		{"b earlier: still b's error", DeadLetter{Report{200, 209, late, "timeout"}, 10}, DeadLetter{Report{100, 140, early, "http 503"}, 12}, DeadLetter{Report{100, 209, early, "http 503"}, 22}},
		{"overlapping: the count is capped", DeadLetter{Report{100, 109, early, "a"}, 10}, DeadLetter{Report{105, 110, late, "b"}, 6}, DeadLetter{Report{100, 110, early, "b"}, 11}},
		{"a zero since is unknown", DeadLetter{Report{1, 1, time.Time{}, "a"}, 1}, DeadLetter{Report{2, 2, late, "b"}, 1}, DeadLetter{Report{1, 2, late, "b"}, 2}},
		{"saturating", DeadLetter{Report{0, math.MaxInt64, early, "a"}, math.MaxInt64}, DeadLetter{Report{0, 0, late, "b"}, 1}, DeadLetter{Report{0, math.MaxInt64, early, "b"}, math.MaxInt64}},
	} {
		got := MergeDeadLetter(tc.a, tc.b)
		if !sameDeadLetter(got, tc.want) {
			t.Errorf("%s: MergeDeadLetter(%+v, %+v) = %+v, want %+v", tc.name, tc.a, tc.b, got, tc.want)
		}
		if why := validDeadLetter(got); why != "" && tc.a.Count != 0 && !tc.a.Since.IsZero() {
			t.Errorf("%s: MergeDeadLetter = %+v, which breaks a bound: %s", tc.name, got, why)
		}
	}
}

// TestDeadLetterHostileInputIsBounded reads dead-letter reports whose xr,
// or a number, is one value of nearly MaxDecodeBytes: DeadLetterFromFields
// refuses each without reading it, allocating at most 1 KiB a call.
func TestDeadLetterHostileInputIsBounded(t *testing.T) {
	valid := map[string]string{"xf": "100", "xl": "140", "xn": "12", "xs": "1767225600000", "xr": "http+503"}
	for _, key := range []string{"xf", "xn", "xs", "xr"} {
		for _, fill := range []string{"9", "%41"} {
			fields := map[string]string{}
			for k, v := range valid {
				fields[k] = v
			}
			fields[key] = strings.Repeat(fill, MaxDecodeBytes/len(fill)-100)
			const runs = 100
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				_, _, _ = DeadLetterFromFields(fields)
			}
			runtime.ReadMemStats(&after)
			if got := (after.TotalAlloc - before.TotalAlloc) / runs; got > 1024 {
				t.Errorf("DeadLetterFromFields(%s=%s...) allocated %d bytes a call, want at most 1 KiB", key, fill, got)
			}
			var de *ReportError
			if d, ok, err := DeadLetterFromFields(fields); ok || !sameDeadLetter(d, DeadLetter{}) || !errors.As(err, &de) || de.Kind != KindDeadLetter || de.Key != key || len(err.Error()) > 300 {
				t.Errorf("DeadLetterFromFields(%s=%s...) = %+v, %v, %v, want a short dead-letter *ReportError for %s", key, fill, d, ok, err, key)
			}
		}
	}
}
