package engine

import (
	"cmp"
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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// TestOwnerModel runs the owner alone (ownerHarness, a synctest bubble)
// against a model of what surrounds it, over many seeded random schedules of
// one to three partitions of topic t, and checks after every step what the
// owner promises (loss.go, plan.go, the package doc).
//
// The model:
//
//   - The broker's log of each partition: records with offsets, leader
//     epochs and an identity (the value), transaction markers (control
//     records, which kgo's KeepControlRecords hands over), gaps (compacted or
//     aborted records), a log start, a log end and a leader epoch cache.
//     Steps produce records, move the leader epoch on (a clean election),
//     delete (move the log start up) and truncate (an unclean election: the
//     log from an offset is rewritten under a newer leader epoch).
//   - kgo's fetch position of each assigned partition: it starts at the
//     group's commit (validated against the leader epoch cache when the
//     commit carries an epoch: it resumes at the divergence point, with an
//     injected ErrDataLoss, when the log was truncated below it), or at the
//     log start without one; it follows SetOffsets (the owner's rewinds,
//     fakeClient.rewinds); below the log start it resumes at the log start;
//     after a truncation below it, from the divergence point (KIP-320 needs
//     the epoch of the last record consumed; a position set without one is
//     not validated, as in kgo); past the log end at the log start
//     (ConsumeResetOffset). A poll is made only when the owner asks for one
//     (owner.pollWant, as the poller does) and leaves out paused partitions;
//     every fetch carries the log start, the log end and the last stable
//     offset.
//   - The sink: batches read and held, then acknowledged, nacked (whole, or
//     naming some of the records handed out), in any order, acks of ended
//     epochs included (late).
//   - The group: revokes (drained, then the final commit on a goroutine of
//     its own, as kgo's callback does; nothing else happens in the group
//     until it returns), losses (no commit; a periodic commit held in the
//     client at that moment either lands before the loss or is refused with
//     ILLEGAL_GENERATION, as a broker would after the generation moved on),
//     assignments (with the last commit the broker accepted, and its
//     metadata, as OffsetFetch answers), commit errors and commits held in
//     the client (fakeClient.codes, fakeClient.block).
//   - Time: the bubble's clock moves in steps of 100 ms to several
//     stall_replay_after, so commit ticks, retry backoffs, drain timeouts,
//     log-start queries and replays in place fire in every order.
//
// After every step, with the bubble idle, it checks the invariants below. A
// failure names the seed and prints the step log; rerun one schedule with
// -run 'TestOwnerModel/<seed>$' (OWNER_MODEL_SCHEDULES=n runs n schedules).
// A seed replays the same choices, but the owner's select picks at random
// among events due at the same instant (a commit tick and a gauge tick, say),
// so a failure may take a few runs (-count) to come back. Violations of 4's
// upper bound and of 5 leave the owner's state sound: they are reported
// once per schedule, which goes on to the other invariants; the others stop
// it.
//
//  1. Nothing is committed past an undelivered record that exists: for every
//     commit the broker accepts (when it lands), and for the last one after
//     every step, the offset kgo would resume from (the committed offset, or
//     the divergence point when the commit's leader epoch shows the log was
//     truncated below it) is at most the first offset at or above the log
//     start holding a data record that no acknowledgement applied to a live
//     epoch covers (same identity: a rewritten record is another record).
//     Records below the log start, or rewritten, do not hold it back.
//  2. Commits never go backwards in the order the broker accepts them, but
//     once for each truncation (an unclean election at offset D, leader
//     epoch E): one commit may go back, to D or above (the divergence point,
//     or the first record of the new log after it), never below; it uses up
//     the allowance of the truncation with the highest D at or below it. An
//     allowance also ends with the first commit carrying a leader epoch of
//     at least E (the owner is on the new log). Invariant 1 bounds the same
//     commit from above.
//  3. Nothing is skipped that was not delivered in the current log: every
//     data record the owner takes from a fetch without queueing it to hand
//     out (a skip batch: the commit's delivered ranges, or a replay's) was
//     acknowledged, by an ack applied to a live epoch, under its identity in
//     the log it was fetched from. A hand-out holds only records fetched, and
//     never a control record, nor a record the sink accepted as fetched
//     (that very record was delivered, by an ack applied to a live epoch or
//     by a batch error's nack that did not name it, or the dead-letter
//     topic took it): a retry re-delivers only what the sink did not accept.
//  4. Each lost offset is reported at most once, and every deleted record is
//     reported: kafka_watermark_lost_records_total of each partition (L)
//     never exceeds N, the offsets (gaps and markers included: losses are
//     counted in offsets) removed by deletions and truncations at or above
//     the resume point of the last accepted commit (or at any offset while
//     there is none), each removal counted once; and at the end of the
//     schedule, once the owner has caught up to the log end, L is at least
//     M, the data records deleted while the group had a commit that no one
//     ever acknowledged. What lies between is not knowable from outside the
//     owner: it reports what it knows was not delivered, and its knowledge
//     of what was (applied acks, a commit's ranges, a carried loss) is lost
//     with a commit that fails or is never made, an ack that comes late, or
//     a truncation's records it never fetched.
//  5. Buffered records are bounded: the records in each partition's ready
//     queue (fetched, not handed out yet) never exceed pollLowWater-1
//     batches of batch_max_records plus one fetch's worth: the owner asks
//     for another poll only while fewer than pollLowWater batches are ready
//     over every partition that can hand out, and a partition at
//     max_pending_batches is paused and not fetched.
//  7. Nothing delivered again that the delivered ranges of the commit an
//     assignment started from cover: no record they covered when it was
//     assigned is handed out by it (unless a truncation came since).
//  8. With a dead-letter topic (a third of the schedules with
//     commit_metadata; omWriter, which a step takes down and brings back):
//     a record the topic took counts as delivered for 1 and 6 (it reached
//     the topic before the owner could commit past it), and every letter
//     holds fetched data records tried at least once and at most
//     max_attempts times, none of which the sink accepted as fetched (3):
//     only the records a batch error named are dead-lettered.
//  6. At the end of each schedule the sink heals (every batch acknowledged,
//     no commit error or hold, a few more records produced, every partition
//     assigned, the dead-letter topic up, and only with stall_replay_after
//     0s a stalled partition is reassigned), and the run goes on until the
//     offset kgo would resume from (as in 1) after the last accepted commit
//     of every partition is its log end; then every
//     data record of the current log at or above its start was
//     acknowledged under its identity (or taken by the dead-letter topic),
//     and invariant 4's lower bound holds.
//  9. Under ordering: key, no hand-out holds a record of a key whose
//     earlier record is out in another hand-out of the same epoch, not
//     delivered (checkKeyOrder); nor, at any offset, one of a key that the
//     sink still holds in a hand-out of an ended epoch that went out less
//     than drain_timeout ago, unless the partition was lost since: every
//     other way an epoch ends (a replay in place, a truncation, a revoke)
//     drains first.
//  10. Reports do not outlive their report_for: no live epoch carries a
//     loss report older than lost_records_report_for, or a dead-letter
//     report older than dead_letter.report_for (the schedule's
//     lost_records_report_for, or 24h where that is 0s), by a gauge refresh
//     or more (the expiry walk runs on the gauge clock), whatever epochs
//     ended and began since the report was made (replays in place,
//     truncations, reassignments); with 0s, none carries one at all.
//
// Not modelled: Close; fetch sessions and buffered fetches across a pause
// (a paused partition is simply not fetched); a fetch of a partition from an
// assignment that has ended (BlockRebalanceOnPoll rules it out); several
// members (a partition away from this member is consumed by no one); the
// consumer group protocol's fence; commit metadata refused as too large;
// read_committed.
func TestOwnerModel(t *testing.T) {
	schedules, steps := 200, 200
	if testing.Short() {
		schedules = 40
	}
	if s, err := strconv.Atoi(os.Getenv("OWNER_MODEL_SCHEDULES")); err == nil && s > 0 {
		schedules = s
	}
	var base uint64
	if b, err := strconv.ParseUint(os.Getenv("OWNER_MODEL_SEED_BASE"), 10, 64); err == nil {
		base = b
	}
	t.Logf("schedules %d..%d (OWNER_MODEL_SEED_BASE=%d OWNER_MODEL_SCHEDULES=%d)", base, base+uint64(schedules)-1, base, schedules)
	var stats omStats
	for i := range uint64(schedules) {
		seed := base + i
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m, g := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				runOwnerModel(t, seed, steps, m, g, &stats)
			})
		})
	}
	t.Logf("%d schedules: %s", schedules, stats)
}

