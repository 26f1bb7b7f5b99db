package commitmeta

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// sameMeta reports whether a and b are equal, a nil and an empty Delivered
// being the same.
func sameMeta(a, b Meta) bool {
	return a.Base == b.Base && a.Epoch == b.Epoch && slices.Equal(a.Delivered, b.Delivered)
}

func TestDecodeValid(t *testing.T) {
	const top = math.MaxInt64
	for _, tc := range []struct {
		in   string
		want Meta
	}{
		{"wm1 o=1200 e=3 d=10.50,20.40", Meta{1200, 3, []Range{{1210, 1260}, {1280, 1320}}}},
		{"wm1 o=0 e=0", Meta{0, 0, nil}},
		{"wm1 o=0 e=-1", Meta{0, -1, nil}},
		{"wm1 o=7 e=2 d=", Meta{7, 2, nil}},
		// Fields in any order; the encoder's order is only a habit.
		{"wm1 d=10.50,20.40 e=3 o=1200", Meta{1200, 3, []Range{{1210, 1260}, {1280, 1320}}}},
		{"wm1 e=3 d=1.1 o=5", Meta{5, 3, []Range{{6, 7}}}},
		// Unknown fields, empty or not, are ignored.
		{"wm1 o=1 e=0 s=nack@17,a=b zz=", Meta{1, 0, nil}},
		{"wm1 s=x o=1 e=0 d=1.1", Meta{1, 0, []Range{{2, 3}}}},
		// The largest values; To may equal MaxInt64 (it is exclusive).
		{"wm1 o=9223372036854775807 e=2147483647", Meta{top, math.MaxInt32, nil}},
		{"wm1 o=0 e=-1 d=1.9223372036854775806", Meta{0, -1, []Range{{1, top}}}},
		{"wm1 o=9223372036854775797 e=1 d=1.4,3.2", Meta{top - 10, 1, []Range{{top - 9, top - 5}, {top - 2, top}}}},
		{"wm1 o=9223372036854775805 e=1 d=1.1", Meta{top - 2, 1, []Range{{top - 1, top}}}},
	} {
		got, err := Decode(tc.in)
		if err != nil || !sameMeta(got, tc.want) {
			t.Errorf("Decode(%q) = %+v, %v, want %+v, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestDecodeFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"wm1 o=1 e=0", nil},
		{"wm1 o=1 e=0 d=1.1", nil},
		{"wm1 o=1 e=0 s=nack@17", map[string]string{"s": "nack@17"}},
		{"wm1 zz= o=1 e=0 s=a=b,c", map[string]string{"s": "a=b,c", "zz": ""}},
	} {
		_, got, err := DecodeFields(tc.in)
		if err != nil || !mapsEqual(got, tc.want) {
			t.Errorf("DecodeFields(%q) fields = %v, %v, want %v, nil", tc.in, got, err, tc.want)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestDecodeNotOursOrVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrNotOurs},
		{"w", ErrNotOurs},
		{"wm", ErrNotOurs},
		{"wm1", ErrNotOurs},
		{"wm1o=1 e=1", ErrNotOurs},
		{"wm ", ErrNotOurs},
		{"wmx o=1", ErrNotOurs},
		{"WM1 o=1 e=1", ErrNotOurs},
		{" wm1 o=1 e=1", ErrNotOurs},
		// kgo's member ID (client ID and a UUID) and a bare base64 UUID.
		{"watermark-connect-0d5c1a2e-6c1f-4e0b-9a7e-1f2d3c4b5a69", ErrNotOurs},
		{"DdUsz3v6QyuA8x3Y1bDmKw", ErrNotOurs},
		{"wm2 o=1", ErrVersion},
		{"wm0 ", ErrVersion},
		{"wm10 o=1 e=1", ErrVersion},
		{"wm01 o=1 e=1", ErrVersion},
		{"wm" + strings.Repeat("9", 100) + " x", ErrVersion},
	} {
		got, err := Decode(tc.in)
		if !errors.Is(err, tc.want) || !sameMeta(got, Meta{}) {
			t.Errorf("Decode(%q) = %+v, %v, want zero Meta, %v", tc.in, got, err, tc.want)
		}
	}
}

func TestDecodeSyntaxError(t *testing.T) {
	tooLong := Prefix + "o=1 e=1 s=" + strings.Repeat("x", MaxDecodeBytes)
	for _, tc := range []struct {
		in     string
		offset int
		detail error // nil: no detail
	}{
		{"wm1 ", 4, nil},
		{"wm1 e=1", 7, ErrMissingField},
		{"wm1 o=1", 7, ErrMissingField},
		{"wm1 o=1 s=2", 11, ErrMissingField},
		{"wm1 o= e=1", 6, nil},
		{"wm1 o=1 e=", 10, nil},
		{"wm1 o=-1 e=1", 6, nil},
		{"wm1 o=+1 e=1", 6, nil},
		{"wm1 o=1x e=1", 7, nil},
		{"wm1 o=01 e=1", 6, nil},
		{"wm1 o=00 e=1", 6, nil},
		{"wm1 o=9223372036854775808 e=1", 6, ErrOverflow},
		{"wm1 o=99999999999999999999999 e=1", 6, ErrOverflow},
		{"wm1 o=1 e=2147483648", 10, ErrOverflow},
		{"wm1 o=1 e=-2", 10, nil},
		{"wm1 o=1 e=-0", 10, nil},
		{"wm1 o=1 e=-", 10, nil},
		{"wm1 o=1 e=01", 10, nil},
		{"wm1 o=1 e=1 d=-1.2", 14, nil},                          // negative gap
		{"wm1 o=1 e=1 d=0.1", 14, nil},                           // zero gap: From == Base
		{"wm1 o=1 e=1 d=1.0", 16, nil},                           // zero length
		{"wm1 o=1 e=1 d=1.1,0.1", 18, nil},                       // zero gap: adjacent ranges
		{"wm1 o=1 e=1 d=01.1", 14, nil},                          // leading zero
		{"wm1 o=1 e=1 d=1.01", 16, nil},                          // leading zero
		{"wm1 o=1 e=1 d=1.1,", 18, nil},                          // trailing comma
		{"wm1 o=1 e=1 d=1.1, s=1", 18, nil},                      // trailing comma before a field
		{"wm1 o=1 e=1 d=,1.1", 14, nil},                          // leading comma
		{"wm1 o=1 e=1 d=1.1,,2.2", 18, nil},                      // empty range
		{"wm1 o=1 e=1 d=1", 15, nil},                             // no length
		{"wm1 o=1 e=1 d=1.", 16, nil},                            // empty length
		{"wm1 o=1 e=1 d=1..2", 16, nil},                          // empty length
		{"wm1 o=1 e=1 d=1.2.3", 17, nil},                         // a third number
		{"wm1 o=1 e=1 d=1.2;3.4", 17, nil},                       // wrong separator
		{"wm1 o=1 e=1 d=1.1x", 17, nil},                          // junk after a length
		{"wm1 o=9223372036854775806 e=1 d=1.1", 34, ErrOverflow}, // To past MaxInt64
		{"wm1 o=9223372036854775807 e=1 d=1.1", 32, ErrOverflow}, // From past MaxInt64
		{"wm1 o=0 e=1 d=1.9223372036854775806,1.1", 36, ErrOverflow},
		{"wm1 o=0 e=1 d=4611686018427387904.4611686018427387904", 34, ErrOverflow},
		{"wm1 o=1 e=1 d=1.99999999999999999999", 16, ErrOverflow},
		{"wm1 o=1 e=1 s=\u00e9", 14, nil}, // non-ASCII
		{"wm1 o=1\te=1", 7, nil},          // control byte
		{"wm1 o=1 e=1 s=\x7f", 14, nil},   // DEL
		{"wm1 o=1 e=1 s=\x00", 14, nil},   // NUL
		{"wm1 o=1  e=1", 8, nil},          // double space
		{"wm1  o=1 e=1", 4, nil},          // double space after the prefix
		{"wm1 o=1 e=1 ", 12, nil},         // trailing space
		{"wm1 O=1 e=1", 4, nil},           // key with uppercase
		{"wm1 o=1 e=1 Stall=1", 12, nil},  // key with uppercase
		{"wm1 o=1 e=1 sT=1", 13, nil},     // key with uppercase
		{"wm1 o=1 e=1 s_x=1", 13, nil},    // key with '_'
		{"wm1 o=1 e=1 s", 13, nil},        // no '='
		{"wm1 o=1 e=1 =1", 12, nil},       // no key
		{"wm1 o=1 e=1 o=2", 12, ErrDuplicateField},
		{"wm1 o=1 e=1 d= d=1.1", 15, ErrDuplicateField},
		{"wm1 o=1 e=1 s=1 s=2", 16, ErrDuplicateField},
		{tooLong, MaxDecodeBytes, ErrTooLong},
		{"wm1 o=1 e=1 " + manyFields(MaxUnknownFields+1), 12 + 4*MaxUnknownFields, ErrTooManyFields},
		{"wm1 o=1 e=1 " + manyFields(MaxUnknownFields) + " aa=", 12 + 4*MaxUnknownFields, ErrDuplicateField},
	} {
		got, err := Decode(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%.40q) = %+v, %v, want a *SyntaxError", tc.in, got, err)
			continue
		}
		if se.Offset != tc.offset || !errors.Is(se, tc.detail) && tc.detail != nil || tc.detail == nil && se.Err != nil {
			t.Errorf("Decode(%.40q) = %v (offset %d, detail %v), want offset %d, detail %v", tc.in, err, se.Offset, se.Err, tc.offset, tc.detail)
		}
		if !sameMeta(got, Meta{}) {
			t.Errorf("Decode(%.40q) = %+v, want a zero Meta with the error", tc.in, got)
		}
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"wm1 o=01 e=1", "commitmeta: malformed metadata at byte 6: want the base o without leading zeros, got '0'"},
		{"wm1 o=1 e=1 d=1.1,", "commitmeta: malformed metadata at byte 18: want a decimal digit in a d gap, got end of input"},
		{"wm1 o=1 e=1 s=\u00e9", "commitmeta: malformed metadata at byte 14: want printable ASCII (0x20-0x7E), got byte 0xc3"},
		{"wm1 o=1 e=9999999999", "commitmeta: malformed metadata at byte 10: want the epoch e that fits its type, got '9': number overflows"},
		{"wm1 e=1", "commitmeta: malformed metadata at byte 7: want an o=<base> field, got end of input: missing field"},
	} {
		if _, err := Decode(tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("Decode(%q) error = %v, want %s", tc.in, err, tc.want)
		}
	}
	if _, err := Decode("wm2 o=1"); err == nil || err.Error() != "commitmeta: unsupported metadata version: wm2" {
		t.Errorf(`Decode("wm2 o=1") error = %v, want commitmeta: unsupported metadata version: wm2`, err)
	}
}
