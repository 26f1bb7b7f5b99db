package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/txn"
)

// The exactly-once model: random schedules of fetches, hand-outs, acks,
// nacks after part of a batch was written, commit periods, refused
// transaction commits, revokes, losses and reassignments, against an owner
// under exactly once (txn.go), with a model of the output topic: an ack
// writes its records' outputs into the open transaction (as the output
// does before Benthos acknowledges), a nack writes a random part of them
// first (a split batch failed half way), and a transaction's end moves its
// outputs to the committed log or throws them away. After every commit the
// broker accepts, the model checks the invariant of txn.go:
//
//	E1 no hand-out is in the pipeline when a transaction ends (the barrier);
//	E2 no record has two committed outputs (exactly once);
//	E3 every record the group's commits cover has its output committed
//	   (a commit commits no source whose outputs are not in it or earlier);
//	E4 every committed output's record is covered by its partition's
//	   commits (a transaction holds no output whose source it, or an
//	   earlier one, does not commit);
//
// and after the schedule, with the pipeline healed (everything acked, the
// periods run), E5: every record has exactly one committed output.
//
//	OWNER_TXN_MODEL_SCHEDULES=10000 OWNER_TXN_MODEL_SEED_BASE=0 go test -run TestTxnModel ./internal/engine/
func TestTxnModel(t *testing.T) {
	schedules, steps := 300, 200
	if testing.Short() {
		schedules = 60
	}
	if s, err := strconv.Atoi(os.Getenv("OWNER_TXN_MODEL_SCHEDULES")); err == nil && s > 0 {
		schedules = s
	}
	var base uint64
	if b, err := strconv.ParseUint(os.Getenv("OWNER_TXN_MODEL_SEED_BASE"), 10, 64); err == nil {
		base = b
	}
	t.Logf("schedules %d..%d", base, base+uint64(schedules)-1)
	var aborts, commits int
	for i := range uint64(schedules) {
		seed := base + i
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m, _ := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				a, c := runTxnModel(t, seed, steps, m)
				aborts += a
				commits += c
			})
		})
	}
	t.Logf("%d schedules: %d transactions committed, %d aborted", schedules, commits, aborts)
}

// tmRec is one record of the model's source log.
type tmRec struct {
	tp  topicPartition
	off int64
}

// tmClient is the model's broker: a groupClient whose Commit is a
// transaction's commit (as txnClient's), and the Transactor of aborts. Its
// callbacks run on the committer goroutine, under mu.
type tmClient struct {
	mu       sync.Mutex
	refuse   bool // the next commit is refused: the transaction aborts
	rewinds  []map[string]map[int32]kgo.EpochOffset
	onCommit func(set commitSet) error
	onAbort  func()
}

func (c *tmClient) PauseFetchPartitions(map[string][]int32) map[string][]int32 { return nil }
func (c *tmClient) ResumeFetchPartitions(map[string][]int32)                   {}
func (c *tmClient) SetOffsets(m map[string]map[int32]kgo.EpochOffset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rewinds = append(c.rewinds, m)
}

func (c *tmClient) Commit(_ context.Context, set commitSet, _ bool) commitResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse {
		c.refuse = false
		c.onAbort()
		return commitResult{err: txn.ErrAborted}
	}
	return commitResult{err: c.onCommit(set)}
}

func (c *tmClient) ListEndOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	return nil, nil
}

func (c *tmClient) DescribeRetention(context.Context, ...string) (map[string]int64, error) {
	return nil, nil
}

func (c *tmClient) ListStartOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	return nil, nil
}

// tmTxn is the Transactor: aborts only (commits go through Commit).
type tmTxn struct{ c *tmClient }

func (t tmTxn) Commit(context.Context, txn.Offsets, bool) (txn.Result, error) {
	return txn.Result{}, errors.New("tmTxn: commits go through tmClient.Commit")
}

func (t tmTxn) Abort(context.Context, bool) (txn.Result, error) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.onAbort()
	return txn.Result{}, nil
}

// tmHandout is a batch in the model's pipeline.
type tmHandout struct {
	b    *Batch
	recs []tmRec
}

