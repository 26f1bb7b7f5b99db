package share

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Acker is a record the broker acquired for a member: *kgo.Record, whose
// Ack is safe from any goroutine and a no-op once a terminal verdict was
// given (kgo record_and_fetch.go:296).
type Acker interface {
	Ack(kgo.AckStatus)
}

// Poll is the records of one poll of one member, from the poll to their
// verdicts. Safe for concurrent use.
type Poll struct {
	member int       // the member that polled the records; immutable
	recs   []Acker   // immutable
	onDone func(int) // runs once, outside mu, when held reaches 0; immutable

	mu sync.Mutex
	// verdicts holds each record's verdict, by index into recs. A record
	// moves Held -> Writing -> a final verdict, or Held -> a final verdict,
	// never back: a final verdict is given to kgo exactly once.
	verdicts []Verdict
	// held counts the records whose verdict is Held or Writing. It never
	// increases; it reaches 0 once, and onDone runs then.
	held int
	// renewedAt is when the locks of the held records were taken (the
	// poll) or last renewed; it only moves forward.
	renewedAt time.Time
}

// newPoll makes a poll of recs by member at now; onDone(member) runs when
// the last of them is settled. recs must not be empty.
func newPoll(member int, recs []Acker, now time.Time, onDone func(int)) *Poll {
	return &Poll{member: member, recs: recs, onDone: onDone, verdicts: make([]Verdict, len(recs)), held: len(recs), renewedAt: now}
}

// Member is the member that polled the records.
func (p *Poll) Member() int { return p.member }

// Len is how many records the poll holds or held.
func (p *Poll) Len() int { return len(p.recs) }

// Held is how many records still have no verdict given.
func (p *Poll) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Verdict is record i's verdict so far.
func (p *Poll) Verdict(i int) Verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.verdicts[i]
}

// Claim marks record i as being dead-lettered: it stays held (and renewed)
// until Settle gives it DeadLettered once the write is acknowledged, or
// ReleaseHeld releases it. It reports false, and changes nothing, when the
// record is not Held (a verdict came first: a duplicate ack).
func (p *Poll) Claim(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.verdicts[i] != Held {
		return false
	}
	p.verdicts[i] = Writing
	return true
}

// Settle gives record i the final verdict v (Accepted, Released, Rejected;
// DeadLettered only after Claim) and reports whether it did: false when the
// record already has a final verdict, or for a verdict v cannot be from the
// record's state, so that a later ack of the same record is a no-op.
//
// The verdict goes to kgo before the record stops counting as held: when
// the last record of a poll is settled and the member is freed to poll
// again, every record of this poll carries a terminal verdict in kgo, which
// the next poll's auto-accept does not override.
func (p *Poll) Settle(i int, v Verdict) bool {
	if !v.Final() {
		return false
	}
	p.mu.Lock()
	switch cur := p.verdicts[i]; {
	case cur.Final():
		p.mu.Unlock()
		return false
	case v == DeadLettered && cur != Writing:
		p.mu.Unlock()
		return false
	}
	p.verdicts[i] = v
	p.recs[i].Ack(v.status())
	p.held--
	done := p.held == 0
	p.mu.Unlock()
	if done {
		p.onDone(p.member)
	}
	return true
}

// Renew renews the lock of every held record if every has passed since the
// locks were taken or last renewed, and returns how many it renewed (0 when
// it was not time, or none is held). A record whose verdict races the
// renewal keeps the verdict: kgo lets a terminal verdict override a renewal
// and never the reverse (tryAck, consumer_share.go:2175-2189 in kgo).
func (p *Poll) Renew(now time.Time, every time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == 0 || now.Sub(p.renewedAt) < every {
		return 0
	}
	n := 0
	for i, v := range p.verdicts {
		if v == Held || v == Writing {
			p.recs[i].Ack(kgo.AckRenew)
			n++
		}
	}
	p.renewedAt = now
	return n
}

// ReleaseHeld releases every held record (Writing ones too: their
// dead-letter write is abandoned) and returns their indices, for a closing
// input that gives back what it holds. The poll is then done.
func (p *Poll) ReleaseHeld() []int {
	p.mu.Lock()
	var out []int
	for i, v := range p.verdicts {
		if v == Held || v == Writing {
			p.verdicts[i] = Released
			p.recs[i].Ack(kgo.AckRelease)
			out = append(out, i)
		}
	}
	done := p.held > 0
	p.held = 0
	p.mu.Unlock()
	if done {
		p.onDone(p.member)
	}
	return out
}

// Acker is record i, as the poll was given it.
func (p *Poll) Acker(i int) Acker { return p.recs[i] }
