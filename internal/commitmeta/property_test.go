package commitmeta

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// propertySeed seeds TestRoundTripProperty; every failure message names it
// and the case, so a failure reproduces with the same seed.
const propertySeed = 20260918

// randMeta returns a valid Meta whose numbers span small, large and
// near-MaxInt64 magnitudes, with up to 200 ranges.
func randMeta(r *rand.Rand) Meta {
	var m Meta
	switch r.IntN(3) {
	case 0:
		m.Base = r.Int64N(1000)
	case 1:
		m.Base = r.Int64N(math.MaxInt64)
	default:
		m.Base = math.MaxInt64 - r.Int64N(1000)
	}
	switch r.IntN(3) {
	case 0:
		m.Epoch = -1
	case 1:
		m.Epoch = r.Int32N(100)
	default:
		m.Epoch = math.MaxInt32 - r.Int32N(2)
	}
	magnitude := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 1
		case 1:
			return 1 + r.Int64N(100)
		case 2:
			return 1 + r.Int64N(1_000_000)
		default:
			return 1 + r.Int64N(math.MaxInt64/8)
		}
	}
	prev := m.Base
	for range r.IntN(201) {
		gap, n := magnitude(), magnitude()
		if gap >= math.MaxInt64-prev || n > math.MaxInt64-prev-gap {
			break // no room left below MaxInt64
		}
		m.Delivered = append(m.Delivered, Range{prev + gap, prev + gap + n})
		prev += gap + n
	}
	return m
}

// randExtra returns "" or one to three fields with distinct keys, none of
// them o, e or d, and their map.
func randExtra(r *rand.Rand) (string, map[string]string) {
	if r.IntN(3) != 0 {
		return "", nil
	}
	keys := []string{"s", "x", "zz", "stall", "a"}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	fields := map[string]string{}
	var parts []string
	for _, key := range keys[:1+r.IntN(3)] {
		value := make([]byte, r.IntN(12))
		for i := range value {
			value[i] = byte('!' + r.IntN('~'-'!'+1))
		}
		fields[key] = string(value)
		parts = append(parts, key+"="+string(value))
	}
	return strings.Join(parts, " "), fields
}

// TestRoundTripProperty encodes 5,000 random Metas with random limits and
// checks that the output fits, that cut is exact, that what is kept is the
// longest prefix that fits, and that it decodes to exactly that prefix.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(propertySeed, propertySeed))
	var none, truncated, whole int // outcomes seen, so the test cannot pass vacuously
	for i := range 5000 {
		m := randMeta(r)
		extra, fields := randExtra(r)
		full, _ := Encode(m, extra, math.MaxInt)
		maxBytes := r.IntN(len(full)+16) - 4
		if r.IntN(8) == 0 {
			maxBytes = len(full)
		}

		s, cut := Encode(m, extra, maxBytes)
		kept := len(m.Delivered) - cut
		if len(s) > max(maxBytes, 0) || cut < 0 || kept < 0 {
			t.Fatalf("seed %d case %d: Encode(%+v, %q, %d) = %q, %d: longer than maxBytes or cut out of range", propertySeed, i, m, extra, maxBytes, s, cut)
		}
		header, _ := Encode(Meta{m.Base, m.Epoch, nil}, extra, math.MaxInt)
		if s == "" {
			if cut != len(m.Delivered) || len(header) <= maxBytes {
				t.Fatalf("seed %d case %d: Encode(%+v, %q, %d) = \"\", %d, want the header %q (%d bytes) and cut %d", propertySeed, i, m, extra, maxBytes, cut, header, len(header), len(m.Delivered))
			}
			none++
			continue
		}
		want := Meta{m.Base, m.Epoch, m.Delivered[:kept]}
		got, gotFields, err := DecodeFields(s)
		if err != nil || !sameMeta(got, want) || !mapsEqual(gotFields, nilIfEmpty(fields)) {
			t.Fatalf("seed %d case %d: DecodeFields(%q) = %+v, %v, %v, want %+v, %v, nil", propertySeed, i, s, got, gotFields, err, want, fields)
		}
		if cut == 0 {
			whole++
		} else {
			truncated++
			// The prefix is the longest that fits: one more range does not.
			more, _ := Encode(Meta{m.Base, m.Epoch, m.Delivered[:kept+1]}, extra, math.MaxInt)
			if len(more) <= maxBytes {
				t.Fatalf("seed %d case %d: Encode(%+v, %q, %d) cut %d, but %q (%d bytes) with one more range fits", propertySeed, i, m, extra, maxBytes, cut, more, len(more))
			}
		}
		app, appCut := appendEncode([]byte("x"), m, extra, maxBytes)
		if string(app) != "x"+s || appCut != cut {
			t.Fatalf("seed %d case %d: appendEncode(\"x\", %+v, %q, %d) = %q, %d, want %q, %d", propertySeed, i, m, extra, maxBytes, app, appCut, "x"+s, cut)
		}
		for _, rg := range want.Delivered {
			if !got.Covered(rg.From) || !got.Covered(rg.To-1) || got.Covered(rg.From-1) || got.Covered(rg.To) {
				t.Fatalf("seed %d case %d: Covered disagrees with %+v around %+v", propertySeed, i, got, rg)
			}
		}
		if err := got.check(); err != nil {
			t.Fatalf("seed %d case %d: Decode(%q) = %+v, which breaks an invariant: %v", propertySeed, i, s, got, err)
		}
	}
	if none < 100 || truncated < 100 || whole < 100 {
		t.Fatalf("seed %d: outcomes none %d, truncated %d, whole %d, want at least 100 of each", propertySeed, none, truncated, whole)
	}
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
