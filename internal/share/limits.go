package share

import (
	"fmt"
	"strconv"
	"time"
)

// The configs that bound what a share group's member may do with a record,
// as a group config (IncrementalAlterConfigs on the GROUP resource) and as
// the broker default a group without one takes.
const (
	GroupDeliveryLimit  = "share.delivery.count.limit"
	BrokerDeliveryLimit = "group.share.delivery.count.limit"
	GroupLockDuration   = "share.record.lock.duration.ms"
	BrokerLockDuration  = "group.share.record.lock.duration.ms"
	GroupAutoReset      = "share.auto.offset.reset"
)

// Kafka's defaults, which kfake shares (kfake data.go:993-994).
const (
	DefaultDeliveryLimit = 5
	DefaultLockDuration  = 30 * time.Second
)

// Sanity bounds of values read from a broker. Kafka takes a delivery limit
// of 2 to 10 and a lock of 1 s to 1 h; these are wider, so that a broker
// that allows more still works, and refuse only what cannot be meant.
const (
	maxDeliveryLimit = 1000
	maxLockDuration  = 24 * time.Hour
)

// Limits are a share group's bounds on its records. A value, safe for
// concurrent reads.
type Limits struct {
	// DeliveryLimit is how many times the broker delivers a record before
	// it archives it instead of delivering it again.
	DeliveryLimit int32
	// LockDuration is how long a member holds a record it acquired before
	// the broker releases it, unless renewed.
	LockDuration time.Duration
}

// ParseLimits reads a group's limits from its configs as a broker describes
// them (group: the GROUP resource's, broker: a broker's), each value as
// given or nil: the group's own value first, then the broker default, then
// Kafka's. The values come from outside the process: a value that is not a
// whole number in range is an error that names it.
func ParseLimits(group, broker map[string]*string) (Limits, error) {
	pick := func(groupKey, brokerKey string) (string, string, bool) {
		if v := group[groupKey]; v != nil && *v != "" {
			return groupKey, *v, true
		}
		if v := broker[brokerKey]; v != nil && *v != "" {
			return brokerKey, *v, true
		}
		return "", "", false
	}
	l := Limits{DeliveryLimit: DefaultDeliveryLimit, LockDuration: DefaultLockDuration}
	if key, v, ok := pick(GroupDeliveryLimit, BrokerDeliveryLimit); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 || n > maxDeliveryLimit {
			return Limits{}, fmt.Errorf("the broker's %s (%q) is not a whole number from 1 to %d", key, v, maxDeliveryLimit)
		}
		l.DeliveryLimit = int32(n)
	}
	if key, v, ok := pick(GroupLockDuration, BrokerLockDuration); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > maxLockDuration.Milliseconds() {
			return Limits{}, fmt.Errorf("the broker's %s (%q) is not a number of milliseconds from 1 to %d", key, v, maxLockDuration.Milliseconds())
		}
		l.LockDuration = time.Duration(n) * time.Millisecond
	}
	return l, nil
}

// RenewEvery is how often the locks of held records are renewed: half the
// shorter of the lock duration and the connection idle timeout (0: kgo's
// 30 s, kgo config.go:628), so that a renewal reaches the broker with half
// a lock to spare, and a member that holds records without polling keeps
// its connection, whose close would release them all (kgo.ShareGroup's
// doc, kgo config.go:2020-2024).
func RenewEvery(lock, connIdle time.Duration) time.Duration {
	if connIdle <= 0 {
		connIdle = 30 * time.Second
	}
	return max(min(lock, connIdle)/2, time.Millisecond)
}
