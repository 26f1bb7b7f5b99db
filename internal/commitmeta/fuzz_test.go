package commitmeta

import (
	"errors"
	"math"
	"math/big"
	"sort"
	"strings"
	"testing"
)

// FuzzDecode feeds Decode and DecodeFields arbitrary strings, as any client
// with access to the group may commit them, and checks:
//   - neither panics, and both agree (same Meta, same error);
//   - an error is ErrNotOurs, ErrVersion or a *SyntaxError whose offset lies
//     within the input, comes with a zero Meta, and a string starting with
//     Prefix is never ErrNotOurs or ErrVersion;
//   - on success the Meta satisfies every invariant: Base >= 0, Epoch >= -1,
//     each range non-empty with Base < From < To <= MaxInt64, sorted,
//     non-overlapping and non-adjacent;
//   - Records() equals the exact (big-integer) sum, so it does not overflow
//     or saturate;
//   - Covered holds at both ends of every range and not just outside them;
//   - Encode(m, the unknown fields, len(s)) cuts nothing, is no longer than
//     s, and decodes to the same Meta and fields;
//   - DecodeCommit agrees with them and keeps its guarantees (see
//     checkDecodeCommit), l=, a= and the dead-letter report included.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"wm1 o=1200 e=3 d=10.50,20.40",
		"wm1 o=0 e=-1",
		"wm1 o=7 e=2 d=",
		"wm1 d=1.1 e=3 o=5 s=nack@17",
		"wm1 o=9223372036854775797 e=2147483647 d=1.4,3.2",
		"wm1 o=0 e=0 d=1.9223372036854775806",
		"wm1 o=9223372036854775806 e=1 d=1.1",
		"wm1 o=1 e=1 d=1.1,",
		"wm1 o=01 e=1",
		"wm1 o=1  e=1",
		"wm1 o=1 e=1 o=2",
		"wm1 o=1 e=1 S=x",
		"wm1 o=1 e=1 s=\u00e9",
		"wm2 o=1",
		"wm1",
		"",
		"watermark-connect-0d5c1a2e-6c1f-4e0b-9a7e-1f2d3c4b5a69",
		"wm1 o=1200 e=3 d=10.50,20.40 l=4",
		"wm1 o=5 e=-1 d=2.1 l=-1",
		"wm1 o=5 e=1 d=2.1 l=2147483647",
		"wm1 o=5 e=1 d=2.1 l=2147483648",
		"wm1 o=5 e=1 d=2.1 l=+1",
		"wm1 o=5 e=1 d=2.1 l=01",
		"wm1 o=5 e=1 d=2.1 l=-2",
		"wm1 o=5 e=1 d=2.1 l=",
		"wm1 o=5 e=1 d=2.1",
		"wm1 o=5 e=1 l=x",
		"wm1 o=1200 e=3 d=10.50 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 lf=100 ll=1199 ln=1100 ls=1767225600000 lc=retention l=3",
		"wm1 o=1200 e=3 d=10.50 sf=1200 lf=100 l=3",
		"wm1 o=1200 e=3 sf=1200",
		"wm1 o=9223372036854775807 e=2147483647 sf=9223372036854775807",
		"wm1 o=1200 e=3 sf=1200 sl=1209",
		"wm1 o=1200 e=3 sf=01200",
		"wm1 o=1200 e=3 sf= sr=x",
		"wm1 o=1200 e=3 d=10.50,20.40 sf=1200 sl=1209 ss=1767225600000 sa=3 sm=orders-sink%40pod-7 sr=http+503 a=0.10.3,0.5.1 xf=100 xl=140 xn=12 xs=1767225600000 xr=http+503 l=4",
		"wm1 o=1200 e=3 a=0.10.3,0.5.1,20.1.2147483647",
		"wm1 o=9223372036854775806 e=3 a=0.1.1",
		"wm1 o=9223372036854775806 e=3 a=0.1.1,0.1.1",
		"wm1 o=1200 e=3 a=0.1.2147483648",
		"wm1 o=1200 e=3 a=0.0.1",
		"wm1 o=1200 e=3 a=",
		"wm1 o=1200 e=3 a=01.1.1,",
		"wm1 o=1200 e=3 xf=100 xl=140 xn=41 xs=0 xr=",
		"wm1 o=1200 e=3 xf=100 xl=140 xn=42 xs=0 xr=%0A",
		"wm1 o=1200 e=3 xf=100",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, fields, err := DecodeFields(s)
		m2, err2 := Decode(s)
		if !sameMeta(m, m2) || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("Decode(%q) = %+v, %v, but DecodeFields = %+v, %v", s, m2, err2, m, err)
		}
		checkDecodeCommit(t, s, m, fields, err)
		if err != nil {
			checkDecodeError(t, s, m, fields, err)
			return
		}
		if err := m.check(); err != nil {
			t.Fatalf("Decode(%q) = %+v, which breaks an invariant: %v", s, m, err)
		}
		sum := new(big.Int)
		for _, r := range m.Delivered {
			sum.Add(sum, new(big.Int).Sub(big.NewInt(r.To), big.NewInt(r.From)))
			if !m.Covered(r.From) || !m.Covered(r.To-1) || m.Covered(r.From-1) || r.To < math.MaxInt64 && m.Covered(r.To) {
				t.Fatalf("Decode(%q) = %+v: Covered is wrong at an end of %+v", s, m, r)
			}
		}
		if !sum.IsInt64() || sum.Int64() != m.Records() || m.Records() == math.MaxInt64 {
			t.Fatalf("Decode(%q).Records() = %d, want %v (not saturated)", s, m.Records(), sum)
		}
		if m.Covered(m.Base) {
			t.Fatalf("Decode(%q).Covered(Base %d) = true, want false", s, m.Base)
		}

		extra := joinFields(fields)
		enc, cut := Encode(m, extra, len(s))
		if cut != 0 || enc == "" || len(enc) > len(s) {
			t.Fatalf("Encode(Decode(%q), %q, %d) = %q, %d, want at most %d bytes and cut 0", s, extra, len(s), enc, cut, len(s))
		}
		back, backFields, err := DecodeFields(enc)
		if err != nil || !sameMeta(back, m) || !mapsEqual(backFields, fields) {
			t.Fatalf("DecodeFields(Encode(Decode(%q))) = %+v, %v, %v, want %+v, %v, nil", s, back, backFields, err, m, fields)
		}
	})
}

