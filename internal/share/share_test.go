package share

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		attempt, max int32
		dl           bool
		want         Verdict
	}{
		{1, 5, false, Released},
		{4, 5, true, Released},
		{5, 5, false, Rejected},
		{5, 5, true, DeadLettered},
		{6, 5, true, DeadLettered}, // a lock expired at the last attempt: redelivered past it
		{1, 1, false, Rejected},
		{1, 1, true, DeadLettered},
	} {
		if got := Decide(c.attempt, c.max, c.dl); got != c.want {
			t.Errorf("Decide(%d, %d, %v) = %v, want %v", c.attempt, c.max, c.dl, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		sizes    []int64
		records  int
		bytes    int64
		wantEnds []int
	}{
		{nil, 10, 100, nil},
		{[]int64{1, 1, 1}, 10, 100, []int{3}},
		{[]int64{1, 1, 1}, 2, 100, []int{2, 3}},
		{[]int64{1, 1, 1}, 1, 100, []int{1, 2, 3}},
		{[]int64{60, 60, 60}, 10, 100, []int{1, 2, 3}},
		{[]int64{50, 50, 50}, 10, 100, []int{2, 3}},
		{[]int64{500, 1, 1}, 10, 100, []int{1, 3}}, // a larger record alone
		{[]int64{1, 500, 1}, 10, 100, []int{1, 2, 3}},
		{[]int64{0, 0, 0}, 0, 0, []int{1, 2, 3}}, // limits below 1 are 1
	} {
		got := Cut(c.sizes, c.records, c.bytes)
		if fmt.Sprint(got) != fmt.Sprint(c.wantEnds) {
			t.Errorf("Cut(%v, %d, %d) = %v, want %v", c.sizes, c.records, c.bytes, got, c.wantEnds)
		}
	}
}

func TestParseLimits(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, c := range []struct {
		name          string
		group, broker map[string]*string
		want          Limits
		wantErr       bool
	}{
		{"nothing: Kafka's defaults", nil, nil, Limits{5, 30 * time.Second}, false},
		{"null group values fall back to the broker's (kfake)", map[string]*string{GroupDeliveryLimit: nil}, map[string]*string{BrokerDeliveryLimit: s("7"), BrokerLockDuration: s("1500")}, Limits{7, 1500 * time.Millisecond}, false},
		{"the group's own values win", map[string]*string{GroupDeliveryLimit: s("3"), GroupLockDuration: s("10000")}, map[string]*string{BrokerDeliveryLimit: s("7"), BrokerLockDuration: s("1500")}, Limits{3, 10 * time.Second}, false},
		{"not a number", map[string]*string{GroupDeliveryLimit: s("five")}, nil, Limits{}, true},
		{"zero limit", map[string]*string{GroupDeliveryLimit: s("0")}, nil, Limits{}, true},
		{"negative lock", nil, map[string]*string{BrokerLockDuration: s("-1")}, Limits{}, true},
		{"lock out of range", nil, map[string]*string{BrokerLockDuration: s("999999999999")}, Limits{}, true},
	} {
		got, err := ParseLimits(c.group, c.broker)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%s: ParseLimits = %+v, %v; want %+v, error %v", c.name, got, err, c.want, c.wantErr)
		}
	}
}

