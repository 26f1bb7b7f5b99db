package commitmeta

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"
)

// sameStall reports whether a and b are equal, Since compared as an instant.
func sameStall(a, b Stall) bool {
	return a.First == b.First && a.Last == b.Last && a.Since.Equal(b.Since) && a.Attempts == b.Attempts &&
		a.Reason == b.Reason && a.Member == b.Member && a.MarkOnly == b.MarkOnly
}

// stallBack decodes fields as DecodeFields returns them from a commit and
// reads the Stall.
func stallBack(t *testing.T, fields string) (Stall, bool, error) {
	t.Helper()
	_, got, err := DecodeFields(Prefix + "o=0 e=0 " + fields)
	if err != nil {
		t.Fatalf("DecodeFields(%q) = %v, want the fields", fields, err)
	}
	return StallFromFields(got)
}

var since = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestStallFields(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		s    Stall
		want string
		back Stall // what StallFromFields returns: s made printable and cut
	}{
		{
			Stall{Report{1200, 1209, since, "http 503"}, 3, "orders-sink@pod-7", false},
			"sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503",
			Stall{Report{1200, 1209, since, "http 503"}, 3, "orders-sink@pod-7", false},
		},
		{
			Stall{Report{0, 0, time.UnixMilli(0), ""}, 1, "", false},
			"sf=0 sl=0 ss=0 sa=1 sm= sr=",
			Stall{Report{0, 0, time.UnixMilli(0), ""}, 1, "", false},
		},
		{
			Stall{Report{math.MaxInt64, math.MaxInt64, time.UnixMilli(math.MaxInt64), "a+b%c=d"}, math.MaxInt32, "m", false},
			"sf=9223372036854775807 sl=9223372036854775807 ss=9223372036854775807 sa=2147483647 sm=m sr=a%2Bb%25c%3Dd",
			Stall{Report{math.MaxInt64, math.MaxInt64, time.UnixMilli(math.MaxInt64), "a+b%c=d"}, math.MaxInt32, "m", false},
		},
		// The mark: First alone, whatever else the Stall holds.
		{
			Stall{Report: Report{First: 1200}, MarkOnly: true},
			"sf=1200",
			Stall{Report: Report{First: 1200}, MarkOnly: true},
		},
		{
			Stall{Report{math.MaxInt64, math.MaxInt64, since, "http 503"}, 3, "m", true},
			"sf=9223372036854775807",
			Stall{Report: Report{First: math.MaxInt64}, MarkOnly: true},
		},
		// Since keeps milliseconds only.
		{
			Stall{Report{5, 9, since.Add(1500 * time.Microsecond), "x"}, 2, "y", false},
			"sf=5 sl=9 ss=1767225600001 sa=2 sm=y sr=x",
			Stall{Report{5, 9, since.Add(time.Millisecond), "x"}, 2, "y", false},
		},
		// Control bytes become spaces, other bytes outside ASCII '?'.
		{
			Stall{Report{1, 2, since, "line one\nline\ttwo caf\u00e9"}, 1, "\x7fid@h\u00f6st", false},
			"sf=1 sl=2 ss=1767225600000 sa=1 sm=+id%40h%3F%3Fst sr=line+one+line+two+caf%3F%3F",
			Stall{Report{1, 2, since, "line one line two caf??"}, 1, " id@h??st", false},
		},
		// Cut to the limits before escaping.
		{
			Stall{Report{1, 2, since, long}, 1, long, false},
			"sf=1 sl=2 ss=1767225600000 sa=1 sm=" + long[:MaxMemberLen] + " sr=" + long[:MaxReasonLen],
			Stall{Report{1, 2, since, long[:MaxReasonLen]}, 1, long[:MaxMemberLen], false},
		},
		{
			Stall{Report{1, 2, since, strings.Repeat(" ", 130)}, 1, strings.Repeat("@", 90), false},
			"sf=1 sl=2 ss=1767225600000 sa=1 sm=" + strings.Repeat("%40", MaxMemberLen) + " sr=" + strings.Repeat("+", MaxReasonLen),
			Stall{Report{1, 2, since, strings.Repeat(" ", MaxReasonLen)}, 1, strings.Repeat("@", MaxMemberLen), false},
		},
	} {
		got := tc.s.Fields()
		if got != tc.want {
			t.Errorf("%+v.Fields() = %q, want %q", tc.s, got, tc.want)
			continue
		}
		back, ok, err := stallBack(t, got)
		if err != nil || !ok || !sameStall(back, tc.back) {
			t.Errorf("StallFromFields(%q) = %+v, %v, %v, want %+v, true, nil", got, back, ok, err, tc.back)
		}
		if back.Since.Location() != time.UTC {
			t.Errorf("StallFromFields(%q).Since is in %v, want UTC", got, back.Since.Location())
		}
		if again := back.Fields(); again != got {
			t.Errorf("Fields of StallFromFields(%q) = %q, want the same", got, again)
		}
	}
}

