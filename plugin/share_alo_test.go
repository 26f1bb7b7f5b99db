package plugin

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service/integration"
	"github.com/stretchr/testify/require"
)

// TestShareAtLeastOnceRepeated runs Benthos's at-least-once definition
// (StreamTestAtLeastOnceDelivery: A, B, D accepted, C and E released, the
// input closed and opened again, and only C and E may come) on kfake
// SHARE_ALO_RUNS times (1 unless set), the runs in parallel as the suite
// runs its definitions (go test's -parallel bounds them), beside
// SHARE_ALO_BUSY goroutines that only burn CPU (0 unless set). A failed run
// prints its share group's log: the input's lines, every message handed out
// and ack given, its members' kgo lines at debug and the share-group
// requests kfake received (share_debug_test.go).
//
// With one run it is a smoke test; to look for a rare failure, for example:
//
//	SHARE_ALO_RUNS=50 SHARE_ALO_BUSY=4 go test -race -count=1 -run TestShareAtLeastOnceRepeated ./plugin/
func TestShareAtLeastOnceRepeated(t *testing.T) {
	runs := envInt(t, "SHARE_ALO_RUNS", 1)
	busy := envInt(t, "SHARE_ALO_BUSY", 0)
	addr := shareStreamCluster(t)

	ctx, stop := context.WithCancel(context.Background())
	var burners sync.WaitGroup
	for range busy {
		burners.Go(func() {
			for ctx.Err() == nil {
				n := 0
				for i := range 1_000_000 {
					n += i
				}
				_ = n
				runtime.Gosched()
			}
		})
	}
	t.Cleanup(func() { stop(); burners.Wait() })

	defs := make([]integration.StreamTestDefinition, runs)
	for i := range defs {
		defs[i] = integration.StreamTestAtLeastOnceDelivery()
	}
	runShareStreams(t, addr, 5*time.Minute+time.Duration(runs)*15*time.Second, defs...)
}

// envInt is the environment variable name as a number, def when unset.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "%s=%q", name, s)
	return n
}
