package commitmeta

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	const top = math.MaxInt64
	example := Meta{1200, 3, []Range{{1210, 1260}, {1280, 1320}}}
	// One long range between two short ones: a prefix stops at the long
	// one even though the short one after it would fit.
	spiky := Meta{0, 0, []Range{{1, 2}, {1_000_000_000, 1_000_000_001}, {1_000_000_003, 1_000_000_004}}}
	for _, tc := range []struct {
		m        Meta
		extra    string
		maxBytes int
		want     string
		cut      int
	}{
		{example, "", 4096, "wm1 o=1200 e=3 d=10.50,20.40", 0},
		{example, "", 28, "wm1 o=1200 e=3 d=10.50,20.40", 0}, // exactly fits
		{Meta{0, 0, nil}, "", 4096, "wm1 o=0 e=0", 0},
		{Meta{0, 0, []Range{}}, "", 4096, "wm1 o=0 e=0", 0},
		{Meta{5, -1, []Range{{7, 8}}}, "", 4096, "wm1 o=5 e=-1 d=2.1", 0},
		{Meta{top, math.MaxInt32, nil}, "", 4096, "wm1 o=9223372036854775807 e=2147483647", 0},
		{Meta{0, 0, []Range{{1, top}}}, "", 4096, "wm1 o=0 e=0 d=1.9223372036854775806", 0},
		{Meta{top - 10, 1, []Range{{top - 9, top - 5}, {top - 2, top}}}, "", 4096, "wm1 o=9223372036854775797 e=1 d=1.4,3.2", 0},
		// Truncation keeps the ranges nearest Base and counts the rest.
		{example, "", 27, "wm1 o=1200 e=3 d=10.50", 1},
		{example, "", 22, "wm1 o=1200 e=3 d=10.50", 1},
		{example, "", 21, "wm1 o=1200 e=3", 2}, // header only
		{example, "", 14, "wm1 o=1200 e=3", 2},
		{spiky, "", 4096, "wm1 o=0 e=0 d=1.1,999999998.1,2.1", 0},
		{spiky, "", 28, "wm1 o=0 e=0 d=1.1", 2},
		// Even the header does not fit: no metadata at all.
		{example, "", 13, "", 2},
		{example, "", 0, "", 2},
		{example, "", -1, "", 2},
		{Meta{0, 0, nil}, "", 10, "", 0},
		// Room for extra is taken before any range.
		{example, "s=nack@1300", 4096, "wm1 o=1200 e=3 d=10.50,20.40 s=nack@1300", 0},
		{example, "s=nack@1300 x=", 4096, "wm1 o=1200 e=3 d=10.50,20.40 s=nack@1300 x=", 0},
		{example, "s=nack@1300", 39, "wm1 o=1200 e=3 d=10.50 s=nack@1300", 1},
		{example, "s=nack@1300", 26, "wm1 o=1200 e=3 s=nack@1300", 2},
		{example, "s=nack@1300", 25, "", 2}, // the header fits, extra does not
	} {
		got, cut := Encode(tc.m, tc.extra, tc.maxBytes)
		if got != tc.want || cut != tc.cut {
			t.Errorf("Encode(%+v, %q, %d) = %q, %d, want %q, %d", tc.m, tc.extra, tc.maxBytes, got, cut, tc.want, tc.cut)
		}
		if len(got) > max(tc.maxBytes, 0) {
			t.Errorf("Encode(%+v, %q, %d) = %q, longer than %d bytes", tc.m, tc.extra, tc.maxBytes, got, tc.maxBytes)
		}
		dst := []byte("keep:")
		app, appCut := appendEncode(dst, tc.m, tc.extra, tc.maxBytes)
		if string(app) != "keep:"+tc.want || appCut != tc.cut {
			t.Errorf("appendEncode(%q, %+v, %q, %d) = %q, %d, want %q, %d", dst, tc.m, tc.extra, tc.maxBytes, app, appCut, "keep:"+tc.want, tc.cut)
		}
	}
}

func TestEncodePanicsOnDriverBug(t *testing.T) {
	ok := Meta{10, 1, []Range{{12, 14}}}
	for _, tc := range []struct {
		m     Meta
		extra string
		want  string // a part of the panic message
	}{
		{Meta{-1, 0, nil}, "", "base -1 is negative"},
		{Meta{0, -2, nil}, "", "epoch -2 is below -1"},
		{Meta{10, 0, []Range{{10, 12}}}, "", "not above base"},
		{Meta{10, 0, []Range{{5, 12}}}, "", "not above base"},
		{Meta{10, 0, []Range{{12, 12}}}, "", "is empty"},
		{Meta{10, 0, []Range{{14, 12}}}, "", "is empty"},
		{Meta{10, 0, []Range{{12, 14}, {14, 16}}}, "", "adjacent"},
		{Meta{10, 0, []Range{{12, 16}, {14, 18}}}, "", "overlaps"},
		{Meta{10, 0, []Range{{20, 22}, {12, 14}}}, "", "overlaps or precedes"},
		{ok, "S=1", "a field key"},
		{ok, "s", "'='"},
		{ok, " s=1", "a field key"},
		{ok, "s=1 ", "a field key"},
		{ok, "s=1  t=2", "a field key"},
		{ok, "s=a\tb", "a printable value byte"},
		{ok, "s=\u00e9", "a printable value byte"},
		{ok, "o=1", `key "o" at byte 0 is reserved`},
		{ok, "s=1 d=", `key "d" at byte 4 is reserved`},
		{ok, "s=1 t=2 s=3", `key "s" at byte 8: duplicate field`},
		{ok, manyFields(MaxUnknownFields + 1), "more than 32 fields: too many fields"},
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			Encode(tc.m, tc.extra, 4096)
			return ""
		}()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("Encode(%+v, %q, 4096) panics with %q, want a panic naming %q", tc.m, tc.extra, msg, tc.want)
		}
	}
}

func TestDecimalLen(t *testing.T) {
	for _, v := range []int64{math.MinInt64, math.MinInt64 + 1, -10, -9, -1, 0, 1, 9, 10, 99, 100, 1 << 32, math.MaxInt64 - 1, math.MaxInt64} {
		if got, want := decimalLen(v), len(fmt.Sprint(v)); got != want {
			t.Errorf("decimalLen(%d) = %d, want %d", v, got, want)
		}
	}
}

// manyFields returns n fields with distinct keys: "aa= ab= ...".
func manyFields(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = string([]byte{'a' + byte(i/26), 'a' + byte(i%26)}) + "="
	}
	return strings.Join(parts, " ")
}

func TestEncodeMostExtraFields(t *testing.T) {
	extra := manyFields(MaxUnknownFields)
	s, cut := Encode(Meta{1, 0, nil}, extra, 4096)
	_, fields, err := DecodeFields(s)
	if cut != 0 || err != nil || len(fields) != MaxUnknownFields {
		t.Errorf("DecodeFields(Encode(..., %d fields, 4096)) = %d fields, %v, want %d, nil", MaxUnknownFields, len(fields), err, MaxUnknownFields)
	}
}