// omStats counts what the schedules made happen, so a change that stops the
// model from reaching a path shows in -v output.
type omStats struct {
	steps, polls, handOuts, acks, nacks, revokes, losses, assigns       int
	deletions, truncations, skipped, lost, lostLow, lostHigh, truncated int64
	replays, backCommits, divergences, resetsPastEnd, exactLoss         int64
	deadLettered                                                        int
}

func (s omStats) String() string {
	return fmt.Sprintf("%d steps, %d polls, %d hand-outs, %d acks, %d nacks, %d revokes, %d losses, %d assignments, "+
		"%d deletions, %d truncations, %d divergences seen by kgo, %d resets past the log end, %d skipped, "+
		"%d lost (model bounds %d..%d, exact in %d partitions), %d truncated, %d replays in place, %d commits back, %d dead-lettered",
		s.steps, s.polls, s.handOuts, s.acks, s.nacks, s.revokes, s.losses, s.assigns,
		s.deletions, s.truncations, s.divergences, s.resetsPastEnd, s.skipped,
		s.lost, s.lostLow, s.lostHigh, s.exactLoss, s.truncated, s.replays, s.backCommits, s.deadLettered)
}

// omConf is one schedule's configuration.
type omConf struct {
	parts, batchMax, maxPending, maxFetch, retries int
	drain, stallReplay, reportFor                  time.Duration
	meta                                           bool
	// metaMax is commit_metadata_max_bytes: the default 4,000, or in some
	// schedules with commit_metadata a budget too small for the stall and
	// the attempts, where the dead-letter gate must not wedge.
	metaMax int
	// deadLetter is dead_letter.max_attempts with a dead-letter topic
	// (omWriter), 0 without one.
	deadLetter int
	// keys, under ordering: key, is how many distinct keys records take
	// (and some have none); 0 under none. maxHeld is max_held_records.
	keys, maxHeld int
}

func (c omConf) String() string {
	return fmt.Sprintf("%d partition(s), batch_max_records %d, max_pending_batches %d, fetches of up to %d records, max_retries %d, drain_timeout %v, stall_replay_after %v, lost_records_report_for %v, commit_metadata %v (max_bytes %d), dead_letter.max_attempts %d",
		c.parts, c.batchMax, c.maxPending, c.maxFetch, c.retries, c.drain, c.stallReplay, c.reportFor, c.meta, c.metaMax, c.deadLetter) +
		fmt.Sprintf(", dead_letter.report_for %v, ordering key over %d keys, max_held_records %d", c.deadLetterReportFor(), c.keys, c.maxHeld)
}

// deadLetterReportFor is the schedule's dead_letter.report_for: its
// lost_records_report_for, so that dead-letter reports expire within a
// schedule too, or 24h where that is 0s, so that some carry one all along.
func (c omConf) deadLetterReportFor() time.Duration {
	if c.reportFor == 0 {
		return 24 * time.Hour
	}
	return c.reportFor
}

func (c omConf) yaml() string {
	return fmt.Sprintf("batch_max_records: %d\nmax_pending_batches: %d\ncommit_period: 1s\ndrain_timeout: %v\n"+
		"stall_replay_after: %v\ntopic_lag_refresh_period: 1s\nlost_records_report_for: %v\ncommit_metadata: %v\n"+
		"commit_metadata_max_bytes: %d\nnack_retry: { max_retries: %d, initial_backoff: 500ms, max_backoff: 2s }\ndead_letter: { max_attempts: %d, report_for: %v }\n",
		c.batchMax, c.maxPending, c.drain, c.stallReplay, c.reportFor, c.meta, c.metaMax, c.retries, max(c.deadLetter, 1), c.deadLetterReportFor()) +
		fmt.Sprintf("ordering: %s\nmax_held_records: %d\n", map[bool]string{false: "none", true: "key"}[c.keys > 0], max(c.maxHeld, 1))
}

// omWriter is the model's dead-letter topic: it takes every letter while
// up, refuses every write while down (a missing topic, an ACL, a broker
// down). Safe for concurrent use: the owner's write goroutines call it.
type omWriter struct {
	mu      sync.Mutex
	down    bool
	letters []Letter // written, not yet taken by the model (takeLetters)
}

func (w *omWriter) Write(_ context.Context, l *Letter) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		return "", errors.New("dead-letter topic down")
	}
	w.letters = append(w.letters, *l)
	return "dlq", nil
}

func (w *omWriter) setDown(down bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down = down
}