func TestStallFromFieldsNone(t *testing.T) {
	for _, fields := range []map[string]string{
		nil,
		{},
		{"l": "3"},
		// Without sf there is no stall, whatever else is there.
		{"sl": "x", "sa": "0", "zz": ""},
	} {
		s, ok, err := StallFromFields(fields)
		if ok || err != nil || !sameStall(s, Stall{}) {
			t.Errorf("StallFromFields(%v) = %+v, %v, %v, want zero, false, nil", fields, s, ok, err)
		}
	}
}

func TestStallFromFieldsMalformed(t *testing.T) {
	valid := map[string]string{"sf": "10", "sl": "19", "ss": "1767225600000", "sa": "2", "sm": "c%40h", "sr": "timeout"}
	with := func(key, value string) map[string]string {
		m := map[string]string{}
		for k, v := range valid {
			m[k] = v
		}
		if value == "\x00missing" {
			delete(m, key)
		} else {
			m[key] = value
		}
		return m
	}
	const missing = "\x00missing"
	for _, tc := range []struct {
		key, value string
		want       string // a part of the message
		is         error
	}{
		{"sl", missing, "stall field sl: want a decimal offset", ErrMissingField},
		{"ss", missing, "stall field ss: want Unix milliseconds", ErrMissingField},
		{"sa", missing, "stall field sa:", ErrMissingField},
		{"sm", missing, "stall field sm:", ErrMissingField},
		{"sr", missing, "stall field sr: want query-escaped", ErrMissingField},
		{"sf", "", `stall field sf="": want a decimal offset`, nil},
		{"sf", "-1", `stall field sf="-1"`, nil},
		{"sf", "+1", `stall field sf="+1"`, nil},
		{"sf", "01", `stall field sf="01"`, nil},
		{"sf", "1x", `stall field sf="1x"`, nil},
		{"sf", "9223372036854775808", `stall field sf="9223372036854775808"`, ErrOverflow},
		{"sl", "9", `stall field sl="9": want an offset at least sf (10)`, nil},
		{"ss", "-5", `stall field ss="-5": want Unix milliseconds`, nil},
		{"ss", "1.5", `stall field ss="1.5"`, nil},
		{"sa", "0", `stall field sa="0": want a decimal count from 1 to 2147483647`, nil},
		{"sa", "2147483648", `stall field sa="2147483648"`, ErrOverflow},
		{"sa", "99999999999999999999999", `stall field sa="99999999999999999999999"`, ErrOverflow},
		{"sm", "%zz", `stall field sm="%zz": want query-escaped printable ASCII of at most 81 bytes`, nil},
		{"sm", "%", `stall field sm="%"`, nil},
		{"sm", "a%0Ab", `stall field sm="a%0Ab"`, nil}, // a newline is not printable
		{"sr", "caf%C3%A9", `stall field sr="caf%C3%A9"`, nil},
		{"sm", strings.Repeat("a", MaxMemberLen+1), `stall field sm="aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..."`, nil},
		{"sr", strings.Repeat("%41", MaxReasonLen+1), "want query-escaped printable ASCII of at most 120 bytes", nil},
		{"sr", strings.Repeat("a", 1<<20), "stall field sr=", nil},
	} {
		fields := with(tc.key, tc.value)
		s, ok, err := StallFromFields(fields)
		var se *ReportError
		if err == nil || ok || !sameStall(s, Stall{}) || !errors.As(err, &se) || se.Kind != KindStall || se.Key != tc.key {
			t.Errorf("StallFromFields(%s=%.50q) = %+v, %v, %v, want zero, false and a stall *ReportError for %s", tc.key, tc.value, s, ok, err, tc.key)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("StallFromFields(%s=%.50q) error %q, want it to contain %q", tc.key, tc.value, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("StallFromFields(%s=%.50q) error %v, want errors.Is %v", tc.key, tc.value, err, tc.is)
		}
		if len(err.Error()) > 300 {
			t.Errorf("StallFromFields(%s=%.50q) error is %d bytes: a hostile value must be clipped", tc.key, tc.value, len(err.Error()))
		}
	}
	// Escapes Fields would not write still read back: readers are lenient
	// where it is harmless, and re-encoding gives the canonical form.
	s, ok, err := StallFromFields(with("sm", "%63%40h"))
	if err != nil || !ok || s.Member != "c@h" || !strings.Contains(s.Fields(), "sm=c%40h ") {
		t.Errorf("StallFromFields(sm=%%63%%40h) = %+v, %v, %v, want Member c@h", s, ok, err)
	}
}

// randStall returns a valid Stall: offsets near 0 and near MaxInt64, and text
// of any bytes, some outside ASCII, up to twice the limits.
func randStall(r *rand.Rand) Stall {
	var s Stall
	switch r.IntN(3) {
	case 0:
		s.First = r.Int64N(1000)
	case 1:
		s.First = r.Int64N(math.MaxInt64)
	default:
		s.First = math.MaxInt64 - r.Int64N(1000)
	}
	s.Last = s.First + r.Int64N(math.MaxInt64-s.First+1)%5000
	s.Since = time.UnixMilli(r.Int64N(4_000_000_000_000))
	if r.IntN(10) == 0 {
		s.Since = time.UnixMilli(math.MaxInt64 - r.Int64N(10))
	}
	s.Attempts = 1 + r.IntN(math.MaxInt32)
	if r.IntN(3) == 0 {
		s.Attempts = 1 + r.IntN(5)
	}
	text := func(n int) string {
		b := make([]byte, r.IntN(2*n+1))
		for i := range b {
			switch r.IntN(4) {
			case 0:
				b[i] = byte(r.IntN(256))
			case 1:
				b[i] = " %+@=&/"[r.IntN(7)]
			default:
				b[i] = byte('a' + r.IntN(26))
			}
		}
		return string(b)
	}
	s.Reason, s.Member = text(MaxReasonLen), text(MaxMemberLen)
	return s
}

// TestStallRoundTripProperty commits 5,000 random stalls with random ranges
// and limits through Encode and checks: the metadata fits maxBytes; when the
// header and the provenance fit, the provenance is whole (only ranges are
// cut) and reads back as the stall made printable and cut; the provenance is
// at most MaxStallFieldsLen bytes.
func TestStallRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(propertySeed, 7))
	var none, cut, whole int
	for i := range 5000 {
		s := randStall(r)
		m := randMeta(r)
		fields := s.Fields()
		if len(fields) > MaxStallFieldsLen {
			t.Fatalf("seed %d case %d: %+v.Fields() is %d bytes, above MaxStallFieldsLen %d", propertySeed, i, s, len(fields), MaxStallFieldsLen)
		}
		extra := fields + " l=3"
		full, _ := Encode(m, extra, math.MaxInt)
		maxBytes := r.IntN(len(full) + 16)
		if r.IntN(4) == 0 {
			maxBytes = 4000
		}
		enc, n := Encode(m, extra, maxBytes)
		if len(enc) > maxBytes {
			t.Fatalf("seed %d case %d: Encode is %d bytes, above maxBytes %d", propertySeed, i, len(enc), maxBytes)
		}
		header, _ := Encode(Meta{m.Base, m.Epoch, nil}, extra, math.MaxInt)
		if enc == "" {
			if len(header) <= maxBytes {
				t.Fatalf("seed %d case %d: Encode(..., %d) = \"\" but the header with the provenance (%d bytes) fits", propertySeed, i, maxBytes, len(header))
			}
			none++
			continue
		}
		if n > 0 {
			cut++
		} else {
			whole++
		}
		got, gotFields, err := DecodeFields(enc)
		if err != nil {
			t.Fatalf("seed %d case %d: DecodeFields(%q) = %v", propertySeed, i, enc, err)
		}
		back, ok, err := StallFromFields(gotFields)
		want := Stall{
			Report{s.First, s.Last, time.UnixMilli(s.Since.UnixMilli()), printable(s.Reason, MaxReasonLen)},
			s.Attempts,
			printable(s.Member, MaxMemberLen),
			false,
		}
		if err != nil || !ok || !sameStall(back, want) {
			t.Fatalf("seed %d case %d: StallFromFields(%q) = %+v, %v, %v, want %+v", propertySeed, i, enc, back, ok, err, want)
		}
		if len(got.Delivered) != len(m.Delivered)-n {
			t.Fatalf("seed %d case %d: %d ranges decoded, want %d kept", propertySeed, i, len(got.Delivered), len(m.Delivered)-n)
		}
	}
	if none < 100 || cut < 100 || whole < 100 {
		t.Fatalf("seed %d: outcomes none %d, cut %d, whole %d, want at least 100 of each", propertySeed, none, cut, whole)
	}
}

