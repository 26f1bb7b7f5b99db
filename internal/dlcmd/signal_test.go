package dlcmd

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bug (issue 29): Ctrl-C or SIGTERM mid-redrive killed the process (exit
// 130 or 143) with nothing printed, after it had written thousands of
// records. A signal now cuts the run short as --timeout does: the summary,
// what was moved and what was not tried.
//
// The test signals its own process: without the fix the test binary dies.
func TestRedriveSignalReports(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		c := newCluster(t, kfake.SeedTopics(1, "orders.dlq", "orders"))
		var rs []*kgo.Record
		for o := range int64(5) {
			rs = append(rs, letter(0, "orders", 0, 10+o, t0, 1, "timeout"))
		}
		c.produce(t, rs...)

		batches := 0
		batchDone = func(ctx context.Context) {
			if batches++; batches > 1 {
				return
			}
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Errorf("kill: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Errorf("%v: the run's context did not end", sig)
			}
		}
		t.Cleanup(func() { batchDone = nil })

		code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--batch-size", "2")
		assert.Equal(t, ExitPartial, code, "%v: exit status; stderr: %s", sig, stderr)
		assert.Equal(t, "redrove 2 of 5 selected records from orders.dlq\norders: 2 records from orders.dlq partition 0 offsets 0-1\n", stdout, sig)
		assert.Equal(t, "dead-letter redrive: interrupted ("+sig.String()+" signal received)\n"+
			"3 records not tried:\n  orders: 3 records from orders.dlq partition 0 offsets 2-4\n", stderr, sig)
		assert.Len(t, c.read(t, "orders"), 2, sig)
	}
}
