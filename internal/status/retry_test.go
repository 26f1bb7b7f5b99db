package status

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinatorNotAvailable makes c answer every FindCoordinator with
// COORDINATOR_NOT_AVAILABLE for d (for ever when d is negative), as a broker
// that has just started does until it has loaded __consumer_offsets; it
// returns how many it answered so.
func coordinatorNotAvailable(c *testCluster, d time.Duration) *atomic.Int32 {
	var n atomic.Int32
	until := time.Now().Add(d)
	c.kc.ControlKey(int16(kmsg.FindCoordinator), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.kc.KeepControl()
		if d >= 0 && time.Now().After(until) {
			return nil, nil, false
		}
		n.Add(1)
		req := kr.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, k := range req.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.ErrorCode, rc.NodeID = k, kerr.CoordinatorNotAvailable.Code, -1
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp, nil, true
	})
	return &n
}

// Issue 30: on a broker that had just started, status failed at once with
// COORDINATOR_NOT_AVAILABLE (the first FindCoordinator's answer, which kgo
// does not retry). It now tries again within --timeout and says it did.
func TestRunRetriesCoordinatorNotAvailable(t *testing.T) {
	c := newCluster(t, 2, "orders")
	c.commit(t, "g", "orders", 0, 5, meta(t, 5, nil, nil))
	c.commit(t, "g", "orders", 1, 0, meta(t, 0, nil, nil))
	n := coordinatorNotAvailable(c, 1500*time.Millisecond)

	code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: "g"})
	require.Equalf(t, ExitHealthy, code, "exit status; stderr:\n%s", stderr)
	assert.Contains(t, stdout, "orders")
	assert.Greater(t, n.Load(), int32(1), "FindCoordinator answered COORDINATOR_NOT_AVAILABLE")
	assert.Regexp(t, `^status: retried \d+ time\(s\) over [0-9.]+m?s: .*COORDINATOR_NOT_AVAILABLE`, stderr)
}

// A coordinator that never comes fails within --timeout, saying how many
// tries it took and what the broker answered, not "context deadline
// exceeded".
func TestRunGivesUpOnCoordinatorNotAvailable(t *testing.T) {
	c := newCluster(t, 2, "orders")
	c.commit(t, "g", "orders", 0, 5, meta(t, 5, nil, nil))
	coordinatorNotAvailable(c, -1)

	start := time.Now()
	code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: "g", Timeout: 2 * time.Second})
	took := time.Since(start)
	assert.Equal(t, ExitUnknown, code)
	assert.Empty(t, stdout)
	assert.Less(t, took, 4*time.Second, "status took %v with --timeout 2s", took)
	assert.Regexp(t, `^status: no answer within --timeout 2s: gave up after \d+ tries over [0-9.]+s: fetch the offsets of group "g": COORDINATOR_NOT_AVAILABLE`, stderr)
}