// take returns the letters written since the last take, by partition and
// offset: writes that end at one instant end in the scheduler's order,
// which the model's step log must not show.
func (w *omWriter) take() []Letter {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.letters
	w.letters = nil
	slices.SortFunc(out, func(x, y Letter) int {
		a, b := x.Records[0], y.Records[0]
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

// omRec is one record of the modelled log.
type omRec struct {
	id      string // identity, unique in the run: the record's value
	off     int64
	epoch   int32
	control bool
	key     string // under ordering: key; keyed false: a null key
	keyed   bool
}

// omLog is one partition's log as the broker holds it.
type omLog struct {
	recs       map[int64]*omRec // by offset; none: a gap
	start, end int64
	leader     int32
	// epochs is the leader epoch cache: entry i's epoch covers the offsets
	// from its from to the next entry's.
	epochs []leaderEpochChange
}

// epochEnd answers OffsetForLeaderEpoch as a broker does: the end offset of
// the largest epoch at most e, and that epoch.
func (l *omLog) epochEnd(e int32) (int64, int32, bool) {
	i := -1
	for j, c := range l.epochs {
		if c.epoch <= e {
			i = j
		}
	}
	switch {
	case len(l.epochs) == 0 || e > l.epochs[len(l.epochs)-1].epoch:
		return -1, -1, false // UNDEFINED_EPOCH_OFFSET: kgo does not validate
	case i < 0:
		// Older than the cache: the start of its first epoch (Kafka's
		// LeaderEpochFileCache.endOffsetFor).
		return l.epochs[0].from, e, true
	case i+1 < len(l.epochs):
		return l.epochs[i+1].from, l.epochs[i].epoch, true
	}
	return l.end, l.epochs[i].epoch, true
}

// resumeAt is where a consumer resumes from a commit of eo: the committed
// offset, or the divergence point when the log was truncated below it.
func (l *omLog) resumeAt(eo kgo.EpochOffset) int64 {
	if eo.Epoch >= 0 {
		if end, _, ok := l.epochEnd(eo.Epoch); ok && end < eo.Offset {
			return end
		}
	}
	return eo.Offset
}

// omCursor is kgo's fetch position of one partition.
type omCursor struct {
	off      int64
	epoch    int32 // of the last record consumed, or set with off; -1: unknown
	consumed bool
}

type omCommit struct {
	tp   topicPartition
	eo   kgo.EpochOffset
	meta string
	// covered: the records its delivered ranges covered when the broker
	// accepted it (coveredBy).
	covered map[string]bool
}

// omAllowance is a truncation at from, to leader epoch epoch: one commit
// may go back, to from or above (invariant 2).
type omAllowance struct {
	from  int64
	epoch int32
}

type omPart struct {
	tp       topicPartition
	log      omLog
	assigned bool // in kgo's view, revoking included
	revoking bool
	cur      omCursor
	commits  []omCommit // accepted, in order
	allow    []omAllowance
	// removedN counts the removals of invariant 4's upper bound; removedM
	// holds the identities and offsets of its lower bound's deleted data
	// records.
	removedN int64
	removedM []omRemoved
	// covered holds the records the delivered ranges of the commit the
	// current assignment started from cover (invariant 7); nil when it
	// started from none, and from a truncation on, also one made while the
	// partition was not assigned (ranges written from a log a truncation
	// rewrote may be dropped whole, also below the divergence point).
	covered  map[string]bool
	lostSeen int64 // the lost counter at the last check, for the step log
	// truncs holds every truncation of the log, in order: what coveredBy
	// knows a commit's ranges were written before.
	truncs []omAllowance
}

func (p *omPart) lastCommit() (omCommit, bool) {
	if len(p.commits) == 0 {
		return omCommit{}, false
	}
	return p.commits[len(p.commits)-1], true
}

// omRemoved is a deleted data record, for invariant 4's lower bound.
type omRemoved struct {
	id  string
	off int64
}

// claimedDelivered reports whether an accepted commit of p carries off in
// its delivered ranges. The owner counts such an offset delivered, and
// cannot know better when the range was written from a log that a
// truncation then rewrote and a deletion took before any record at or
// below the range showed the newer leader epoch (a revoke's commit made
// before kgo reported the truncation, and accepted after): invariant 4's
// lower bound leaves it out.
func (p *omPart) claimedDelivered(off int64) bool {
	for _, c := range p.commits {
		m, err := commitmeta.Decode(c.meta)
		if err == nil && m.Base == c.eo.Offset && m.Covered(off) {
			return true
		}
	}
	return false
}

// omHandout is one hand-out held by the sink.
type omHandout struct {
	b    *Batch
	recs []*kgo.Record // the records handed out: all, or the retried ones
	idx  []int         // their indices in b.raw.records
	at   time.Time     // when it went out
	step int           // the step it went out in
}

type omRebalance struct {
	tps   []topicPartition
	reply chan commitSet
	done  chan error // the final commit's, once the drain replied
}

type ownerModel struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	krng  *rand.Rand // key order's draws (runOwnerModel)
	h     *ownerHarness
	g     *memmetrics.Store
	conf  omConf
	parts []*omPart
	byTP  map[topicPartition]*omPart
	stats *omStats

	step   int
	log    []string
	nextID int

	writer *omWriter // the dead-letter topic, nil without one
	// keyOut holds, under ordering: key, every record handed out and not
	// delivered (acknowledged or dead-lettered), with its hand-out: what
	// invariant 9 checks a hand-out against.
	keyOut map[omKeyOut]*Batch
	// lostStep is, per partition, the step of its last loss (lose): the
	// hand-outs of the epoch it ended are out of invariant 9's reach.
	lostStep    map[topicPartition]int
	sent        map[*kgo.Record]bool // every record handed to the owner
	outstanding []*omHandout
	liveAcked   map[string]bool // acknowledged by an ack applied to a live epoch
	anyAcked    map[string]bool // acknowledged at all, late acks included
	// liveDone holds the records, as fetched (one fetch in one epoch), that
	// an ack applied to a live epoch delivered or the dead-letter topic
	// took: none goes out or to the topic again (invariants 3 and 8).
	liveDone map[*kgo.Record]bool

	accepted     []omCommit // appended by fakeClient.onCommit, under h.cl.mu
	seenAccepted int
	seenRewinds  int
	reb          *omRebalance
	errNext      map[topicPartition]error
	ctx          context.Context
	healing      bool
	// softs holds the invariants reported without stopping the schedule
	// (4's upper bound, 5): a count or a bound, which leave the state sound,
	// so the schedule goes on to the others.
	softs map[string]bool
}

func runOwnerModel(t *testing.T, seed uint64, steps int, mt *Metrics, g *memmetrics.Store, stats *omStats) {
	rng := rand.New(rand.NewPCG(seed, 0x0e1d))
	conf := omConf{
		parts:       1 + rng.IntN(3),
		batchMax:    1 + rng.IntN(4),
		maxPending:  []int{1, 2, 3, 5, 8, 12}[rng.IntN(6)],
		maxFetch:    1 + rng.IntN(8),
		retries:     []int{0, 0, 1, 2, -1}[rng.IntN(5)],
		drain:       []time.Duration{time.Second, 3 * time.Second}[rng.IntN(2)],
		stallReplay: []time.Duration{0, 4 * time.Second, 10 * time.Second, 10 * time.Second}[rng.IntN(4)],
		reportFor:   []time.Duration{0, 30 * time.Second, 24 * time.Hour, 24 * time.Hour}[rng.IntN(4)],
		meta:        rng.IntN(6) != 0,
	}
	if conf.meta && rng.IntN(3) == 0 {
		conf.deadLetter = 1 + rng.IntN(4)
	}
	// Key order's draws come from a generator of their own, so that the
	// schedules of ordering: none stay what they were before it.
	krng := rand.New(rand.NewPCG(seed, 0x6b6579))
	if krng.IntN(3) == 0 {
		conf.keys, conf.maxHeld = 1+krng.IntN(4), []int{1, 3, 8, 100}[krng.IntN(4)]
	}
	// So do the metadata budgets: a quarter of the schedules with
	// commit_metadata get 64 (the least the input takes), 128 or 256 bytes.
	conf.metaMax = 4000
	if mrng := rand.New(rand.NewPCG(seed, 0x6d657461)); conf.meta && mrng.IntN(4) == 0 {
		conf.metaMax = []int{64, 128, 256}[mrng.IntN(3)]
	}
	oc := testConfig(t, conf.yaml())
	var w *omWriter
	if conf.deadLetter > 0 {
		w = &omWriter{}
		oc.DeadLetter = w
	}
	h := startOwner(t, oc, mt)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the owner stops: ends a final commit held in the client
	m := &ownerModel{
		t: t, seed: seed, rng: rng, krng: krng, h: h, g: g, conf: conf, stats: stats,
		byTP: map[topicPartition]*omPart{}, sent: map[*kgo.Record]bool{}, writer: w, keyOut: map[omKeyOut]*Batch{}, lostStep: map[topicPartition]int{},
		liveAcked: map[string]bool{}, anyAcked: map[string]bool{}, liveDone: map[*kgo.Record]bool{},
		errNext: map[topicPartition]error{}, ctx: ctx,
	}
	h.cl.mu.Lock()
	h.cl.onCommit = func(tp topicPartition, eo kgo.EpochOffset, meta string) {
		m.accepted = append(m.accepted, omCommit{tp: tp, eo: eo, meta: meta})
	}
	h.cl.mu.Unlock()
	m.logf("config: %v", conf)
	var tps []topicPartition
	for i := range conf.parts {
		p := &omPart{tp: topicPartition{"t", int32(i)}}
		p.log = omLog{recs: map[int64]*omRec{}, epochs: []leaderEpochChange{{from: 0, epoch: 0}}}
		m.produce(p, rng.IntN(6))
		m.parts = append(m.parts, p)
		m.byTP[p.tp] = p
		tps = append(tps, p.tp)
	}
	m.publishOffsets()
	m.assign(tps)
	m.check()

	for m.step = 1; m.step <= steps; m.step++ {
		m.randomStep()
		m.check()
	}
	m.heal()
	stats.steps += m.step
	if len(m.softs) > 0 {
		t.Logf("steps:\n%s", strings.Join(m.log, "\n"))
	}
}

// randomStep takes one step, drawn by weight.
func (m *ownerModel) randomStep() {
	type action struct {
		weight int
		do     func()
	}
	actions := []action{
		{12, func() { m.produce(m.pick(), 1+m.rng.IntN(5)); m.publishOffsets() }},
		{18, m.poll},
		{16, m.read},
		{16, func() { m.ack(true) }},
		{6, func() { m.ack(false) }},
		{10, func() {
			m.sleep([]time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, 2 * time.Second}[m.rng.IntN(5)])
		}},
		{3, func() {
			m.sleep([]time.Duration{m.conf.drain, m.conf.stallReplay + time.Second, 3 * m.conf.stallReplay, 30 * time.Second}[m.rng.IntN(4)])
		}},
		{2, m.revoke},
		{1, m.lose},
		{4, m.reassign},
		{2, m.commitCodes},
		{2, m.commitBlock},
		{1, m.fetchErr},
		{2, m.deleteRecords},
		{2, m.truncate},
		{1, m.bump},
		{1, m.deadLetterOutage},
	}
	total := 0
	for _, a := range actions {
		total += a.weight
	}
	x := m.rng.IntN(total)
	for _, a := range actions {
		if x < a.weight {
			a.do()
			return
		}
		x -= a.weight
	}
}

func (m *ownerModel) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf("%4d  ", m.step)+fmt.Sprintf(format, args...))
}