// TestStallWorstCaseFitsTheBroker: the longest provenance and a thousand
// ranges within the input's default budget (4000 bytes, under the broker's
// 4096): the ranges are cut, the provenance is whole.
func TestStallWorstCaseFitsTheBroker(t *testing.T) {
	worst := Stall{
		Report{math.MaxInt64 - 10, math.MaxInt64, time.UnixMilli(math.MaxInt64), strings.Repeat("/", MaxReasonLen)},
		math.MaxInt32,
		strings.Repeat("@", MaxMemberLen),
		false,
	}
	fields := worst.Fields()
	if len(fields) != MaxStallFieldsLen {
		t.Errorf("the worst case Fields() is %d bytes, want MaxStallFieldsLen %d", len(fields), MaxStallFieldsLen)
	}
	m := Meta{Base: 4_000_000_000, Epoch: math.MaxInt32}
	for i := range int64(1000) {
		m.Delivered = append(m.Delivered, Range{m.Base + 1000*i + 1_000_001, m.Base + 1000*i + 1_000_500})
	}
	enc, n := Encode(m, fields+" l=2147483647", 4000)
	if len(enc) > 4000 || n == 0 || n == len(m.Delivered) {
		t.Fatalf("Encode(1000 ranges, the worst provenance, 4000) = %d bytes, cut %d: want at most 4000 bytes, some ranges kept, some cut", len(enc), n)
	}
	_, got, err := DecodeFields(enc)
	if err != nil {
		t.Fatal(err)
	}
	if back, ok, err := StallFromFields(got); err != nil || !ok || !sameStall(back, worst) {
		t.Errorf("StallFromFields = %+v, %v, %v, want %+v", back, ok, err, worst)
	}
}