type txnModel struct {
	// mu guards the model's state that the committer's callbacks read and
	// write (out, open, committed, commits, counters, log, step). The test
	// goroutine never holds it across a call into the owner: a goroutine
	// blocked on a mutex is not durably blocked for synctest.Wait. Lock
	// order: tmClient.mu, then mu.
	mu   sync.Mutex
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	h    *ownerHarness
	cl   *tmClient
	tps  []topicPartition
	end  map[topicPartition]int64 // the source log's end (records 0..end-1)
	cur  map[topicPartition]int64 // kgo's fetch position
	// assigned: the partitions kgo consumes for this member.
	assigned map[topicPartition]bool
	out      []*tmHandout
	// open holds the outputs written in the open transaction; committed
	// counts each record's committed outputs.
	open      []tmRec
	committed map[tmRec]int
	// commits holds each partition's last accepted commit.
	commits         map[topicPartition]fetchedCommit
	nAbort, nCommit int
	log             []string
	step            int
}

func (m *txnModel) logf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.logLocked(format, args...)
}

func (m *txnModel) logLocked(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf("%4d  ", m.step)+fmt.Sprintf(format, args...))
}

// violate reports a broken invariant from the committer goroutine, where a
// test may not stop (Errorf is safe there; Fatalf is not): the schedule
// runs on, and the test fails with the steps so far.
func (m *txnModel) violate(inv, format string, args ...any) {
	m.t.Errorf("seed %d: %s: %s\nreplay: OWNER_TXN_MODEL_SEED_BASE=%d OWNER_TXN_MODEL_SCHEDULES=1 go test -count=1 -run 'TestTxnModel$' ./internal/engine/\nsteps:\n%s",
		m.seed, inv, fmt.Sprintf(format, args...), m.seed, strings.Join(m.log, "\n"))
}

func (m *txnModel) fail(inv, format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("seed %d: %s: %s\nreplay: OWNER_TXN_MODEL_SEED_BASE=%d OWNER_TXN_MODEL_SCHEDULES=1 go test -count=1 -run 'TestTxnModel$' ./internal/engine/\nsteps:\n%s",
		m.seed, inv, fmt.Sprintf(format, args...), m.seed, strings.Join(m.log, "\n"))
}

// covered reports whether the last commit of r's partition covers r.
func (m *txnModel) covered(r tmRec) bool {
	c, ok := m.commits[r.tp]
	if !ok {
		return false
	}
	if r.off < c.offset {
		return true
	}
	d, err := commitmeta.Decode(c.meta)
	return err == nil && d.Base == c.offset && d.Covered(r.off)
}

func runTxnModel(t *testing.T, seed uint64, steps int, mt *Metrics) (aborts, commits int) {
	rng := rand.New(rand.NewPCG(seed, 0x74786e))
	parts := 1 + rng.IntN(3)
	conf := testConfig(t, fmt.Sprintf("batch_max_records: %d\nmax_pending_batches: %d\ncommit_period: 1s\ndrain_timeout: 1s\n",
		1+rng.IntN(4), []int{1, 2, 4, 8}[rng.IntN(4)]))
	cl := &tmClient{}
	conf.Txn = tmTxn{cl}
	o := newOwner(conf, service.MockResources().Logger(), mt)
	o.cl = cl
	go o.run()
	go o.committer()
	t.Cleanup(func() {
		o.sig.TriggerHardStop()
		o.stopIO()
		<-o.stopped()
	})
	m := &txnModel{t: t, seed: seed, rng: rng, h: &ownerHarness{t: t, o: o}, cl: cl,
		end: map[topicPartition]int64{}, cur: map[topicPartition]int64{}, assigned: map[topicPartition]bool{},
		committed: map[tmRec]int{}, commits: map[topicPartition]fetchedCommit{}}
	for i := range parts {
		tp := topicPartition{"t", int32(i)}
		m.tps = append(m.tps, tp)
		m.end[tp] = int64(5 + rng.IntN(30))
	}
	cl.onAbort = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.nAbort++
		m.logLocked("  abort: %d output(s) thrown away", len(m.open))
		m.open = nil
	}
	cl.onCommit = func(set commitSet) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.nCommit++
		if len(m.out) > 0 {
			m.violate("E1", "a transaction ends with %d hand-out(s) in the pipeline", len(m.out))
		}
		for t, ps := range set.offsets {
			for p, eo := range ps {
				tp := topicPartition{t, p}
				m.commits[tp] = fetchedCommit{offset: eo.Offset, leaderEpoch: eo.Epoch, meta: set.meta[tp]}
			}
		}
		for _, r := range m.open {
			m.committed[r]++
			if m.committed[r] > 1 {
				m.violate("E2", "record %s/%d has %d committed outputs", r.tp.topic, r.off, m.committed[r])
			}
		}
		m.logLocked("  commit %v: %d output(s)", set.offsets, len(m.open))
		m.open = nil
		for _, tp := range m.tps {
			for off := range m.end[tp] {
				r := tmRec{tp, off}
				if m.covered(r) && m.committed[r] == 0 {
					m.violate("E3", "the commit covers %s/%d offset %d, whose output is not committed", tp.topic, tp.partition, off)
				}
				if m.committed[r] > 0 && !m.covered(r) {
					m.violate("E4", "%s/%d offset %d has a committed output, and no commit covers it", tp.topic, tp.partition, off)
				}
			}
		}
		return nil
	}
	m.assign(m.tps)
	for step := 1; step <= steps; step++ {
		m.mu.Lock()
		m.step = step
		m.mu.Unlock()
		m.randomStep()
	}
	m.heal()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nAbort, m.nCommit
}