// fail stops the schedule with the seed, the invariant and every step.
func (m *ownerModel) fail(inv string, format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("seed %d, step %d: invariant %s violated: %s\nsteps (rerun: %s):\n%s",
		m.seed, m.step, inv, fmt.Sprintf(format, args...), rerunCommand(m.seed), strings.Join(m.log, "\n"))
}

// state runs fn on the owner's state while the bubble is idle (h.state).
func (m *ownerModel) state(fn func(o *owner)) { m.h.state(fn) }

// soft reports a violation of an invariant whose failure leaves the owner's
// state sound, once per schedule, and lets the schedule go on; the step log
// is printed at its end.
func (m *ownerModel) soft(inv string, format string, args ...any) {
	m.t.Helper()
	if m.softs[inv] {
		return
	}
	if m.softs == nil {
		m.softs = map[string]bool{}
	}
	m.softs[inv] = true
	m.t.Errorf("seed %d, step %d: invariant %s violated: %s (rerun: %s)",
		m.seed, m.step, inv, fmt.Sprintf(format, args...), rerunCommand(m.seed))
}

// rerunCommand is the one command that replays seed's schedule.
func rerunCommand(seed uint64) string {
	return fmt.Sprintf("OWNER_MODEL_SEED_BASE=%d OWNER_MODEL_SCHEDULES=1 go test -race -run 'TestOwnerModel/%d$' ./internal/engine/", seed, seed)
}

func (m *ownerModel) pick() *omPart { return m.parts[m.rng.IntN(len(m.parts))] }

func (m *ownerModel) newID() string {
	m.nextID++
	return strconv.Itoa(m.nextID)
}

// produce appends n records at the log end, under the current leader
// epoch: now and then a gap before one, or a transaction marker.
func (m *ownerModel) produce(p *omPart, n int) {
	l := &p.log
	for range n {
		if m.rng.IntN(8) == 0 {
			l.end++ // compacted, or aborted and read_committed
		}
		r := &omRec{id: m.newID(), off: l.end, epoch: l.leader, control: m.rng.IntN(8) == 0}
		if m.conf.keys > 0 {
			if k := m.krng.IntN(m.conf.keys + 1); k < m.conf.keys {
				r.key, r.keyed = fmt.Sprint("k", k), true
			}
		}
		l.recs[l.end] = r
		l.end++
	}
	if n > 0 {
		m.logf("produce %v: log [%d,%d) epoch %d", p.tp, l.start, l.end, l.leader)
	}
}

// publishOffsets has the fake client list every partition's log start and
// end.
func (m *ownerModel) publishOffsets() {
	starts, ends := kadm.ListedOffsets{"t": {}}, kadm.ListedOffsets{"t": {}}
	for _, p := range m.parts {
		starts["t"][p.tp.partition] = kadm.ListedOffset{Topic: "t", Partition: p.tp.partition, Offset: p.log.start}
		ends["t"][p.tp.partition] = kadm.ListedOffset{Topic: "t", Partition: p.tp.partition, Offset: p.log.end}
	}
	m.h.cl.mu.Lock()
	m.h.cl.starts, m.h.cl.ends = starts, ends
	m.h.cl.mu.Unlock()
}

// record returns the kgo record of r, new for each fetch.
func (m *ownerModel) record(tp topicPartition, r *omRec) *kgo.Record {
	kr := &kgo.Record{Topic: tp.topic, Partition: tp.partition, Offset: r.off, LeaderEpoch: r.epoch, Value: []byte(r.id)}
	if r.keyed {
		kr.Key = []byte(r.key)
	}
	if r.control {
		kr.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true, Control: true})
	}
	return kr
}

// fetchFrom moves p's kgo position as kgo would, and returns up to k
// records from it, words for the step log, and the data loss kgo injects,
// if any.
func (m *ownerModel) fetchFrom(p *omPart, k int) ([]*kgo.Record, string, error) {
	c, l := &p.cur, &p.log
	var loss error
	var note string
	if c.epoch >= 0 {
		if end, epoch, ok := l.epochEnd(c.epoch); ok && end < c.off {
			loss = &kgo.ErrDataLoss{Topic: p.tp.topic, Partition: p.tp.partition, ConsumedTo: c.off, ConsumedToEpoch: c.epoch, ResetTo: end, ResetToEpoch: epoch}
			note = fmt.Sprintf(" diverged %d->%d", c.off, end)
			c.off, c.epoch = end, epoch
			m.stats.divergences++
		}
	}
	if c.off > l.end {
		// Out of range past the end: ConsumeResetOffset, the log start.
		if c.consumed {
			loss = &kgo.ErrDataLoss{Topic: p.tp.topic, Partition: p.tp.partition, ConsumedTo: c.off, ConsumedToEpoch: c.epoch, ResetTo: l.start, ResetToEpoch: -1}
		}
		note += fmt.Sprintf(" past the end %d->%d", c.off, l.start)
		c.off, c.epoch = l.start, -1
		m.stats.resetsPastEnd++
	}
	if c.off < l.start {
		note += fmt.Sprintf(" below the start %d->%d", c.off, l.start)
		c.off, c.epoch = l.start, -1
	}
	var out []*kgo.Record
	for off := c.off; off < l.end && len(out) < k; off++ {
		if r := l.recs[off]; r != nil {
			kr := m.record(p.tp, r)
			m.sent[kr] = true
			out = append(out, kr)
		}
	}
	if n := len(out); n > 0 {
		c.off, c.epoch, c.consumed = out[n-1].Offset+1, out[n-1].LeaderEpoch, true
	}
	return out, note, loss
}

// poll makes the poll the owner asked for, if it asked: every assigned
// partition that is not paused, now and then one left out.
func (m *ownerModel) poll() {
	select {
	case <-m.h.o.inbox.pollWant:
	default:
		m.logf("poll: none asked for")
		return
	}
	m.stats.polls++
	type snap struct {
		p          *partState
		lastQueued int64
	}
	before := map[topicPartition]snap{}
	m.state(func(o *owner) {
		for tp, p := range o.parts {
			before[tp] = snap{p, p.queue.lastQueued}
		}
	})
	var fps []kgo.FetchPartition
	fetched := map[topicPartition][]*kgo.Record{}
	var words []string
	for _, p := range m.parts {
		if !p.assigned || m.h.cl.isPaused(p.tp) {
			continue
		}
		inject := m.errNext[p.tp]
		delete(m.errNext, p.tp)
		if inject == nil && m.rng.IntN(5) == 0 {
			continue
		}
		recs, note, loss := m.fetchFrom(p, 1+m.rng.IntN(m.conf.maxFetch))
		for _, err := range []error{inject, loss} {
			if err != nil {
				fps = append(fps, kgo.FetchPartition{Partition: p.tp.partition, Err: err})
				note += fmt.Sprintf(" err(%s)", omErrWords(err))
			}
		}
		if len(recs) > 0 {
			fps = append(fps, kgo.FetchPartition{Partition: p.tp.partition, HighWatermark: p.log.end, LastStableOffset: p.log.end, LogStartOffset: p.log.start, Records: recs})
			fetched[p.tp] = recs
			note = fmt.Sprintf(" %s", omSpan(recs)) + note
		}
		if note != "" {
			words = append(words, fmt.Sprintf("%d:%s", p.tp.partition, note))
		}
	}
	m.logf("poll %d [%s]", m.h.polls+1, strings.Join(words, "; "))
	f := kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: fps}}}
	m.h.polls++
	r := pollResult{seq: m.h.polls, fetches: kgo.Fetches{f}, done: make(chan struct{})}
	m.h.o.inbox.pollCh <- r
	<-r.done

	// Invariant 3: a record the owner took from this fetch (above what the
	// epoch had queued, at or below what it has queued now) that is not in
	// a batch waiting to be handed out was skipped.
	var skipped []*kgo.Record
	m.state(func(o *owner) {
		for tp, recs := range fetched {
			p := o.parts[tp]
			if p == nil {
				continue
			}
			lq := int64(-1)
			if s, ok := before[tp]; ok && s.p == p {
				lq = s.lastQueued
			}
			queued := map[*kgo.Record]bool{}
			for _, rb := range p.queue.ready {
				if !rb.skip {
					for _, r := range rb.records {
						queued[r] = true
					}
				}
			}
			// Under ordering: key, records wait for their key in the
			// scheduler, registered in segments (keyed.go).
			k, _ := p.dlv.(*keyPart)
			held := func(r *kgo.Record) bool { return k != nil && k.offs != nil && k.offs.NotDone(r.Offset) }
			for _, r := range recs {
				if r.Offset > lq && r.Offset <= p.queue.lastQueued && !queued[r] && !held(r) && !r.Attrs.IsControl() {
					skipped = append(skipped, r)
				}
			}
		}
	})
	for _, r := range skipped {
		m.stats.skipped++
		if !m.liveAcked[string(r.Value)] {
			m.fail("3", "%v offset %d (record %s, leader epoch %d) skipped, never acknowledged", topicPartition{r.Topic, r.Partition}, r.Offset, r.Value, r.LeaderEpoch)
		}
	}
	if len(skipped) > 0 {
		m.logf("  skipped %d record(s)", len(skipped))
	}
}

