package share

import (
	"strconv"
	"testing"
	"time"
)

// FuzzParseLimits feeds ParseLimits the values a broker describes, which
// come from outside the process. Invariants:
//
//   - it never panics;
//   - on success the delivery limit is 1 to maxDeliveryLimit and the lock
//     1 ms to maxLockDuration;
//   - a group value, when set, wins over the broker's;
//   - on success each limit equals the integer the chosen value spells.
func FuzzParseLimits(f *testing.F) {
	f.Add("5", "", "30000", "")
	f.Add("", "7", "", "1500")
	f.Add("0", "x", "-1", "99999999999999999999")
	f.Add(" 5", "5 ", "1e3", "0x10")
	f.Fuzz(func(t *testing.T, groupLimit, brokerLimit, groupLock, brokerLock string) {
		ptr := func(s string) *string { return &s }
		group := map[string]*string{GroupDeliveryLimit: ptr(groupLimit), GroupLockDuration: ptr(groupLock)}
		broker := map[string]*string{BrokerDeliveryLimit: ptr(brokerLimit), BrokerLockDuration: ptr(brokerLock)}
		l, err := ParseLimits(group, broker)
		if err != nil {
			return
		}
		if l.DeliveryLimit < 1 || l.DeliveryLimit > maxDeliveryLimit {
			t.Fatalf("delivery limit %d out of range", l.DeliveryLimit)
		}
		if l.LockDuration < time.Millisecond || l.LockDuration > maxLockDuration {
			t.Fatalf("lock %v out of range", l.LockDuration)
		}
		chosen := func(g, b string) string {
			if g != "" {
				return g
			}
			return b
		}
		if v := chosen(groupLimit, brokerLimit); v != "" {
			if n, _ := strconv.ParseInt(v, 10, 32); int32(n) != l.DeliveryLimit {
				t.Fatalf("delivery limit %d from %q", l.DeliveryLimit, v)
			}
		}
		if v := chosen(groupLock, brokerLock); v != "" {
			if n, _ := strconv.ParseInt(v, 10, 64); time.Duration(n)*time.Millisecond != l.LockDuration {
				t.Fatalf("lock %v from %q", l.LockDuration, v)
			}
		}
	})
}
