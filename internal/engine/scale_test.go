package engine

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestScaleStateSize reports what the owner holds, in the Go heap, per
// assigned partition and per pending batch: 10,000 partitions with one
// record each delivered and committed (idle), and 1,000 partitions with
// 1,024 batches of one record pending each (the pending limit). The records
// the fake fetches allocate are counted with the batches that hold them.
// It runs only when BENCH_RSS is set, and asserts nothing.
func TestScaleStateSize(t *testing.T) {
	if os.Getenv("BENCH_RSS") == "" {
		t.Skip("set BENCH_RSS=1 to measure")
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	h0 := heap()
	idle := newScaleRig(t, scaleParts, "")
	h1 := heap()
	perPart := float64(h1-h0) / scaleParts
	runtime.KeepAlive(idle)
	full := newScaleRig(t, 1000, "")
	h1 = heap()
	all := full.pick(1000)
	for range 1024 {
		full.feed(t, all)
	}
	h2 := heap()
	perBatch := float64(h2-h1) / (1000 * 1024)
	runtime.KeepAlive(full)
	fmt.Printf("\n| owner state (Go heap, after GC) | bytes |\n| --- | ---: |\n")
	fmt.Printf("| per idle assigned partition (10,000 assigned) | %.0f |\n", perPart)
	fmt.Printf("| per pending batch of one record (1,000 partitions at 1,024 pending) | %.0f |\n", perBatch)
	fmt.Printf("| of which its kgo.Record (%d B) and 16-byte value | %d |\n", unsafe.Sizeof(kgo.Record{}), unsafe.Sizeof(kgo.Record{})+16)
	fmt.Printf("| unsafe.Sizeof: partState / inflight / windowBatch / rawBatch | %d / %d / %d / %d |\n",
		unsafe.Sizeof(partState{}), unsafe.Sizeof(Batch{}), unsafe.Sizeof(windowBatch{}), unsafe.Sizeof(rawBatch{}))
}