// omErrWords names an injected fetch error briefly, for the step log.
func omErrWords(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	var dl *kgo.ErrDataLoss
	if errors.As(err, &dl) {
		return fmt.Sprintf("data loss: consumed to %d/e%d, reset to %d/e%d", dl.ConsumedTo, dl.ConsumedToEpoch, dl.ResetTo, dl.ResetToEpoch)
	}
	return err.Error()
}

func omSpan(recs []*kgo.Record) string {
	if len(recs) == 0 {
		return "[]"
	}
	return fmt.Sprintf("[%d..%d]e%d", recs[0].Offset, recs[len(recs)-1].Offset, recs[len(recs)-1].LeaderEpoch)
}

// fetchErr has the next poll of a partition carry an error, as kgo injects
// one.
func (m *ownerModel) fetchErr() { m.errorNext(m.pick()) }

// errorNext has the next poll of p carry an error.
func (m *ownerModel) errorNext(p *omPart) {
	err := []*kerr.Error{kerr.NotLeaderForPartition, kerr.UnknownTopicOrPartition, kerr.TopicAuthorizationFailed}[m.rng.IntN(3)]
	m.errNext[p.tp] = err
	m.logf("fetch error next for %v: %s", p.tp, err.Message)
}

// read takes one batch, if the owner has one.
func (m *ownerModel) read() {
	b, ok := m.h.tryRead()
	if !ok {
		m.logf("read: none")
		return
	}
	m.handOut(b)
}

func (m *ownerModel) handOut(b *Batch) {
	m.stats.handOuts++
	if p := m.byTP[b.part.tp]; p.covered != nil {
		for _, r := range b.raw.records {
			if p.covered[string(r.Value)] {
				m.fail("7", "%v handed out offset %d (record %s) again, which the delivered ranges of the commit its assignment started from cover", b.part.tp, r.Offset, r.Value)
			}
		}
	}
	for _, r := range b.raw.records {
		if !m.sent[r] {
			m.fail("3 (hand-out)", "%v handed out offset %d, a record not fetched", b.part.tp, r.Offset)
		}
		if r.Attrs.IsControl() {
			m.fail("3 (hand-out)", "%v handed out offset %d, a control record", b.part.tp, r.Offset)
		}
	}
	ho := &omHandout{b: b, at: time.Now(), step: m.step}
	for i, r := range b.raw.records {
		if b.only == nil || slices.Contains(b.only, i) {
			ho.recs = append(ho.recs, r)
			ho.idx = append(ho.idx, i)
			if m.liveDone[r] {
				m.fail("3 (hand-out)", "%v handed out offset %d (record %s) again, which the sink accepted as fetched", b.part.tp, r.Offset, r.Value)
			}
		}
	}
	m.checkKeyOrder(b, ho.recs)
	m.outstanding = append(m.outstanding, ho)
	m.logf("read %v %s seq %d attempt %d (%d record(s))", b.part.tp, omSpan(b.raw.records), b.seq, b.attempt, len(ho.recs))
}

// ack acknowledges a batch the sink holds: ok, or (unless healing) a nack,
// of the whole batch or naming some of its records.
func (m *ownerModel) ack(ok bool) {
	if len(m.outstanding) == 0 {
		return
	}
	i := m.rng.IntN(len(m.outstanding))
	ho := m.outstanding[i]
	m.outstanding = slices.Delete(m.outstanding, i, i+1)
	m.ackHandOut(ho, ok || m.healing)
}

func (m *ownerModel) ackHandOut(ho *omHandout, ok bool) {
	live := false
	m.state(func(*owner) { live = ho.b.part.live() })
	late := ""
	if !live {
		late = " (late)"
	}
	if ok {
		m.stats.acks++
		m.logf("ack %v %s seq %d%s", ho.b.part.tp, omSpan(ho.recs), ho.b.seq, late)
		m.h.ack(ho.b, nil)
		m.delivered(ho.recs, live)
		return
	}
	m.stats.nacks++
	var failed []int
	if len(ho.idx) > 1 && m.rng.IntN(3) == 0 {
		n := 1 + m.rng.IntN(len(ho.idx)-1)
		for _, j := range m.rng.Perm(len(ho.idx))[:n] {
			failed = append(failed, ho.idx[j])
		}
		slices.Sort(failed)
	}
	m.logf("nack %v %s seq %d failed %v%s", ho.b.part.tp, omSpan(ho.recs), ho.b.seq, failed, late)
	m.h.o.inbox.ackCh <- ackMsg{b: ho.b, err: errors.New("sink down"), failed: failed}
	synctest.Wait()
	if failed != nil {
		var done []*kgo.Record
		for j, r := range ho.recs {
			if !slices.Contains(failed, ho.idx[j]) {
				done = append(done, r)
			}
		}
		m.delivered(done, live)
	}
}

func (m *ownerModel) delivered(recs []*kgo.Record, live bool) {
	for _, r := range recs {
		delete(m.keyOut, omKeyOut{topicPartition{r.Topic, r.Partition}, r.Offset})
		m.anyAcked[string(r.Value)] = true
		if live {
			m.liveAcked[string(r.Value)] = true
			m.liveDone[r] = true
		}
	}
}

func (m *ownerModel) sleep(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	m.logf("sleep %v", d)
	time.Sleep(d)
}

// commitCodes makes the broker refuse one partition's commits, or accept
// them again.
func (m *ownerModel) commitCodes() {
	p := m.pick()
	m.h.cl.mu.Lock()
	defer m.h.cl.mu.Unlock()
	if _, ok := m.h.cl.codes[p.tp]; ok {
		delete(m.h.cl.codes, p.tp)
		m.logf("commits of %v accepted again", p.tp)
		return
	}
	err := []*kerr.Error{kerr.RebalanceInProgress, kerr.NotCoordinator, kerr.RequestTimedOut}[m.rng.IntN(3)]
	m.h.cl.codes[p.tp] = err.Code
	m.logf("commits of %v refused: %s", p.tp, err.Message)
}

// commitBlock holds commits in the client (all, or periodic ones only), or
// lets them go.
func (m *ownerModel) commitBlock() {
	m.h.cl.mu.Lock()
	defer m.h.cl.mu.Unlock()
	if m.h.cl.block != nil {
		close(m.h.cl.block)
		m.h.cl.block = nil
		m.logf("commits released")
		return
	}
	m.h.cl.block, m.h.cl.blockAsync = make(chan struct{}), m.rng.IntN(2) == 0
	m.logf("commits held (periodic only: %v)", m.h.cl.blockAsync)
}

