package demo

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 30: `demo --brokers` against a broker that had just started failed
// at once: its first read of the group's offsets met the broker's
// COORDINATOR_NOT_AVAILABLE, which kgo does not retry for it. The demo now
// retries such answers and says it did.
func TestDemoRetriesCoordinatorNotAvailable(t *testing.T) {
	t.Parallel()
	k, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(k.Close)
	// A fresh broker: every FindCoordinator answered COORDINATOR_NOT_AVAILABLE
	// for its first 1.5 s.
	var refused atomic.Int32
	until := time.Now().Add(1500 * time.Millisecond)
	k.ControlKey(int16(kmsg.FindCoordinator), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		k.KeepControl()
		if time.Now().After(until) {
			return nil, nil, false
		}
		refused.Add(1)
		req := kr.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, key := range req.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.ErrorCode, rc.NodeID = key, kerr.CoordinatorNotAvailable.Code, -1
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp, nil, true
	})

	o := demoOptions{Brokers: k.ListenAddrs(), Topic: "fresh", Group: "fresh-group", Partitions: 2, Records: 200,
		FailBatches: 0, Duration: 40 * time.Second}
	r, out := runDemoT(t, o, false)
	require.True(t, r.Settled, out)
	assert.Greater(t, refused.Load(), int32(0), "the broker answered COORDINATOR_NOT_AVAILABLE")
	assert.Regexp(t, `kafka at \S+: retried \d+ time\(s\) over \S+: fetching the offsets of group "fresh-group": .*COORDINATOR_NOT_AVAILABLE`, out)
}