// assign assigns tps and hands the owner their last commits, as kgo does.
func (m *txnModel) assign(tps []topicPartition) {
	m.h.assign(tps...)
	fc := map[topicPartition]fetchedCommit{}
	m.mu.Lock()
	for _, tp := range tps {
		c, ok := m.commits[tp]
		if !ok {
			c = fetchedCommit{offset: -1, leaderEpoch: -1}
			m.cur[tp] = 0
		} else {
			m.cur[tp] = c.offset
		}
		fc[tp] = c
		m.assigned[tp] = true
	}
	m.mu.Unlock()
	m.h.fetched(fc)
	m.logf("assign %v", tps)
}

func (m *txnModel) randomStep() {
	switch x := m.rng.IntN(100); {
	case x < 25:
		m.poll()
	case x < 45:
		if b, ok := m.h.tryRead(); ok {
			var recs []tmRec
			for _, r := range b.raw.records {
				recs = append(recs, tmRec{b.part.tp, r.Offset})
			}
			m.mu.Lock()
			m.out = append(m.out, &tmHandout{b: b, recs: recs})
			m.mu.Unlock()
			m.logf("read %s/%d %d-%d", b.part.tp.topic, b.part.tp.partition, b.raw.first, b.raw.last)
		}
	case x < 70:
		m.settle(true)
	case x < 75:
		m.settle(false)
	case x < 88:
		d := []time.Duration{200 * time.Millisecond, time.Second, 2 * time.Second}[m.rng.IntN(3)]
		time.Sleep(d)
		synctest.Wait()
		m.logf("sleep %v", d)
	case x < 91:
		m.cl.mu.Lock()
		m.cl.refuse = true
		m.cl.mu.Unlock()
		m.logf("the next commit is refused")
	case x < 96:
		m.revoke(x < 94)
	default:
		var gone []topicPartition
		for _, tp := range m.tps {
			if !m.assigned[tp] {
				gone = append(gone, tp)
			}
		}
		if len(gone) > 0 {
			m.assign(gone)
		}
	}
}

// poll hands the owner the records from each assigned partition's
// position, after the rewinds the owner asked for.
func (m *txnModel) poll() {
	m.applyRewinds()
	polled := false
	for _, tp := range m.tps {
		// Each fetch is a poll window of its own, where the owner may
		// rewind: kgo's next fetch of a rewound partition starts there.
		m.applyRewinds()
		if !m.assigned[tp] || m.cur[tp] >= m.end[tp] {
			continue
		}
		to := min(m.end[tp], m.cur[tp]+int64(1+m.rng.IntN(8)))
		m.h.fetch(tp, m.end[tp], records(tp, m.cur[tp], to)...)
		m.logf("fetch %s/%d %d-%d", tp.topic, tp.partition, m.cur[tp], to-1)
		m.cur[tp] = to
		polled = true
	}
	if !polled {
		// A poll that brings nothing is a poll window all the same, where
		// the owner makes the rewinds it waits for (kgo's poll loop runs
		// on, and the owner wakes it for them).
		m.h.fetch(m.tps[0], m.end[m.tps[0]])
	}
}