func TestClassifyAck(t *testing.T) {
	for _, c := range []struct {
		err  error
		want AckOutcome
	}{
		{nil, AckOK},
		{kerr.InvalidRecordState, AckLockLost},
		{fmt.Errorf("wrapped: %w", kerr.InvalidShareSessionEpoch), AckLockLost},
		{kerr.ShareSessionNotFound, AckLockLost},
		{kerr.UnknownTopicOrPartition, AckFailed},
		{errors.New("share consumer has left the group"), AckFailed},
	} {
		if got := ClassifyAck(c.err); got != c.want {
			t.Errorf("ClassifyAck(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRenewEvery(t *testing.T) {
	for _, c := range []struct{ lock, idle, want time.Duration }{
		{30 * time.Second, 20 * time.Second, 10 * time.Second},
		{30 * time.Second, 0, 15 * time.Second},
		{2 * time.Second, 20 * time.Second, time.Second},
		{0, 0, time.Millisecond},
	} {
		if got := RenewEvery(c.lock, c.idle); got != c.want {
			t.Errorf("RenewEvery(%v, %v) = %v, want %v", c.lock, c.idle, got, c.want)
		}
	}
}

// A poll's verdicts: each record's first verdict is given to kgo, a later
// one is refused; dead-lettering holds the record until the write; the
// member is freed when, and only when, the last record is settled.
func TestPollVerdicts(t *testing.T) {
	g := NewGate(1)
	ctx := context.Background()
	m, err := g.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ackers, recs := fakeRecords(4)
	now := time.Unix(1000, 0)
	p := g.Hold(m, ackers, now)
	free := func() bool {
		select {
		case got := <-g.idle:
			g.idle <- got
			return true
		default:
			return false
		}
	}
	steps := []struct {
		name string
		do   func() bool
		want bool
	}{
		{"accept 0", func() bool { return p.Settle(0, Accepted) }, true},
		{"accept 0 again", func() bool { return p.Settle(0, Accepted) }, false},
		{"release 0 after accept", func() bool { return p.Settle(0, Released) }, false},
		{"dead-letter 1 unclaimed", func() bool { return p.Settle(1, DeadLettered) }, false},
		{"claim 1", func() bool { return p.Claim(1) }, true},
		{"claim 1 again", func() bool { return p.Claim(1) }, false},
		{"held is no verdict", func() bool { return p.Settle(2, Held) }, false},
		{"release 2", func() bool { return p.Settle(2, Released) }, true},
		{"reject 3", func() bool { return p.Settle(3, Rejected) }, true},
		{"member not yet free", func() bool { return !free() }, true},
		{"renew holds only 1", func() bool { return p.Renew(now.Add(time.Second), time.Second) == 1 }, true},
		{"dead-letter 1", func() bool { return p.Settle(1, DeadLettered) }, true},
		{"member free", free, true},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s = %v, want %v", s.name, got, s.want)
		}
	}
	wantTerminal := []kgo.AckStatus{kgo.AckAccept, kgo.AckAccept, kgo.AckRelease, kgo.AckReject}
	for i, r := range recs {
		_, terminal, _, _ := r.snapshot()
		if len(terminal) != 1 || terminal[0] != wantTerminal[i] {
			t.Errorf("record %d: terminal statuses %v, want [%v]", i, terminal, wantTerminal[i])
		}
	}
	if len(g.Held()) != 0 {
		t.Errorf("Held() = %d polls, want 0", len(g.Held()))
	}
}

// Renew renews only once per interval, and nothing once the poll is done.
func TestPollRenewInterval(t *testing.T) {
	g := NewGate(1)
	m, _ := g.Acquire(context.Background())
	ackers, recs := fakeRecords(2)
	t0 := time.Unix(1000, 0)
	p := g.Hold(m, ackers, t0)
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{500 * time.Millisecond, 0}, {time.Second, 2}, {1500 * time.Millisecond, 0}, {2 * time.Second, 2}} {
		if got := p.Renew(t0.Add(c.at), time.Second); got != c.want {
			t.Errorf("Renew at +%v = %d, want %d", c.at, got, c.want)
		}
		for _, r := range recs {
			r.confirmRenew()
		}
	}
	p.Settle(0, Accepted)
	p.Settle(1, Accepted)
	if got := p.Renew(t0.Add(time.Hour), time.Second); got != 0 {
		t.Errorf("Renew of a done poll = %d, want 0", got)
	}
}

// ReleaseHeld gives back what is held, a Writing record included, frees the
// member once, and leaves verdicts already given alone.
func TestPollReleaseHeld(t *testing.T) {
	g := NewGate(1)
	m, _ := g.Acquire(context.Background())
	ackers, recs := fakeRecords(3)
	p := g.Hold(m, ackers, time.Unix(1000, 0))
	p.Settle(0, Accepted)
	p.Claim(1)
	got := p.ReleaseHeld()
	if fmt.Sprint(got) != "[1 2]" {
		t.Errorf("ReleaseHeld() = %v, want [1 2]", got)
	}
	if again := p.ReleaseHeld(); len(again) != 0 {
		t.Errorf("second ReleaseHeld() = %v, want none", again)
	}
	if p.Settle(1, DeadLettered) {
		t.Error("Settle(DeadLettered) after ReleaseHeld = true, want false")
	}
	if len(g.idle) != 1 {
		t.Errorf("idle members = %d, want 1 (freed once)", len(g.idle))
	}
	_, terminal, _, _ := recs[1].snapshot()
	if fmt.Sprint(terminal) != fmt.Sprint([]kgo.AckStatus{kgo.AckRelease}) {
		t.Errorf("record 1 terminal = %v, want [release]", terminal)
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	g := NewGate(1)
	if _, err := g.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with no idle member and a done context = %v, want context.Canceled", err)
	}
}
