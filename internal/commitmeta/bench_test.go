package commitmeta

import (
	"math/rand/v2"
	"testing"
)

// benchMeta returns a Meta with n ranges at realistic distances: a base in
// the billions and gaps and lengths of tens to thousands of offsets, as when
// a few slow batches hold the watermark back.
func benchMeta(n int) Meta {
	r := rand.New(rand.NewPCG(1, 2))
	m := Meta{Base: 4_000_000_000, Epoch: 17}
	prev := m.Base
	for range n {
		from := prev + 1 + r.Int64N(500)
		to := from + 1 + r.Int64N(5000)
		m.Delivered = append(m.Delivered, Range{from, to})
		prev = to
	}
	return m
}

func BenchmarkEncode100Ranges(b *testing.B) {
	m := benchMeta(100)
	b.ReportAllocs()
	for b.Loop() {
		if _, cut := Encode(m, "", 4096); cut != 0 {
			b.Fatalf("Encode cut %d ranges, want 0", cut)
		}
	}
}

func BenchmarkAppendEncode100Ranges(b *testing.B) {
	m := benchMeta(100)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendEncode(buf[:0], m, "", 4096)
	}
}

func BenchmarkDecode100Ranges(b *testing.B) {
	s, _ := Encode(benchMeta(100), "", 4096)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeNoRanges(b *testing.B) {
	s, _ := Encode(Meta{Base: 4_000_000_000, Epoch: 17}, "", 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCovered100Ranges(b *testing.B) {
	m := benchMeta(100)
	last := m.Delivered[len(m.Delivered)-1].To
	var off int64
	b.ReportAllocs()
	for b.Loop() {
		m.Covered(m.Base + off)
		off = (off + 7919) % (last - m.Base)
	}
}

func BenchmarkEncodeNoRanges(b *testing.B) {
	m := Meta{Base: 4_000_000_000, Epoch: 17}
	b.ReportAllocs()
	for b.Loop() {
		Encode(m, "", 4096)
	}
}
