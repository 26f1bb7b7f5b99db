package keyorder

import (
	"strconv"
	"testing"
)

// BenchmarkPickDone is the scheduler's cost per record in steady state: 64
// batches of 64 records out, each done in turn and replaced, over nKeys keys.
func BenchmarkPickDone(b *testing.B) {
	for _, nKeys := range []int{1000, 100000} {
		b.Run(strconv.Itoa(nKeys)+"keys", func(b *testing.B) {
			keys := make([]string, nKeys)
			for i := range keys {
				keys[i] = "key-" + strconv.Itoa(i)
			}
			s := NewScheduler[int]()
			o := NewOffsets(0)
			off := int64(0)
			fill := func() {
				for s.Held() < 8192 {
					s.Add(tRecord{Offset: off, Key: keys[int(off*2654435761)%nKeys], Keyed: true})
					o.Add(off)
					off++
				}
			}
			var out [][]tRecord
			fill()
			for len(out) < 64 {
				out = append(out, s.Pick(64))
			}
			b.ResetTimer()
			recs := 0
			for b.Loop() {
				done := out[0]
				out = out[1:]
				s.Done(done)
				for _, r := range done {
					o.Done(r.Offset)
				}
				recs += len(done)
				fill()
				out = append(out, s.Pick(64))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(recs, 1)), "ns/record")
		})
	}
}