// applyRewinds moves kgo's fetch positions where the owner rewound them.
func (m *txnModel) applyRewinds() {
	m.cl.mu.Lock()
	rw := m.cl.rewinds
	m.cl.rewinds = nil
	m.cl.mu.Unlock()
	for _, r := range rw {
		for t, ps := range r {
			for p, eo := range ps {
				m.cur[topicPartition{t, p}] = eo.Offset
				m.logf("rewind %s/%d to %d", t, p, eo.Offset)
			}
		}
	}
}

// settle acknowledges (ok) or nacks a random hand-out, after writing its
// outputs into the open transaction (all, or for a nack a random part).
func (m *txnModel) settle(ok bool) {
	m.mu.Lock()
	if len(m.out) == 0 {
		m.mu.Unlock()
		return
	}
	i := m.rng.IntN(len(m.out))
	ho := m.out[i]
	m.out = slices.Delete(m.out, i, i+1)
	written := ho.recs
	if !ok {
		written = written[:m.rng.IntN(len(written)+1)]
	}
	m.open = append(m.open, written...)
	m.mu.Unlock()
	var err error
	if !ok {
		err = errors.New("sink refused")
	}
	m.logf("settle %s/%d %d-%d ok=%v (%d output(s) written)", ho.b.part.tp.topic, ho.b.part.tp.partition, ho.b.raw.first, ho.b.raw.last, ok, len(written))
	m.h.ack(ho.b, err)
}

// revoke revokes (or loses) a random assigned partition.
func (m *txnModel) revoke(revoke bool) {
	var on []topicPartition
	for _, tp := range m.tps {
		if m.assigned[tp] {
			on = append(on, tp)
		}
	}
	if len(on) == 0 {
		return
	}
	tp := on[m.rng.IntN(len(on))]
	r := revokeReq{tps: []topicPartition{tp}, lost: !revoke, reply: make(chan commitSet, 1)}
	m.h.o.inbox.revokeCh <- r
	<-r.reply
	m.assigned[tp] = false
	m.logf("revoke %s/%d (lost %v)", tp.topic, tp.partition, !revoke)
}

// heal acknowledges everything and runs periods until every partition is
// assigned and the commits reach the log ends, then checks E5.
func (m *txnModel) heal() {
	var gone []topicPartition
	for _, tp := range m.tps {
		if !m.assigned[tp] {
			gone = append(gone, tp)
		}
	}
	if len(gone) > 0 {
		m.assign(gone)
	}
	outstanding := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.out)
	}
	for round := 0; ; round++ {
		for outstanding() > 0 {
			m.rng = rand.New(rand.NewPCG(m.seed, uint64(round))) // settle picks at random; all succeed
			m.settle(true)
		}
		m.poll()
		for {
			b, ok := m.h.tryRead()
			if !ok {
				break
			}
			var recs []tmRec
			for _, r := range b.raw.records {
				recs = append(recs, tmRec{b.part.tp, r.Offset})
			}
			m.mu.Lock()
			m.out = append(m.out, &tmHandout{b: b, recs: recs})
			m.mu.Unlock()
		}
		time.Sleep(time.Second)
		synctest.Wait()
		m.mu.Lock()
		done := len(m.out) == 0
		for _, tp := range m.tps {
			if c, ok := m.commits[tp]; !ok || c.offset < m.end[tp] {
				done = false
			}
		}
		if !done && round > 500 {
			defer m.mu.Unlock()
			m.fail("E5", "the commits never reach the log ends: %v of %v", m.commits, m.end)
		}
		m.mu.Unlock()
		if done {
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tp := range m.tps {
		for off := range m.end[tp] {
			if n := m.committed[tmRec{tp, off}]; n != 1 {
				m.fail("E5", "record %s/%d has %d committed outputs after healing", tp.topic, off, n)
			}
		}
	}
}
