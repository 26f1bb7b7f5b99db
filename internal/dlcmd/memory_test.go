package dlcmd

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bug (issue 29): redrive read the whole selection into memory before
// producing it (200 MB of dead letters took 511 MB). It now checks the
// selection in one pass, keeping runs of offsets, and produces in a second,
// a batch at a time: while it produces, it references a batch and kgo's
// fetch buffers, not the selection.
//
// The test follows every record scan reads with a weak pointer and counts,
// after a collection, those still referenced. (The heap itself says little
// here: kfake, in this process, keeps what redrive produces, in buffers
// that grow by doubling.) Before the fix every record of the selection was
// still referenced at every batch.
func TestRedriveStreamsTheSelection(t *testing.T) {
	const records, size = 1200, 20 << 10 // 24 MB in all; kgo fetches about 1 MB (50 records) of a partition at a time
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

	var (
		mu   sync.Mutex
		read []weak.Pointer[kgo.Record] // every record scan read: the check pass's, then the produce pass's
	)
	scanned = func(r *kgo.Record) {
		mu.Lock()
		defer mu.Unlock()
		read = append(read, weak.Make(r))
	}
	t.Cleanup(func() { scanned = nil })
	batches, most := 0, 0
	batchDone = func(context.Context) {
		if batches++; batches%5 != 0 {
			return
		}
		runtime.GC()
		mu.Lock()
		defer mu.Unlock()
		alive := 0
		for _, w := range read {
			if w.Value() != nil {
				alive++
			}
		}
		most = max(most, alive)
	}
	t.Cleanup(func() { batchDone = nil })

	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--batch-size", "20")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 1200 of 1200 selected records from orders.dlq\n"+
		"orders: 792 records from orders.dlq partition 0 offsets 1-599, partition 1 offsets 0-598\n"+
		"payments: 408 records from orders.dlq partition 0 offsets 0-598, partition 1 offsets 1-599\n", stdout)
	require.Equal(t, records/20, batches)
	t.Logf("at most %d of the %d records read were still referenced at a batch's end", most, len(read))
	assert.LessOrEqual(t, most, 200, "records still referenced while producing: a batch (20) and kgo's fetches (about 50 each) at most")
	assert.Equal(t, 2*records, len(read), "records read: each twice, checked, then produced")
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
