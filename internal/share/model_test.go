package share

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGateModel drives a gate and its polls with random operations against
// a model of kgo's per-member ack state, including the auto-accept of
// the previous poll's records at every poll (finalizePreviousPoll,
// consumer_share.go:485-496 in kgo v1.22.3). After every step:
//
//   - no record was ever accepted by the auto-accept (the trap);
//   - every record has at most one terminal status in kgo, and it is the
//     one its verdict gives;
//   - a member is idle, polling or holding, exactly one of them, and it
//     holds exactly when its poll has records without a final verdict;
//   - Held() counts exactly the records whose verdict is Held or Writing.
func TestGateModel(t *testing.T) {
	for seed := range uint64(200) {
		runModel(t, seed)
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const members = 3
	g := NewGate(members)
	ctx := context.Background()
	now := time.Unix(1000, 0)
	type memberState struct {
		polling bool
		last    []*fakeRecord // kgo's lastPolled of this member
		poll    *Poll
	}
	ms := make([]memberState, members)
	var all []struct {
		p   *Poll
		i   int
		rec *fakeRecord
	}
	for step := range 400 {
		switch op := rng.IntN(7); {
		case op == 0: // acquire an idle member and poll it
			select {
			case m := <-g.idle:
				g.idle <- m // put back: Acquire takes it below
				m, err := g.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if ms[m].polling {
					t.Fatalf("seed %d step %d: member %d acquired while polling", seed, step, m)
				}
				// kgo's poll: auto-accept of the previous poll.
				for i, r := range ms[m].last {
					if r.finalize() {
						t.Fatalf("seed %d step %d: member %d's poll auto-accepted record %d of its previous poll", seed, step, m, i)
					}
				}
				n := rng.IntN(4)
				if n == 0 {
					ms[m].last = nil
					g.Idle(m)
					continue
				}
				ackers, recs := fakeRecords(n)
				ms[m].last = recs
				p := g.Hold(m, ackers, now)
				ms[m].poll = p
				for i, r := range recs {
					all = append(all, struct {
						p   *Poll
						i   int
						rec *fakeRecord
					}{p, i, r})
				}
			default:
			}
		case op <= 3 && len(all) > 0: // a verdict, maybe a duplicate
			x := all[rng.IntN(len(all))]
			v := []Verdict{Accepted, Released, Rejected, DeadLettered}[rng.IntN(4)]
			if v == DeadLettered && rng.IntN(2) == 0 {
				x.p.Claim(x.i)
			}
			x.p.Settle(x.i, v)
		case op == 4 && len(all) > 0:
			x := all[rng.IntN(len(all))]
			x.p.Claim(x.i)
		case op == 5: // renewals, and the broker confirming some
			now = now.Add(time.Duration(rng.IntN(3)) * time.Second)
			for _, p := range g.Held() {
				p.Renew(now, 2*time.Second)
			}
			for _, x := range all {
				if rng.IntN(2) == 0 {
					x.rec.confirmRenew()
				}
			}
		case op == 6 && rng.IntN(20) == 0: // a close releases everything held
			for _, p := range g.Held() {
				p.ReleaseHeld()
			}
		}
		checkModel(t, seed, step, g, members, all)
	}
}

func checkModel(t *testing.T, seed uint64, step int, g *Gate, members int, all []struct {
	p   *Poll
	i   int
	rec *fakeRecord
}) {
	t.Helper()
	heldRecords := map[*Poll]int{}
	for _, x := range all {
		v := x.p.Verdict(x.i)
		_, terminal, _, auto := x.rec.snapshot()
		if auto {
			t.Fatalf("seed %d step %d: record auto-accepted", seed, step)
		}
		switch {
		case v.Final() && (len(terminal) != 1 || terminal[0] != v.status()):
			t.Fatalf("seed %d step %d: verdict %v, kgo took %v", seed, step, v, terminal)
		case !v.Final() && len(terminal) != 0:
			t.Fatalf("seed %d step %d: verdict %v, kgo took %v", seed, step, v, terminal)
		case !v.Final():
			heldRecords[x.p]++
		}
	}
	held := g.Held()
	idle := len(g.idle)
	for _, p := range held {
		if p.Held() != heldRecords[p] || p.Held() == 0 {
			t.Fatalf("seed %d step %d: poll of member %d counts %d held, records say %d", seed, step, p.Member(), p.Held(), heldRecords[p])
		}
	}
	for p, n := range heldRecords {
		found := false
		for _, h := range held {
			found = found || h == p
		}
		if !found {
			t.Fatalf("seed %d step %d: member %d's poll holds %d records but is not in Held()", seed, step, p.Member(), n)
		}
	}
	if idle+len(held) != members {
		t.Fatalf("seed %d step %d: %d idle + %d holding != %d members", seed, step, idle, len(held), members)
	}
}

// TestGateConcurrent: verdicts from many goroutines, renewals from another,
// and a poller that auto-accepts the previous poll at every poll as kgo
// does; run with -race. The trap never springs and every record ends with
// exactly one terminal status.
func TestGateConcurrent(t *testing.T) {
	const members, polls = 4, 300
	g := NewGate(members)
	ctx := context.Background()
	last := make([][]*fakeRecord, members)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		records []*fakeRecord
	)
	stop := make(chan struct{})
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		now := time.Unix(1000, 0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			now = now.Add(time.Second)
			for _, p := range g.Held() {
				p.Renew(now, time.Second)
			}
		}
	}()
	for n := range polls {
		m, err := g.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range last[m] {
			if r.finalize() {
				t.Fatalf("poll %d: member %d auto-accepted record %d of its previous poll", n, m, i)
			}
		}
		ackers, recs := fakeRecords(1 + n%5)
		last[m] = recs
		mu.Lock()
		records = append(records, recs...)
		mu.Unlock()
		p := g.Hold(m, ackers, time.Unix(1000, 0))
		for i := range recs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				recs[i].confirmRenew()
				v := []Verdict{Accepted, Released, Rejected}[(n+i)%3]
				p.Settle(i, v)
				p.Settle(i, Accepted) // a duplicate ack: refused
			}()
		}
	}
	wg.Wait()
	close(stop)
	<-renewDone
	for i, r := range records {
		_, terminal, _, auto := r.snapshot()
		if auto || len(terminal) != 1 || terminal[0] == kgo.AckRenew {
			t.Fatalf("record %d: terminal %v, auto-accepted %v", i, terminal, auto)
		}
	}
}
