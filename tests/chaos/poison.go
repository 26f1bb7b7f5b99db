package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The poison fault: records the sink refuses for the rest of the run, so
// that the members' dead_letter (deadLetterAttempts deliveries) ends them in
// the dead-letter topic (deadletters.go checks what arrives there).
//
// A poison slot is an offset X of one partition, a little past its log end
// at the fault; it binds to the first record at or above X that a request
// brings to the sink after the slot was set, and is above every offset the
// sink had accepted of that partition by then. Bound at first sight, a
// poison record is refused in every request that holds it, and so never
// reaches the ledger: a poison record is delivered only through the
// dead-letter topic. The sink sees only what a read_committed member hands
// out, so a poison record is always a visible record.

// deadLetterAttempts is the members' dead_letter.max_attempts in a run that
// draws poison: 3 deliveries (one in-process retry, then a replay in place
// 3 s later) put a poison record in the dead-letter topic within seconds.
const deadLetterAttempts = 3

// clientTimeout is the members' http_client timeout (member.go): a request
// judged later than this after it arrived was a failed delivery for the
// member that sent it, whatever the sink answered.
const clientTimeout = 60 * time.Second

// poisonAheadMax bounds how far past the log end a poison slot is set.
const poisonAheadMax = 200

// drawPoison draws a poison fault's slots, 1 to 3 offsets ahead of the log
// end, from the opt-in kinds' generator.
func drawPoison(aux *rand.Rand) []int64 {
	n := 1 + aux.IntN(3)
	ahead := make([]int64, n)
	for i := range ahead {
		ahead[i] = aux.Int64N(poisonAheadMax)
	}
	slices.Sort(ahead)
	return ahead
}

// refusal is what the sink did to one offset that a member saw fail.
type refusal struct {
	Refused int32 `json:"refused"` // requests holding it answered 500
	Late    int32 `json:"late"`    // requests holding it judged after the member's timeout
	Poison  bool  `json:"poison"`
	// Beside: refused in a request that held a poison record (a batch is
	// dead-lettered whole).
	Beside bool `json:"beside_poison"`
}

// poisonSlot is one slot: from, and the record it bound (o < 0: none yet).
type poisonSlot struct {
	P     int32 `json:"partition"`
	From  int64 `json:"from"`
	O     int64 `json:"offset"` // -1 until bound
	Fault int   `json:"fault"`
	At    int64 `json:"-"` // Unix ns: when it bound
}

// refusals is the sink's record of what it refused, and the poison slots.
// Judge updates it (one request at a time, under the sink's lock); the
// harness reads it through its methods. mu guards every field.
type refusals struct {
	mu sync.Mutex
	// byOffset: every offset the sink refused or judged too late, by
	// partition and offset.
	byOffset map[[2]int64]refusal
	// accepted[p] is one past the highest offset of p the sink accepted:
	// a slot set now binds above it.
	accepted map[int32]int64
	slots    []poisonSlot
	poisoned map[[2]int64]bool
	logf     func(string, ...any)
}

func newRefusals(logf func(string, ...any)) *refusals {
	return &refusals{byOffset: map[[2]int64]refusal{}, accepted: map[int32]int64{}, poisoned: map[[2]int64]bool{}, logf: logf}
}

// arm sets a slot at from (raised above what the sink accepted of p).
func (r *refusals) arm(fault int, p int32, from int64) poisonSlot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := poisonSlot{P: p, From: max(from, r.accepted[p]), O: -1, Fault: fault}
	r.slots = append(r.slots, s)
	return s
}

// judge binds free slots to b's records, and reports whether b holds a
// poison record. Called by the sink's Judge.
func (r *refusals) judge(b testkit.Batch) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.slots {
		s := &r.slots[i]
		if s.O >= 0 {
			continue
		}
		for _, rec := range b.Records {
			k := [2]int64{int64(rec.P), rec.O}
			if rec.P == s.P && rec.O >= s.From && !r.poisoned[k] && (s.O < 0 || rec.O < s.O) {
				s.O = rec.O
			}
		}
		if s.O >= 0 {
			s.At = time.Now().UnixNano()
			r.poisoned[[2]int64{int64(s.P), s.O}] = true
			r.logf("poison (fault #%d): partition %d offset %d (first record at or above %d) is refused from now on", s.Fault, s.P, s.O, s.From)
		}
	}
	for _, rec := range b.Records {
		if r.poisoned[[2]int64{int64(rec.P), rec.O}] {
			return true
		}
	}
	return false
}

// verdict records the sink's answer to b: refused, or judged after the
// member gave up on it, or accepted.
func (r *refusals) verdict(b testkit.Batch, a testkit.Answer, now time.Time) {
	late := now.Sub(b.Arrived) >= clientTimeout
	r.mu.Lock()
	defer r.mu.Unlock()
	beside := false
	for _, rec := range b.Records {
		beside = beside || r.poisoned[[2]int64{int64(rec.P), rec.O}]
	}
	for _, rec := range b.Records {
		k := [2]int64{int64(rec.P), rec.O}
		switch {
		case a == testkit.Fail:
			f := r.byOffset[k]
			f.Refused++
			f.Poison = f.Poison || r.poisoned[k]
			f.Beside = f.Beside || (beside && !r.poisoned[k])
			r.byOffset[k] = f
		case late:
			f := r.byOffset[k]
			f.Late++
			r.byOffset[k] = f
		}
		if a == testkit.Accept {
			r.accepted[rec.P] = max(r.accepted[rec.P], rec.O+1)
		}
	}
}

// snapshot copies the refusals and the slots.
func (r *refusals) snapshot() (map[[2]int64]refusal, []poisonSlot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[[2]int64]refusal, len(r.byOffset))
	for k, v := range r.byOffset {
		m[k] = v
	}
	return m, slices.Clone(r.slots)
}

// poison runs the fault: it arms the slots past the partition's log end as
// last polled. The slots stay for the rest of the run, the drain included.
func (h *harness) poison(_ context.Context, fr *faultRun) error {
	end := int64(0)
	if s := h.poller.snapshot(); int(fr.Part) < len(s.ends) {
		end = s.ends[fr.Part]
	}
	var armed []string
	for _, a := range fr.Ahead {
		s := h.sink.refusals.arm(fr.Index, fr.Part, end+a)
		armed = append(armed, fmt.Sprint(s.From))
	}
	fr.Note = fmt.Sprintf("partition %d: poison at the first records from %s", fr.Part, strings.Join(armed, ", "))
	return nil
}