// remove takes the offsets [from, to) of p out of the log, counting them
// for invariant 4.
func (m *ownerModel) remove(p *omPart, from, to int64, deletion bool) {
	c, has := p.lastCommit()
	resume := int64(0)
	if has {
		resume = p.log.resumeAt(c.eo)
	}
	for off := from; off < to; off++ {
		if off >= resume {
			p.removedN++
		}
		if r := p.log.recs[off]; r != nil {
			if deletion && has && !r.control {
				p.removedM = append(p.removedM, omRemoved{id: r.id, off: off})
			}
			delete(p.log.recs, off)
		}
	}
}

// deleteRecords moves a log start up (retention, DeleteRecords).
func (m *ownerModel) deleteRecords() {
	p := m.pick()
	l := &p.log
	if l.start == l.end {
		return
	}
	to := l.start + 1 + m.rng.Int64N(l.end-l.start)
	m.remove(p, l.start, to, true)
	l.start = to
	m.stats.deletions++
	m.publishOffsets()
	m.logf("delete %v below %d: log [%d,%d)", p.tp, to, l.start, l.end)
}

// truncate rewrites a log from an offset under a newer leader epoch (an
// unclean election), with new records.
func (m *ownerModel) truncate() {
	p := m.pick()
	l := &p.log
	if l.start == l.end {
		return
	}
	at := max(l.start, l.end-1-m.rng.Int64N(12))
	m.remove(p, at, l.end, false)
	// From a truncation on, ranges written from the log it rewrote may be
	// dropped whole (dropSkipsPastEnd cannot tell a shorter log from a
	// topic made again): in this assignment, and in the next one that
	// starts from a commit written before it.
	p.covered = nil
	for i := range p.commits {
		p.commits[i].covered = nil
	}
	l.leader++
	for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].from >= at {
		l.epochs = l.epochs[:len(l.epochs)-1]
	}
	l.epochs = append(l.epochs, leaderEpochChange{from: at, epoch: l.leader})
	l.end = at
	m.produce(p, 1+m.rng.IntN(6))
	p.allow = append(p.allow, omAllowance{from: at, epoch: l.leader})
	p.truncs = append(p.truncs, omAllowance{from: at, epoch: l.leader})
	m.stats.truncations++
	m.publishOffsets()
	m.logf("truncate %v at %d: leader epoch %d, log [%d,%d)", p.tp, at, l.leader, l.start, l.end)
}

// bump moves a leader epoch on without a truncation (a clean election).
func (m *ownerModel) bump() {
	p := m.pick()
	l := &p.log
	l.leader++
	if n := len(l.epochs); l.epochs[n-1].from == l.end {
		l.epochs[n-1].epoch = l.leader
	} else {
		l.epochs = append(l.epochs, leaderEpochChange{from: l.end, epoch: l.leader})
	}
	m.logf("leader epoch of %v is %d from %d", p.tp, l.leader, l.end)
}

// free returns the partitions in the given state, in order.
func (m *ownerModel) free(assigned bool) []*omPart {
	var out []*omPart
	for _, p := range m.parts {
		if p.assigned == assigned && !p.revoking {
			out = append(out, p)
		}
	}
	return out
}

func (m *ownerModel) subset(ps []*omPart) []topicPartition {
	var out []topicPartition
	for _, p := range ps {
		if m.rng.IntN(2) == 0 {
			out = append(out, p.tp)
		}
	}
	if len(out) == 0 && len(ps) > 0 {
		out = append(out, ps[m.rng.IntN(len(ps))].tp)
	}
	return out
}

// revoke starts a revoke of some assigned partitions; check follows its
// drain and final commit.
func (m *ownerModel) revoke() {
	if m.reb != nil {
		return
	}
	tps := m.subset(m.free(true))
	if len(tps) == 0 {
		return
	}
	m.stats.revokes++
	m.revokeTPs(tps)
}

func (m *ownerModel) revokeTPs(tps []topicPartition) {
	for _, tp := range tps {
		m.byTP[tp].revoking = true
	}
	m.logf("revoke %v", tps)
	m.reb = &omRebalance{tps: tps, reply: m.h.revoke(tps...)}
}

// lose drops some assigned partitions without a commit. A periodic commit
// held in the client lands first, or is refused as a broker refuses a
// commit of a generation that has ended.
func (m *ownerModel) lose() {
	if m.reb != nil {
		return
	}
	tps := m.subset(m.free(true))
	if len(tps) == 0 {
		return
	}
	m.stats.losses++
	for _, tp := range tps {
		m.lostStep[tp] = m.step
	}
	m.settleHeldCommit(tps, "the loss")
	m.logf("lose %v", tps)
	r := revokeReq{tps: tps, lost: true, reply: make(chan commitSet, 1)}
	m.h.o.inbox.revokeCh <- r
	<-r.reply
	for _, tp := range tps {
		m.byTP[tp].assigned = false
	}
}

// settleHeldCommit ends a periodic commit held in the client when the
// partitions tps leave this member (a loss, or a revoke whose callback
// commits nothing, so kgo does not wait for it): the commit lands first, or
// is refused for tps as a broker refuses a commit of a generation that has
// ended (ILLEGAL_GENERATION; STALE_MEMBER_EPOCH under KIP-848). It never
// lands after the partitions' next assignment has read the group's offsets:
// the coordinator orders the commit and the rebalance.
func (m *ownerModel) settleHeldCommit(tps []topicPartition, why string) {
	var committing bool
	m.state(func(o *owner) { committing = o.commits.committing })
	m.h.cl.mu.Lock()
	block := m.h.cl.block
	m.h.cl.mu.Unlock()
	if committing && block != nil {
		refuse := m.rng.IntN(2) == 0
		saved := map[topicPartition]int16{}
		m.h.cl.mu.Lock()
		if refuse {
			for _, tp := range tps {
				if c, ok := m.h.cl.codes[tp]; ok {
					saved[tp] = c
				}
				m.h.cl.codes[tp] = kerr.IllegalGeneration.Code
			}
		}
		close(block)
		m.h.cl.block = nil
		m.h.cl.mu.Unlock()
		synctest.Wait()
		m.h.cl.mu.Lock()
		for _, tp := range tps {
			delete(m.h.cl.codes, tp)
			if c, ok := saved[tp]; ok {
				m.h.cl.codes[tp] = c
			}
		}
		m.h.cl.mu.Unlock()
		m.logf("commits released before %s (refused for %v: %v)", why, tps, refuse)
		m.check()
	}
}

// reassign assigns some partitions this member does not hold, with the
// last commit the broker accepted.
func (m *ownerModel) reassign() {
	if m.reb != nil {
		return
	}
	if tps := m.subset(m.free(false)); len(tps) > 0 {
		m.assign(tps)
	}
}

func (m *ownerModel) assign(tps []topicPartition) {
	m.stats.assigns++
	m.h.assign(tps...)
	commits := map[topicPartition]fetchedCommit{}
	var words []string
	for _, tp := range tps {
		p := m.byTP[tp]
		p.assigned = true
		fc := fetchedCommit{offset: -1, leaderEpoch: -1}
		p.cur = omCursor{off: p.log.start, epoch: -1}
		p.covered = nil
		if c, ok := p.lastCommit(); ok {
			fc = fetchedCommit{offset: c.eo.Offset, leaderEpoch: c.eo.Epoch, meta: c.meta}
			p.cur = omCursor{off: c.eo.Offset, epoch: c.eo.Epoch}
			p.covered = c.covered // invariant 7
		}
		commits[tp] = fc
		words = append(words, fmt.Sprintf("%d@%d/e%d %q", tp.partition, fc.offset, fc.leaderEpoch, fc.meta))
	}
	m.h.fetched(commits)
	m.logf("assign %s", strings.Join(words, ", "))
	// An assignment's first poll carries an error now and then (a leader
	// moving, a topic's metadata not there yet), before any record that
	// its commit's delivered ranges cover.
	for _, tp := range tps {
		if m.rng.IntN(4) == 0 {
			m.errorNext(m.byTP[tp])
		}
	}
}