// TestAppendTextIsQueryEscape checks that appendText, which writes the
// stall's text straight into a commit's buffer, writes what Fields wrote
// before it existed, url.QueryEscape(printable(s, n)), for every byte and
// for random strings cut at random lengths, and that textLen is its length.
func TestAppendTextIsQueryEscape(t *testing.T) {
	check := func(s string, n int) {
		t.Helper()
		want := url.QueryEscape(printable(s, n))
		if got := string(appendText(nil, s, n)); got != want {
			t.Fatalf("appendText(%q, %d) = %q, want %q", s, n, got, want)
		}
		if got := textLen(s, n); got != len(want) {
			t.Fatalf("textLen(%q, %d) = %d, want %d", s, n, got, len(want))
		}
	}
	for c := range 256 {
		check(string([]byte{byte(c)}), 1)
	}
	r := rand.New(rand.NewPCG(propertySeed, 7))
	for range 2000 {
		b := make([]byte, r.IntN(300))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		check(string(b), r.IntN(MaxReasonLen+1))
	}
}

// TestFieldsLen checks that the lengths the commit encoder plans with are
// those of Fields, for reports within their bounds and outside them (the
// numbers are written as they are, negative ones too).
func TestFieldsLen(t *testing.T) {
	r := rand.New(rand.NewPCG(propertySeed, 8))
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return math.MinInt64 + r.Int64N(3)
		case 1:
			return math.MaxInt64 - r.Int64N(3)
		case 2:
			return r.Int64N(2000) - 1000
		}
		return r.Int64()
	}
	text := func() string {
		b := make([]byte, r.IntN(3*MaxReasonLen))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	for range 2000 {
		first, last, since, attempts := num(), num(), time.UnixMilli(num()), int(num())
		s := Stall{Report{first, last, since, text()}, attempts, text(), false}
		if got, want := s.fieldsLen(), len(s.Fields()); got != want {
			t.Fatalf("%+v: fieldsLen = %d, want len(Fields()) = %d", s, got, want)
		}
		l := Loss{Report{num(), num(), time.UnixMilli(num()), []string{CauseRetention, CauseTruncation, CauseUnknown, "", "x"}[r.IntN(5)]}, num()}
		if got, want := l.fieldsLen(), len(l.Fields()); got != want {
			t.Fatalf("%+v: fieldsLen = %d, want len(Fields()) = %d", l, got, want)
		}
	}
}
