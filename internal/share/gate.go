package share

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Gate is the members of one input and who may poll them. A member is, at
// any time, in exactly one of three places:
//
//   - idle: in the idle channel, free to be polled: no record of its last
//     poll is held;
//   - polling: taken by Acquire, not yet given back by Hold or Idle;
//   - holding: its poll, in held, has records without a final verdict.
//
// So a member is never polled while records of its previous poll are held:
// kgo's next poll would accept them (finalizePreviousPoll,
// consumer_share.go:485-496 in kgo). Safe for concurrent use.
type Gate struct {
	idle chan int // capacity: the number of members, so a send never blocks

	mu   sync.Mutex
	held map[int]*Poll // guarded by mu: the polls with held records, by member
}

// NewGate returns a gate of members members, all idle.
func NewGate(members int) *Gate {
	g := &Gate{idle: make(chan int, members), held: make(map[int]*Poll, members)}
	for m := range members {
		g.idle <- m
	}
	return g
}

// Acquire takes an idle member for the caller to poll, waiting for one
// until ctx is done. The caller must give it back with Hold or Idle.
func (g *Gate) Acquire(ctx context.Context) (int, error) {
	select {
	case m := <-g.idle:
		return m, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Idle gives back a member taken by Acquire whose poll returned no record.
func (g *Gate) Idle(member int) { g.idle <- member }

// Hold gives back a member taken by Acquire whose poll returned recs (not
// empty), taken at now: the member stays out of the idle set until every
// one of them is settled.
func (g *Gate) Hold(member int, recs []Acker, now time.Time) *Poll {
	if len(recs) == 0 {
		panic(fmt.Sprintf("share: Hold of member %d with no records: use Idle", member))
	}
	p := newPoll(member, recs, now, g.done)
	g.mu.Lock()
	g.held[member] = p
	g.mu.Unlock()
	return p
}

// done is a poll's onDone: its member is idle again.
func (g *Gate) done(member int) {
	g.mu.Lock()
	delete(g.held, member)
	g.mu.Unlock()
	g.idle <- member
}

// Held returns the polls with held records, for renewals and for closing.
func (g *Gate) Held() []*Poll {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Poll, 0, len(g.held))
	for _, p := range g.held {
		out = append(out, p)
	}
	return out
}
