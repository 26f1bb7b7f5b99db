package kafkaconn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestRetries is how many times kgo may retry a request (RequestRetries,
// default 20; shouldRetry, client.go:1743-1745). kgo's backoff grows from
// 250 ms to 5 s (config.go:638-666), so 20 retries last about 80 s: a longer
// session_timeout needs more, for the heartbeat's time budget, not the count,
// to end its retries. Other requests keep their 30 s budget, which 20 retries
// already outlast.
func requestRetries(session time.Duration) int {
	return max(20, int(session/(5*time.Second))+5)
}

// leaveRetryBudget bounds how long leaving the group at shutdown is retried.
const leaveRetryBudget = 5 * time.Second

// retryTimeout is kgo's default RetryTimeoutFn (kgo client.go:511-521: the
// budget, from a request's first try, within which kgo retries it,
// client.go:1828), which RetryTimeoutFn replaces whole, with one change:
// leaving the group gets leaveRetryBudget instead of 30 s (LeaveGroup) or
// session_timeout (ConsumerGroupHeartbeat, which goes through kgo's retries
// only to leave, MemberEpoch < 0, client.go:2569-2572). Close leaves the
// group and waits for it (client.go:1394-1408); with retriableRefusals a
// refused leave is retried, so with the broker down a shutdown would
// otherwise hang for 30 s (classic) or session_timeout (consumer) after
// Input.Close's final commit, which is bounded by drain_timeout for the same
// reason. A member that does not leave is expired by the broker after its
// session timeout.
//
// Heartbeat, JoinGroup and SyncGroup keep session_timeout: a classic
// member's heartbeat is retried for the session, no longer.
func retryTimeout(session time.Duration) func(int16) time.Duration {
	return func(key int16) time.Duration {
		switch key {
		case (*kmsg.LeaveGroupRequest)(nil).Key(),
			(*kmsg.ConsumerGroupHeartbeatRequest)(nil).Key():
			return leaveRetryBudget
		case (*kmsg.JoinGroupRequest)(nil).Key(),
			(*kmsg.SyncGroupRequest)(nil).Key(),
			(*kmsg.HeartbeatRequest)(nil).Key():
			return session
		}
		return 30 * time.Second
	}
}