// check takes what the owner did in the last step to the model, and checks
// the invariants.
func (m *ownerModel) check() {
	synctest.Wait()
	m.takeLetters()
	m.takeRewinds()
	m.takeCommits()
	if m.reb != nil && m.reb.done == nil {
		select {
		case final := <-m.reb.reply:
			m.logf("revoke drained: final commit %v", final.offsets)
			// kgo sends a revoke's final commit after the commit in
			// flight; with none, the rebalance goes on without it.
			m.h.cl.mu.Lock()
			overtakes := m.h.cl.blockAsync
			m.h.cl.mu.Unlock()
			if len(final.offsets) == 0 || overtakes {
				m.settleHeldCommit(m.reb.tps, "the revoke")
			}
			done := make(chan error, 1)
			go func() { done <- m.h.o.finalCommit(m.ctx, final, "revoke") }()
			m.reb.done = done
			synctest.Wait()
			m.takeCommits()
		default:
		}
	}
	if m.reb != nil && m.reb.done != nil {
		select {
		case err := <-m.reb.done:
			for _, tp := range m.reb.tps {
				p := m.byTP[tp]
				p.assigned, p.revoking = false, false
			}
			m.logf("revoke done (%v)", err)
			m.reb = nil
		default:
		}
	}
	for _, p := range m.parts {
		if c, ok := p.lastCommit(); ok {
			m.checkCommit(p, c, "the last commit")
		}
		lost := m.g.Get(MetricLostRecords, "t", p.tp.partition)
		if lost != p.lostSeen {
			m.logf("  lost counter of %v: %d -> %d (removed at or above the commit: %d)", p.tp, p.lostSeen, lost, p.removedN)
			p.lostSeen = lost
		}
		if lost > p.removedN {
			m.soft("4", "%v: %d offsets reported lost, but only %d removed at or above the commit", p.tp, lost, p.removedN)
		}
	}
	limit := (pollLowWater-1)*m.conf.batchMax + m.conf.maxFetch
	m.state(func(o *owner) {
		m.checkReportAge(o)
		for tp, p := range o.parts {
			n := 0
			for _, rb := range p.queue.ready {
				n += len(rb.records)
			}
			if n > limit {
				m.soft("5", "%v holds %d records in %d ready batches, more than (pollLowWater-1)*batch_max_records + one fetch = %d", tp, n, len(p.queue.ready), limit)
			}
		}
	})
}

// checkReportAge checks invariant 10 on every live epoch of o; called while
// the bubble is idle (state).
func (m *ownerModel) checkReportAge(o *owner) {
	now, slack := time.Now(), o.gaugeEvery()
	for tp, p := range o.parts {
		if l := p.loss.carried; l.Count > 0 && (m.conf.reportFor == 0 || now.Sub(l.Since) >= m.conf.reportFor+slack) {
			m.fail("10", "%v carries a loss report (offsets %d-%d, %s) made %v ago, lost_records_report_for %v", tp, l.First, l.Last, l.Reason, now.Sub(l.Since), m.conf.reportFor)
		}
		if d, reportFor := p.att.report, m.conf.deadLetterReportFor(); d.Count > 0 && now.Sub(d.Since) >= reportFor+slack {
			m.fail("10", "%v carries a dead-letter report (offsets %d-%d) made %v ago, dead_letter.report_for %v", tp, d.First, d.Last, now.Sub(d.Since), reportFor)
		}
	}
}

// takeRewinds moves kgo's positions as the owner's SetOffsets calls ask.
func (m *ownerModel) takeRewinds() {
	m.h.cl.mu.Lock()
	rewinds := slices.Clone(m.h.cl.rewinds[m.seenRewinds:])
	m.seenRewinds = len(m.h.cl.rewinds)
	m.h.cl.mu.Unlock()
	for _, set := range rewinds {
		for topic, ps := range set {
			for part, eo := range ps {
				tp := topicPartition{topic, part}
				p := m.byTP[tp]
				if p == nil || !p.assigned || p.revoking {
					m.fail("of rewinds", "SetOffsets(%v, %+v) of a partition this member does not consume", tp, eo)
				}
				p.cur = omCursor{off: eo.Offset, epoch: eo.Epoch}
				m.logf("  rewind %v to %d/e%d", tp, eo.Offset, eo.Epoch)
			}
		}
	}
}

// takeCommits checks the commits the broker accepted since the last call,
// in the order it accepted them (invariants 1 and 2).
func (m *ownerModel) takeCommits() {
	m.h.cl.mu.Lock()
	news := slices.Clone(m.accepted[m.seenAccepted:])
	m.seenAccepted = len(m.accepted)
	m.h.cl.mu.Unlock()
	for _, c := range news {
		p := m.byTP[c.tp]
		m.logf("  committed %v %d/e%d %q", c.tp, c.eo.Offset, c.eo.Epoch, c.meta)
		if prev, ok := p.lastCommit(); ok && c.eo.Offset < prev.eo.Offset {
			// The allowance of the truncation with the highest divergence
			// point at or below the commit, among those this commit ends
			// (below) if any: a commit under leader epoch e has seen the
			// log of every truncation to e or before, so it is the
			// commit back they allow (seed 304362: truncations at 2/e2
			// and 4/e3, commits 7/e0, 5/e2, 4/e2; 5/e2 is the one the
			// truncation at 2 allows, 4/e2 the one at 4 allows).
			use := -1
			for _, ends := range []bool{true, false} {
				for i, a := range p.allow {
					if a.from <= c.eo.Offset && (c.eo.Epoch >= a.epoch) == ends && (use < 0 || a.from > p.allow[use].from) {
						use = i
					}
				}
				if use >= 0 {
					break
				}
			}
			switch {
			case len(p.allow) == 0:
				m.fail("2", "%v: commit went back from %d to %d with no truncation below it", c.tp, prev.eo.Offset, c.eo.Offset)
			case use < 0:
				m.fail("2", "%v: commit went back from %d to %d, below every divergence point (%v)", c.tp, prev.eo.Offset, c.eo.Offset, p.allow)
			}
			p.allow = slices.Delete(p.allow, use, use+1)
			m.stats.backCommits++
		}
		p.allow = slices.DeleteFunc(p.allow, func(a omAllowance) bool { return c.eo.Epoch >= a.epoch })
		c.covered = m.coveredBy(p, c)
		p.commits = append(p.commits, c)
		m.checkCommit(p, c, "an accepted commit")
	}
}

// coveredBy returns the records of p's log, as it is when c is accepted,
// that c's delivered ranges cover and that were delivered (invariant 7):
// ranges written from a log a truncation has rewritten since describe
// other records, and a later record at their offsets is not theirs.
//
// Ranges written from a log before a truncation rewrote it may be dropped
// whole (see truncate), also when the commit is accepted after the
// truncation: planned before it and held in the client, or planned after
// it by an owner that had not fetched the new log yet (a revoke's final
// commit). Such ranges reach past the divergence point D of a truncation
// to leader epoch E, and their l= is below E: ranges the owner wrote from
// the new log past D end with a record of the new log, of epoch E or
// newer. Those cover nothing, as a commit accepted before the truncation.
func (m *ownerModel) coveredBy(p *omPart, c omCommit) map[string]bool {
	cm, err := commitmeta.DecodeCommit(c.meta)
	if err != nil || cm.Base != c.eo.Offset || len(cm.Delivered) == 0 {
		return nil
	}
	end := cm.Delivered[len(cm.Delivered)-1].To
	for _, tr := range p.truncs {
		if tr.from < end && cm.LastEpoch < tr.epoch {
			return nil
		}
	}
	out := map[string]bool{}
	for _, r := range cm.Delivered {
		for off := r.From; off < r.To; off++ {
			if rec := p.log.recs[off]; rec != nil && !rec.control && m.liveAcked[rec.id] {
				out[rec.id] = true
			}
		}
	}
	return out
}

// checkCommit holds a commit to invariant 1.
func (m *ownerModel) checkCommit(p *omPart, c omCommit, what string) {
	resume := p.log.resumeAt(c.eo)
	first := p.log.end
	for off := p.log.start; off < p.log.end; off++ {
		if r := p.log.recs[off]; r != nil && !r.control && !m.liveAcked[r.id] {
			first = off
			break
		}
	}
	if resume > first {
		r := p.log.recs[first]
		desc := "the log end"
		if r != nil {
			desc = fmt.Sprintf("record %s (leader epoch %d), not delivered", r.id, r.epoch)
		}
		m.fail("1", "%v: %s %d/e%d resumes at %d, past offset %d: %s (log [%d,%d))",
			p.tp, what, c.eo.Offset, c.eo.Epoch, resume, first, desc, p.log.start, p.log.end)
	}
}

