package dlcmd

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// liveHeap is the heap in use after a collection: what is still referenced.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Bug (issue 29): redrive read the whole selection into memory before
// producing it (200 MB of dead letters took 511 MB). It now checks the
// selection in one pass, keeping runs of offsets, and produces in a second,
// a batch at a time: what it holds while it produces is a batch and kgo's
// fetch buffers, not the selection (measured: 7 MB here, 33 MB before).
func TestRedriveStreamsTheSelection(t *testing.T) {
	const records, size = 1200, 20 << 10 // 24 MB in all
	c := newCluster(t, kfake.SeedTopics(2, "orders.dlq"), kfake.SeedTopics(1, "orders", "payments"))
	// Random values: kgo compresses batches, and a fetch's byte limits are
	// on the compressed bytes.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < records; i += 100 {
		var rs []*kgo.Record
		for j := range 100 {
			origin := "orders"
			if j%3 == 0 {
				origin = "payments"
			}
			l := letter(int32(j%2), origin, 0, int64(i+j), t0, 1, "timeout")
			l.Value = make([]byte, size)
			for k := range l.Value {
				l.Value[k] = byte(rng.Uint32())
			}
			rs = append(rs, l)
		}
		c.produce(t, rs...)
	}

	// kfake keeps what redrive produces in this process too: the heap
	// grows by the records moved so far whatever redrive holds. What it
	// holds is the growth beyond them.
	base := liveHeap()
	var held int64
	batches := 0
	batchDone = func(context.Context) {
		if batches++; batches%5 == 0 {
			held = max(held, int64(liveHeap())-int64(base)-int64(batches*20*size))
		}
	}
	t.Cleanup(func() { batchDone = nil })

	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--batch-size", "20")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 1200 of 1200 selected records from orders.dlq\n"+
		"orders: 792 records from orders.dlq partition 0 offsets 1-599, partition 1 offsets 0-598\n"+
		"payments: 408 records from orders.dlq partition 0 offsets 0-598, partition 1 offsets 1-599\n", stdout)
	require.Equal(t, records/20, batches)
	t.Logf("redrive held at most %d MB while producing %d MB", held>>20, records*size>>20)
	assert.Less(t, held, int64(records*size/2), "redrive held %d MB while producing, for %d MB of dead letters", held>>20, records*size>>20)
}

// The produce pass reads the records again: one deleted since the check
// pass (retention) is named as gone, never skipped silently.
func TestRedriveGoneSinceTheCheck(t *testing.T) {
	c := seed(t)
	batches := 0
	batchDone = func(ctx context.Context) {
		if batches++; batches != 1 {
			return
		}
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: "orders.dlq", Partition: 1, At: 1})
		res, err := kadm.NewClient(c.cl).DeleteRecords(ctx, o)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Errorf("delete records: %v", err)
		}
	}
	t.Cleanup(func() { batchDone = nil })

	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--to", "retry", "--batch-size", "1", "--timeout", "10s")
	assert.Equal(t, ExitPartial, code, stderr)
	assert.Equal(t, "redrove 5 of 6 selected records from orders.dlq\nretry: 5 records from orders.dlq partition 0 offsets 0-2, partition 1 offsets 1-2\n", stdout)
	assert.Equal(t, "dead-letter redrive: 1 selected record gone from the dead-letter topic when read again to be produced (deleted since the check):\n"+
		"  retry: 1 record from orders.dlq partition 1 offset 0\n", stderr)
	assert.Len(t, c.read(t, "retry"), 5)
}