func checkDecodeError(t *testing.T, s string, m Meta, fields map[string]string, err error) {
	t.Helper()
	if !sameMeta(m, Meta{}) || m.Delivered != nil || fields != nil {
		t.Fatalf("DecodeFields(%q) = %+v, %v with error %v, want zero results", s, m, fields, err)
	}
	var se *SyntaxError
	switch {
	case errors.As(err, &se):
		if se.Offset < 0 || se.Offset > len(s) {
			t.Fatalf("Decode(%q) error offset %d, want within [0, %d]", s, se.Offset, len(s))
		}
	case errors.Is(err, ErrNotOurs), errors.Is(err, ErrVersion):
		if strings.HasPrefix(s, Prefix) {
			t.Fatalf("Decode(%q) = %v, want a *SyntaxError for a string starting with %q", s, err, Prefix)
		}
	default:
		t.Fatalf("Decode(%q) = %v, want ErrNotOurs, ErrVersion or a *SyntaxError", s, err)
	}
}

// joinFields returns fields as an extra argument for Encode, in key order.
func joinFields(fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + fields[k]
	}
	return strings.Join(parts, " ")
}

// FuzzRoundTrip builds a valid Meta from arbitrary numbers (each 6 bytes of
// data is a gap and a length, scaled by a shift so magnitudes up to MaxInt64
// occur) and checks, for an arbitrary limit: the encoding fits maxBytes;
// it decodes to exactly the first len(Delivered)-cut ranges; and the prefix
// is the longest that fits.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(1200), int32(3), []byte{9, 49, 0, 19, 39, 0, 0, 0, 0}, 4096)
	f.Add(int64(math.MaxInt64-100), int32(-1), []byte{0, 0, 60, 0, 0, 60, 1, 1, 1}, 40)
	f.Add(int64(0), int32(math.MaxInt32), []byte{255, 255, 63, 255, 255, 63}, 30)
	f.Fuzz(func(t *testing.T, base int64, epoch int32, data []byte, maxBytes int) {
		m := Meta{Base: base, Epoch: epoch}
		if m.Base < 0 {
			m.Base = -(m.Base + 1)
		}
		if m.Epoch < -1 {
			m.Epoch = -1
		}
		prev := m.Base
		for ; len(data) >= 6; data = data[6:] {
			gap := 1 + int64(uint64(data[0])|uint64(data[1])<<8)<<(data[2]%48)
			n := 1 + int64(uint64(data[3])|uint64(data[4])<<8)<<(data[5]%48)
			if gap <= 0 || n <= 0 || gap >= math.MaxInt64-prev || n > math.MaxInt64-prev-gap {
				break
			}
			m.Delivered = append(m.Delivered, Range{prev + gap, prev + gap + n})
			prev += gap + n
		}
		maxBytes %= 8192

		s, cut := Encode(m, "", maxBytes)
		kept := len(m.Delivered) - cut
		if len(s) > max(maxBytes, 0) || kept < 0 || cut < 0 {
			t.Fatalf("Encode(%+v, \"\", %d) = %q, %d: too long or cut out of range", m, maxBytes, s, cut)
		}
		if s == "" {
			if header, _ := Encode(Meta{m.Base, m.Epoch, nil}, "", math.MaxInt); len(header) <= maxBytes || cut != len(m.Delivered) {
				t.Fatalf("Encode(%+v, \"\", %d) = \"\", %d, but the header %q fits", m, maxBytes, cut, header)
			}
			return
		}
		want := Meta{m.Base, m.Epoch, m.Delivered[:kept]}
		if got, err := Decode(s); err != nil || !sameMeta(got, want) {
			t.Fatalf("Decode(%q) = %+v, %v, want %+v, nil", s, got, err, want)
		}
		if cut > 0 {
			if more, _ := Encode(Meta{m.Base, m.Epoch, m.Delivered[:kept+1]}, "", math.MaxInt); len(more) <= maxBytes {
				t.Fatalf("Encode(%+v, \"\", %d) cut %d, but %q with one more range fits", m, maxBytes, cut, more)
			}
		}
	})
}