// heal ends a schedule: the sink and the broker heal, every partition is
// assigned, and the run goes on until every partition's commit is its log
// end (invariant 6), then checks invariants 6 and 4.
func (m *ownerModel) heal() {
	m.healing = true
	m.logf("heal")
	if m.writer != nil {
		m.writer.setDown(false)
	}
	m.h.cl.mu.Lock()
	clear(m.h.cl.codes)
	if m.h.cl.block != nil {
		close(m.h.cl.block)
		m.h.cl.block = nil
	}
	m.h.cl.mu.Unlock()
	m.check()
	for _, p := range m.parts {
		m.produce(p, 1+m.rng.IntN(3))
	}
	m.publishOffsets()
	quiet := 0
	for round := 0; ; round++ {
		if round > 400 {
			var at []string
			for _, p := range m.parts {
				c, _ := p.lastCommit()
				at = append(at, fmt.Sprintf("%v committed %d, log [%d,%d)", p.tp, c.eo.Offset, p.log.start, p.log.end))
			}
			m.fail("6", "no quiescence after %d rounds: %s", round, strings.Join(at, "; "))
		}
		m.step++
		progress := len(m.outstanding) > 0
		for len(m.outstanding) > 0 {
			m.ack(true)
		}
		m.check()
		if m.reb == nil {
			if ps := m.free(false); len(ps) > 0 {
				var tps []topicPartition
				for _, p := range ps {
					tps = append(tps, p.tp)
				}
				m.assign(tps)
				progress = true
			}
		}
		if m.reb == nil && m.conf.stallReplay == 0 {
			var stalled []topicPartition
			m.state(func(o *owner) {
				for tp, p := range o.parts {
					if p.led.headFailed() {
						stalled = append(stalled, tp)
					}
				}
			})
			if len(stalled) > 0 {
				slices.SortFunc(stalled, func(a, b topicPartition) int { return int(a.partition - b.partition) })
				m.revokeTPs(stalled) // a reassignment replays them (stall_replay_after: 0s)
				progress = true
			}
		}
		m.poll()
		m.check()
		for {
			b, ok := m.h.tryRead()
			if !ok {
				break
			}
			progress = true
			m.handOut(b)
		}
		m.check()
		if m.healed() {
			break
		}
		if progress {
			quiet = 0
		} else {
			quiet++
		}
		d := time.Second
		if quiet > 3 {
			d = max(time.Second, m.conf.stallReplay, m.conf.drain)
		}
		m.sleep(d)
		m.check()
	}
	for _, p := range m.parts {
		for off := p.log.start; off < p.log.end; off++ {
			if r := p.log.recs[off]; r != nil && !r.control && !m.liveAcked[r.id] {
				m.fail("6", "%v offset %d (record %s) was never delivered, yet the commit is at the log end %d", p.tp, off, r.id, p.log.end)
			}
		}
		lost := m.g.Get(MetricLostRecords, "t", p.tp.partition)
		var never int64
		for _, r := range p.removedM {
			if !m.anyAcked[r.id] && !p.claimedDelivered(r.off) {
				never++
			}
		}
		if lost < never {
			m.fail("4", "%v: %d offsets reported lost, but %d deleted records were never acknowledged", p.tp, lost, never)
		}
		m.stats.lost += lost
		m.stats.lostLow += never
		m.stats.lostHigh += p.removedN
		if lost == never && lost == p.removedN {
			m.stats.exactLoss++
		}
		m.stats.truncated += m.g.Get(MetricTruncated, "t", p.tp.partition)
		m.stats.replays += m.g.Get(MetricStallReplays, "t", p.tp.partition)
	}
}

// omKeyOut names a record handed out: its partition and offset.
type omKeyOut struct {
	tp  topicPartition
	off int64
}

// checkKeyOrder checks invariant 9 on a hand-out, under ordering: key: none
// of its records has an earlier record of its key handed out in another
// batch of the same epoch and not delivered (acknowledged or
// dead-lettered), whether that batch is in the pipeline or waits for a
// retry; nor a record of its key held by the sink in a hand-out of an
// epoch that ended without a drain that could have timed out, nor a loss.
// Then it notes recs, the records of this hand-out of b, as out.
func (m *ownerModel) checkKeyOrder(b *Batch, recs []*kgo.Record) {
	if m.conf.keys == 0 {
		return
	}
	for _, r := range recs {
		if r.Key == nil {
			continue
		}
		for ko, ob := range m.keyOut {
			if ob == b || ob.part != b.part || ko.tp != b.part.tp || ko.off >= r.Offset {
				continue
			}
			for _, or := range ob.raw.records {
				if or.Offset == ko.off && string(or.Key) == string(r.Key) {
					m.fail("9", "%v handed out offset %d (key %s) while offset %d of its key is out in another batch, not delivered", b.part.tp, r.Offset, r.Key, ko.off)
				}
			}
		}
	}
	// Across epochs: an epoch ends in a successor (a replay in place, a
	// truncation) or a reassignment only once its hand-outs are drained,
	// unless drain_timeout passed or the partition was lost (no drain).
	// So a record of a key still held by the sink in a hand-out of an
	// ended epoch that went out less than drain_timeout ago, with no loss
	// since, holds its key: at any offset, as the new epoch may start
	// below it.
	now := time.Now()
	for _, ho := range m.outstanding {
		ob := ho.b
		if ob.part == b.part || ob.part.tp != b.part.tp || now.Sub(ho.at) >= m.conf.drain || m.lostStep[ob.part.tp] > ho.step {
			continue
		}
		for _, or := range ho.recs {
			for _, r := range recs {
				if r.Key != nil && or.Key != nil && string(or.Key) == string(r.Key) {
					m.fail("9", "%v handed out offset %d (key %s) while offset %d of its key is out in a hand-out of an ended epoch, handed out %v ago (drain_timeout %v)", b.part.tp, r.Offset, r.Key, or.Offset, now.Sub(ho.at), m.conf.drain)
				}
			}
		}
	}
	for _, r := range recs {
		m.keyOut[omKeyOut{b.part.tp, r.Offset}] = b
	}
}

// deadLetterOutage takes the dead-letter topic down, or brings it back.
func (m *ownerModel) deadLetterOutage() {
	if m.writer == nil {
		return
	}
	down := m.rng.IntN(2) == 0
	m.logf("dead-letter topic down: %v", down)
	m.writer.setDown(down)
}

// takeLetters counts the records written to the dead-letter topic as
// delivered (they reached it), and checks each letter (invariant 8): its
// records were fetched and are data, and it was tried at least once and at
// most max_attempts times.
func (m *ownerModel) takeLetters() {
	if m.writer == nil {
		return
	}
	for _, l := range m.writer.take() {
		m.stats.deadLettered += len(l.Records)
		m.logf("dead-lettered %s after %d attempt(s)", omSpan(l.Records), l.Attempts)
		if l.Attempts < 1 || l.Attempts > m.conf.deadLetter {
			m.fail("8", "dead-lettered %s after %d attempt(s), max_attempts %d", omSpan(l.Records), l.Attempts, m.conf.deadLetter)
		}
		for _, r := range l.Records {
			if !m.sent[r] || r.Attrs.IsControl() {
				m.fail("8", "dead-lettered offset %d, not a fetched data record", r.Offset)
			}
			if m.liveDone[r] {
				m.fail("8", "dead-lettered offset %d (record %s), which the sink accepted as fetched", r.Offset, r.Value)
			}
		}
		m.delivered(l.Records, true)
	}
}

// healed reports whether every partition is assigned, nothing is held by
// the sink or a rebalance, and kgo would resume every partition from its
// last commit at the log end.
func (m *ownerModel) healed() bool {
	if m.reb != nil || len(m.outstanding) > 0 {
		return false
	}
	for _, p := range m.parts {
		c, ok := p.lastCommit()
		if !p.assigned || !ok || p.log.resumeAt(c.eo) != p.log.end {
			return false
		}
	}
	return true
}
