package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// The commit metadata on the real broker: every commit carries, per
// partition, the ranges above the committed offset that were delivered
// (internal/commitmeta), and whoever is assigned the partition next skips
// them.

// maxMetaBytes is commit_metadata_max_bytes's default. The test broker keeps
// offset.metadata.max.bytes at its default, 4096.
const maxMetaBytes = 4000

// brokerMetaLimit is the broker's offset.metadata.max.bytes.
const brokerMetaLimit = 4096

// commitState is one partition's commit as the broker holds it: the offset,
// its metadata, and the metadata decoded (err is Decode's error).
type commitState struct {
	offset int64
	meta   string
	m      commitmeta.Meta
	err    error
}

// ranges returns the delivered ranges a restart skips: those of metadata
// that decodes and whose base is the committed offset (the input ignores any
// other), nil otherwise.
func (c commitState) ranges() []commitmeta.Range {
	if c.err != nil || c.m.Base != c.offset {
		return nil
	}
	return c.m.Delivered
}

func (c commitState) String() string {
	return fmt.Sprintf("%d %q", c.offset, c.meta)
}

// commitStates returns the group's commit of each partition of topic, with
// its metadata; a partition with no commit is absent.
func (k *kafka) commitStates(ctx context.Context, group, topic string) (map[int32]commitState, error) {
	resp, err := k.adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]commitState{}
	for p, o := range resp[topic] {
		if o.Err != nil {
			return nil, o.Err
		}
		if o.At < 0 {
			continue
		}
		c := commitState{offset: o.At, meta: o.Metadata}
		c.m, c.err = commitmeta.Decode(o.Metadata)
		out[p] = c
	}
	return out, nil
}

// settledCommits waits until the group's commits and their metadata are the
// same in fetches at least 300ms apart (after a kill, a commit the dead
// process sent may still land) and returns them.
func (k *kafka) settledCommits(t *testing.T, group, topic string) map[int32]commitState {
	t.Helper()
	const settle = 300 * time.Millisecond
	var last map[int32]commitState
	var since time.Time
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := k.commitStates(ctx, group, topic)
		if !assert.NoError(c, err, "fetch offsets") {
			return
		}
		if last == nil || !sameCommits(got, last) {
			last, since = got, time.Now()
		}
		assert.GreaterOrEqual(c, time.Since(since), settle, "commits unchanged for")
	}, 30*time.Second, 100*time.Millisecond, "the commits of %s to settle", group)
	return last
}

func sameCommits(a, b map[int32]commitState) bool {
	if len(a) != len(b) {
		return false
	}
	for p, c := range a {
		if d, ok := b[p]; !ok || d.offset != c.offset || d.meta != c.meta {
			return false
		}
	}
	return true
}

// covers reports whether one of ranges holds all of [from, to). The ranges
// are sorted, disjoint and never adjacent, so a run of offsets they cover
// lies within one of them.
func covers(ranges []commitmeta.Range, from, to int64) bool {
	i := sort.Search(len(ranges), func(i int) bool { return ranges[i].To > from })
	return i < len(ranges) && ranges[i].From <= from && ranges[i].To >= to
}

// shrinks says why a restart from later could deliver a record that a
// restart from earlier would not, or "" when it cannot: later's offset is not
// below earlier's, and every part of earlier's ranges at or above later's
// offset is inside later's ranges. Within one epoch, and with no range ever
// cut for want of room, every commit shrinks the replay of the one before:
// the watermark only moves forward, and a delivered batch stays delivered.
func shrinks(earlier, later commitState) string {
	if later.offset < earlier.offset {
		return fmt.Sprintf("offset went back from %d to %d", earlier.offset, later.offset)
	}
	for _, r := range earlier.ranges() {
		from := max(r.From, later.offset)
		if from < r.To && !covers(later.ranges(), from, r.To) {
			return fmt.Sprintf("range [%d,%d) of %s is no longer covered by %s", r.From, r.To, earlier, later)
		}
	}
	return ""
}

// replayOf counts, of the records sn shows delivered at or above c's
// offset, all of them (exposure: what a restart from the offset alone
// delivers again) and those outside c's ranges (replay: what a restart that
// skips the ranges delivers again).
func replayOf(sn snapshot, p int32, c commitState) (exposure, replay int64) {
	m := commitmeta.Meta{Delivered: c.ranges()}
	for o := c.offset; o < sn.len(p); o++ {
		if sn.count(p, o) == 0 {
			continue
		}
		exposure++
		if !m.Covered(o) {
			replay++
		}
	}
	return exposure, replay
}

// ---------------------------------------------------------------------------
// Metadata watcher.

// metaWatch polls a group's commits with their metadata while a test runs,
// and checks every distinct commit it sees:
//
//   - the metadata is at most maxMetaBytes long (the broker would refuse
//     more than brokerMetaLimit);
//   - with commit_metadata on, it decodes and its base is the committed
//     offset (the input's fallback after a refusal commits none);
//   - every delivered range it carries was acknowledged by the sink when the
//     commit was seen: a range over a record that was never delivered would
//     make a restart skip, that is lose, it. (The sink records a record
//     before it answers 200, so this check, made after the fetch, is sound.)
type metaWatch struct {
	k        *kafka
	group    string
	topic    string
	sink     *sink
	withMeta bool
	cancel   context.CancelFunc
	done     chan struct{}

	mu         sync.Mutex
	last       map[int32]commitState
	history    map[int32][]commitState // distinct commits in the order seen
	maxLen     map[int32]int
	maxRanges  map[int32]int
	polls      int
	errs       int
	lastErr    error
	violations []string
	checked    bool
	// onSample, when set, is given every successful fetch's commits, once
	// the fetch has returned (under mu): a commit seen there covers records
	// the sink recorded before that moment.
	onSample func(map[int32]commitState)
}

func (k *kafka) watchMeta(group, topic string, s *sink, withMeta bool, every time.Duration) *metaWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &metaWatch{k: k, group: group, topic: topic, sink: s, withMeta: withMeta, cancel: cancel, done: make(chan struct{}),
		last: map[int32]commitState{}, history: map[int32][]commitState{}, maxLen: map[int32]int{}, maxRanges: map[int32]int{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			w.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	k.t.Cleanup(func() {
		w.stop()
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.checked {
			w.report(k.t)
		}
	})
	return w
}

func (w *metaWatch) sample(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	got, err := w.k.commitStates(fctx, w.group, w.topic)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, kerr.GroupIDNotFound) {
			w.errs++
			w.lastErr = err
		}
		return
	}
	w.polls++
	for p, c := range got {
		if prev, ok := w.last[p]; ok && prev.offset == c.offset && prev.meta == c.meta {
			continue
		}
		w.last[p] = c
		w.history[p] = append(w.history[p], c)
		w.maxLen[p] = max(w.maxLen[p], len(c.meta))
		w.maxRanges[p] = max(w.maxRanges[p], len(c.ranges()))
		bad := func(format string, args ...any) {
			w.violations = append(w.violations, fmt.Sprintf("partition %d: ", p)+fmt.Sprintf(format, args...))
		}
		if len(c.meta) > maxMetaBytes {
			bad("commit %d carries %d bytes of metadata, more than %d", c.offset, len(c.meta), maxMetaBytes)
		}
		if !w.withMeta {
			continue
		}
		switch {
		case c.err != nil:
			bad("the metadata %q of commit %d does not decode: %v", c.meta, c.offset, c.err)
		case c.m.Base != c.offset:
			bad("the metadata of commit %d has base %d: %q", c.offset, c.m.Base, c.meta)
		}
		if w.sink == nil {
			continue
		}
		for _, r := range c.ranges() {
			if miss := w.sink.missing(p, r.From, r.To); miss >= 0 {
				bad("commit %d claims [%d,%d) delivered, but the sink never acknowledged offset %d", c.offset, r.From, r.To, miss)
				break
			}
		}
	}
	if w.onSample != nil {
		w.onSample(got)
	}
}

// commits returns the last commit seen of each partition.
func (w *metaWatch) commits() map[int32]commitState {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int32]commitState, len(w.last))
	for p, c := range w.last {
		out[p] = c
	}
	return out
}

// seen returns how many distinct commits of each partition were seen so
// far: a mark to tell one run's commits from the next one's.
func (w *metaWatch) seen() map[int32]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int32]int{}
	for p, h := range w.history {
		out[p] = len(h)
	}
	return out
}

// commitsOf returns the distinct commits of partition p seen, from index
// from (a mark of seen) to index to (-1: to the last).
func (w *metaWatch) commitsOf(p int32, from, to int) []commitState {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.history[p]
	if to < 0 || to > len(h) {
		to = len(h)
	}
	if from > to {
		return nil
	}
	return append([]commitState(nil), h[from:to]...)
}

func (w *metaWatch) stop() {
	w.cancel()
	<-w.done
}

// check stops the watcher, takes one last sample and reports violations.
func (w *metaWatch) check(t *testing.T) {
	t.Helper()
	w.stop()
	w.sample(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked = true
	if w.polls < 3 {
		t.Errorf("metadata watch of %s took only %d polls: the check proves nothing", w.group, w.polls)
	}
	w.report(t)
}

// report logs the watch's figures and fails t on violations; w.mu is held.
func (w *metaWatch) report(t *testing.T) {
	t.Helper()
	n := 0
	for _, h := range w.history {
		n += len(h)
	}
	t.Logf("metadata watch of %s: %d polls, %d distinct commits, longest metadata %d bytes, most ranges %d, %d fetch errors (last: %v)",
		w.group, w.polls, n, maxOf(w.maxLen), maxOf(w.maxRanges), w.errs, w.lastErr)
	for i, v := range w.violations {
		if i == 20 {
			t.Errorf("... and %d more metadata violations", len(w.violations)-20)
			break
		}
		t.Errorf("group %s: %s", w.group, v)
	}
}

func maxOf(m map[int32]int) int {
	n := 0
	for _, v := range m {
		n = max(n, v)
	}
	return n
}

// skippedInLog sums what the input's log says it skipped on assignment
// ("<topic>/<p>: skipped N record(s) in M range(s)"), by partition.
func skippedInLog(p *proc, topic string) map[int32]int64 {
	re := regexp.MustCompile(regexp.QuoteMeta(topic) + `/(\d+): skipped (\d+) record\(s\) in (\d+) range\(s\)`)
	out := map[int32]int64{}
	for _, l := range p.grep(topic, "skipped") {
		if m := re.FindStringSubmatch(l.text); m != nil {
			pt, _ := strconv.Atoi(m[1])
			n, _ := strconv.ParseInt(m[2], 10, 64)
			out[int32(pt)] += n
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Slow head, then kill -9.

// TestSlowHeadKill: the sink holds the first batch of each partition while
// the later ones are acknowledged, so no watermark moves; then SIGKILL at a
// random moment and a restart. Run with commit_metadata on and off, with the
// same kill point, side by side.
//
// The duplicates are the records run 1 delivered that came again, each
// counted once; the exposure is the records run 1 delivered at or above the
// committed offsets (all of them here: nothing can be committed past a held
// head). A group session lost on a loaded machine can make either run
// replay within itself; that is not the restart's, and is only reported
// (all_duplicates).
//
// With commit_metadata off, no commit can happen (every watermark is stuck
// at offset 0), so the restart delivers again every record run 1 delivered:
// the duplicates equal the exposure exactly.
//
// With commit_metadata on, the restart resumes at the committed offset and
// skips the committed ranges, so it delivers again exactly the records run 1
// delivered that are at or above the offset and outside the ranges of the
// commit the broker holds after the kill. Which commit that is cannot be
// told for sure: the last poll before the kill is 0-100ms old, a commit may
// land between it and the kill, and one in flight at the kill may land after
// it. But every later commit of the same epoch only shrinks the replay (see
// shrinks: the offset only moves forward, a delivered batch stays delivered,
// and no range is ever cut for want of room here: a partition has at most
// max_in_flight+1 undelivered batches, so at most 34 ranges of at most 12
// bytes each, far below commit_metadata_max_bytes; the watcher checks it).
// So the replay computed from any commit polled, before or after the kill,
// with the records run 1 delivered (the sink's complete count, taken once
// every request of the dead process, held ones included, has finished) is
// an upper bound of the duplicates, with nothing left to timing. The test
// asserts
//
//	duplicates <= bound (from the settled commits after the kill)
//	           <= bound_before_kill (from the last poll before the kill)
//	           <  exposure (every partition had committed ranges before the kill)
//
// "One commit_period of progress" needs no term of its own: the records
// delivered since the last commit are in the sink's count and outside the
// ranges, so both bounds include them, as they include the held batches and
// the batches in flight at the kill.
func TestSlowHeadKill(t *testing.T) {
	// One kill point for both runs, so their figures compare.
	frac := 0.25 + 0.45*rand.Float64()
	for _, withMeta := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit_metadata=%v", withMeta), func(t *testing.T) { testSlowHeadKill(t, withMeta, frac) })
	}
}

func testSlowHeadKill(t *testing.T, withMeta bool, frac float64) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart, batchMax = 8, 20000, 100
	const total = parts * perPart
	topic, group := "wm-slowhead-"+suffix(), "wm-slowhead-g-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)

	s := newSink(t, topic, parts, 0, 10*time.Millisecond)
	s.setRate(10000)
	s.setHold(func(recs []rec) bool { return recs[0].O == 0 }) // the head batch of each partition
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	mw := k.watchMeta(group, topic, s, withMeta, 100*time.Millisecond)
	addr := metricsAddr(t)
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "run1",
		// max_pending_batches above a partition's 200 batches: with the
		// head held, nothing pauses and the stream flows until the kill.
		input: fmt.Sprintf("commit_period: 500ms\nbatch_max_records: %d\nmax_pending_batches: 256\nsession_timeout: 6s\nheartbeat_interval: 1s\ncommit_metadata: %v\n",
			batchMax, withMeta)}
	// The held heads must not time out: this is a slow sink, not a failing one.
	yaml := replaceYAML(t, conf.yaml(), "    timeout: 20s\n", "    timeout: 5m\n")
	p := startProc(t, "run1", withMetrics(t, yaml, addr))

	s.waitHeld(t, parts, 2*time.Minute)
	target := int64(frac * float64(total-parts*batchMax))
	s.waitTotal(t, target, 3*time.Minute)
	if withMeta {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cs := mw.commits()
			for pt := int32(0); pt < parts; pt++ {
				assert.NotEmptyf(c, cs[pt].ranges(), "partition %d: delivered ranges committed (commit %s)", pt, cs[pt])
			}
		}, time.Minute, 50*time.Millisecond, "every partition to commit delivered ranges")
	}
	m := mustScrape(t, addr)
	gaugeExposure := m.total("kafka_watermark_replay_exposure_records", topic)
	if n := m.total("kafka_watermark_commit_metadata_truncated_total", topic); n != 0 {
		t.Errorf("%d ranges were cut for want of room: the bound below assumes none", n)
	}
	before := mw.commits() // the last poll before the kill
	marks := mw.seen()
	p.kill()
	killedAt, heldRecords := s.total(), s.heldRecs()
	t.Logf("killed at %.0f%% of the records (%d acknowledged), %d heads held", frac*100, killedAt, s.held())

	// The held heads and the requests the dead process left behind finish
	// and count as delivered; a commit it sent may still land.
	s.releaseHeld()
	s.waitIdle(t, 30*time.Second)
	after := k.settledCommits(t, group, topic)
	d1 := s.snapshot()
	var exposure, bound, boundBefore, skipRecords int64
	for pt := int32(0); pt < parts; pt++ {
		c, ok := after[pt]
		if !ok {
			c = commitState{} // start_offset earliest: offset 0, no ranges
		}
		if !withMeta && ok {
			t.Errorf("partition %d committed %s with its head held and commit_metadata off", pt, c)
		}
		e, r := replayOf(d1, pt, c)
		exposure += e
		bound += r
		_, rb := replayOf(d1, pt, before[pt])
		boundBefore += rb
		for _, rg := range c.ranges() {
			skipRecords += rg.To - rg.From
		}
		for o := int64(0); o < c.offset; o++ {
			if d1.count(pt, o) == 0 {
				t.Errorf("partition %d: committed %d at the kill but offset %d was never delivered", pt, c.offset, o)
				break
			}
		}
		if withMeta {
			// Run 1's commits, up to the kill and the settled one.
			h := append(mw.commitsOf(pt, 0, marks[pt]), c)
			for i := 1; i < len(h); i++ {
				if why := shrinks(h[i-1], h[i]); why != "" {
					t.Errorf("partition %d: a commit of run 1 replays more than the one before: %s", pt, why)
					break
				}
			}
		}
	}
	t.Logf("at the kill: %d records delivered at or above the commits, %d of them outside the committed ranges (%d by the last poll before the kill); the ranges hold %d records; exposure gauge before the kill %d",
		exposure, bound, boundBefore, skipRecords, gaugeExposure)

	conf.instance = "run2"
	p2 := startProc(t, "run2", conf.yaml())
	k.waitCommitted(group, topic, end, 3*time.Minute)
	s.waitIdle(t, 10*time.Second)
	p2.stop(45 * time.Second)
	w.check(t)
	mw.check(t)

	final := s.snapshot()
	allDups := final.coverage(t, end)
	// The duplicates the restart made: records run 1 delivered that came
	// again, each counted once. (allDups also counts what a lost group
	// session of either run replays within the run, which a loaded machine
	// can cause and which is not the restart's.)
	var dups int64
	for pt, offs := range final.since(d1) {
		for o := range offs {
			if d1.count(pt, o) > 0 {
				dups++
			}
		}
	}
	for pt, offs := range final.since(d1) {
		c := after[pt]
		m := commitmeta.Meta{Delivered: c.ranges()}
		var below, inside []int64
		for o := range offs {
			if o < c.offset {
				below = append(below, o)
			} else if m.Covered(o) {
				inside = append(inside, o)
			}
		}
		if len(below) > 0 {
			t.Errorf("partition %d: %d offsets delivered again although below the commit %d", pt, len(below), c.offset)
		}
		if len(inside) > 0 {
			t.Errorf("partition %d: %d offsets delivered again although inside the committed ranges %q", pt, len(inside), c.meta)
		}
	}
	// Run 2's commits, from the settled one on: the skipped ranges stay in
	// them while the watermark moves up to and past them (passSkipped), so
	// each commit should shrink the replay of the one before as well. A
	// commit that does not loses no record (its ranges are checked against
	// the sink), only what a second crash would spare: noted, not failed.
	var dropping int
	if withMeta {
		for pt := int32(0); pt < parts; pt++ {
			h := mw.commitsOf(pt, marks[pt], -1)
			for i, c := range h { // from the settled commit, if seen after the mark
				if c.offset == after[pt].offset && c.meta == after[pt].meta {
					h = h[i+1:]
					break
				}
			}
			h = append([]commitState{after[pt]}, h...)
			for i := 1; i < len(h); i++ {
				if why := shrinks(h[i-1], h[i]); why != "" {
					dropping++
					t.Logf("note: partition %d: a commit of run 2 replays more than the one before: %s", pt, why)
					break
				}
			}
		}
	}
	skipped := sum(skippedInLog(p2, topic))
	t.Logf("%s; run 2 logged %d records skipped; %d records of run 1 came again, %d duplicate deliveries in all", s.stats(), skipped, dups, allDups)
	for _, pr := range []*proc{p, p2} {
		if ls := pr.grep("lost " + topic); len(ls) > 0 {
			t.Logf("note: %s lost its partitions (a group session lost on a loaded machine?): %s", pr.name, ls[0].text)
		}
	}
	if dups > exposure {
		t.Errorf("%d records of run 1 came again, more than the %d it delivered at or above the commits at the kill", dups, exposure)
	}
	if withMeta {
		if dups > bound {
			t.Errorf("%d records of run 1 came again, more than the %d it delivered outside the committed ranges", dups, bound)
		}
		if bound > boundBefore {
			t.Errorf("the settled commits replay %d records, more than the %d of the last commits polled before the kill", bound, boundBefore)
		}
		if bound >= exposure {
			t.Errorf("the committed ranges leave %d of the %d records delivered above the commits to replay: they skip nothing", bound, exposure)
		}
		if skipped != skipRecords {
			// Not a failure: a commit can land after the settle wait.
			t.Logf("note: run 2 skipped %d records, the settled ranges hold %d", skipped, skipRecords)
		}
	} else if dups != exposure {
		t.Errorf("%d records of run 1 came again with commit_metadata off, want the whole exposure %d", dups, exposure)
	}
	figure(t, "test=slow_head_kill commit_metadata=%v records=%d killed_at_pct=%.0f exposure=%d duplicates=%d all_duplicates=%d bound=%d bound_before_kill=%d held_records=%d gauge_exposure_before_kill=%d skipped=%d run2_partitions_dropping_ranges=%d",
		withMeta, total, frac*100, exposure, dups, allDups, bound, boundBefore, heldRecords, gaugeExposure, skipped, dropping)
}

// ---------------------------------------------------------------------------
// Fragmented: the metadata at its limit.

// TestFragmentedMetadata: every other batch is slow (held until the test
// lets it go), over 8 partitions with batches of 10 records, so each
// partition has some 700 delivered ranges above its stuck watermark, more
// than 4000 bytes hold. The input cuts the ranges to fit (and counts the
// cut), the broker never refuses a commit (no OFFSET_METADATA_TOO_LARGE: no
// "refused" warning, no commit error, every commit seen carries metadata of
// at most 4000 bytes that decodes), the exposure gauge shows what the cut
// ranges cost, and once the slow batches are acknowledged everything commits
// to the log end with nothing lost and nothing delivered twice.
func TestFragmentedMetadata(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart, batchMax = 8, 14000, 10
	topic, group := "wm-frag-"+suffix(), "wm-frag-g-"+suffix()
	k.createTopic(topic, parts)
	checkBrokerMetaLimit(t, k, topic)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)

	slow := func(first int64) bool { return (first/batchMax)%2 == 0 }
	s := newSink(t, topic, parts, 0, 5*time.Millisecond)
	s.setHold(func(recs []rec) bool { return slow(recs[0].O) })
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	mw := k.watchMeta(group, topic, s, true, 100*time.Millisecond)
	addr := metricsAddr(t)
	// Every slow batch holds one request: max_in_flight above all of them
	// (half the batches), max_pending_batches above a partition's batches.
	slowBatches := parts * perPart / batchMax / 2
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), inFlight: slowBatches + 2000,
		input: fmt.Sprintf("commit_period: 200ms\nbatch_max_records: %d\nmax_pending_batches: 2048\n", batchMax)}
	yaml := replaceYAML(t, conf.yaml(), "    timeout: 20s\n", "    timeout: 5m\n")
	start := time.Now()
	p := startProc(t, "main", withMetrics(t, yaml, addr))

	// Every partition's metadata at its limit, the cut counted.
	var m metricSet
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ms, err := scrapeMetrics(context.Background(), addr)
		if !assert.NoError(c, err, "scrape") {
			return
		}
		m = ms
		cut := m.byPartition("kafka_watermark_commit_metadata_truncated_total", topic)
		cs := mw.commits()
		for pt := int32(0); pt < parts; pt++ {
			assert.Positivef(c, cut[pt], "partition %d: ranges cut", pt)
			assert.Greaterf(c, len(cs[pt].meta), maxMetaBytes-32, "partition %d: metadata bytes", pt)
		}
	}, 3*time.Minute, 200*time.Millisecond, "every partition's metadata to reach %d bytes, ranges cut", maxMetaBytes)
	filled := time.Since(start)
	t.Logf("metadata at its limit after %v: %d requests held", filled.Round(time.Millisecond), s.held())

	// Once nothing moves but the held batches, the exposure gauge is what a
	// restart from the committed offset and ranges would deliver: every
	// record above the offset the kept ranges leave out.
	var cutRecords, gaugeHeld int64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ms, err := scrapeMetrics(context.Background(), addr)
		if !assert.NoError(c, err, "scrape") {
			return
		}
		m = ms
		gauge := m.byPartition("kafka_watermark_replay_exposure_records", topic)
		cs := mw.commits()
		assert.Equal(c, s.held(), s.InFlight(), "requests in flight besides the held ones")
		cutRecords, gaugeHeld = 0, 0
		sn := s.snapshot()
		for pt := int32(0); pt < parts; pt++ {
			cm := cs[pt]
			var kept int64
			for _, r := range cm.ranges() {
				kept += r.To - r.From
			}
			_, rep := replayOf(sn, pt, cm)
			cutRecords += rep
			gaugeHeld += gauge[pt]
			assert.Equalf(c, end[pt]-cm.offset-kept, gauge[pt], "partition %d: exposure gauge (commit %d, %d records in the kept ranges)", pt, cm.offset, kept)
		}
	}, time.Minute, 200*time.Millisecond, "the exposure gauges to show the cost of the cut ranges")
	truncated := m.total("kafka_watermark_commit_metadata_truncated_total", topic)
	held := s.held()
	t.Logf("steady: %d requests held, exposure gauges %d records, of which %d delivered outside the kept ranges; %d ranges cut so far",
		held, gaugeHeld, cutRecords, truncated)

	s.releaseHeld()
	k.waitCommitted(group, topic, end, 3*time.Minute)
	s.waitIdle(t, 30*time.Second)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ms, err := scrapeMetrics(context.Background(), addr)
		if !assert.NoError(c, err, "scrape") {
			return
		}
		m = ms
		assert.Zero(c, m.total("kafka_watermark_replay_exposure_records", topic), "exposure gauges at the log end")
	}, 30*time.Second, 200*time.Millisecond, "the exposure gauges to read 0 once everything is committed")
	took := time.Since(start)
	if n := m.total("kafka_watermark_commit_errors_total", topic); n != 0 {
		t.Errorf("kafka_watermark_commit_errors_total is %d, want 0", n)
	}
	truncated = m.total("kafka_watermark_commit_metadata_truncated_total", topic)
	commits := m.total("kafka_watermark_commits_total", topic)
	p.stop(45 * time.Second)
	w.check(t)
	mw.check(t)
	if ls := p.grep("refused"); len(ls) > 0 {
		t.Errorf("the input logged %d refusals, first: %s", len(ls), ls[0].text)
	}
	if ls := p.grep("commit failed"); len(ls) > 0 {
		t.Errorf("the input logged %d failed commits, first: %s", len(ls), ls[0].text)
	}
	for pt, c := range k.mustCommitStates(group, topic) {
		if c.err != nil || c.m.Base != end[pt] || len(c.m.Delivered) != 0 {
			t.Errorf("partition %d: final commit %s, want offset %d and metadata with no ranges", pt, c, end[pt])
		}
	}
	if dups := s.snapshot().coverage(t, end); dups != 0 {
		t.Errorf("%d duplicate deliveries in a run without failures, crashes or rebalances", dups)
	}
	mw.mu.Lock()
	maxLen, maxRanges := maxOf(mw.maxLen), maxOf(mw.maxRanges)
	minLen := maxLen
	for pt := int32(0); pt < parts; pt++ {
		minLen = min(minLen, mw.maxLen[pt])
	}
	mw.mu.Unlock()
	t.Logf("%s", s.stats())
	figure(t, "test=fragmented_metadata partitions=%d records=%d batch_max_records=%d held_batches=%d max_metadata_bytes=%d min_partition_max_metadata_bytes=%d max_ranges=%d truncated_ranges=%d commits=%d exposure_at_limit=%d cut_delivered_records=%d seconds_to_limit=%.1f seconds=%.1f",
		parts, parts*perPart, batchMax, held, maxLen, minLen, maxRanges, truncated, commits, gaugeHeld, cutRecords, filled.Seconds(), took.Seconds())
}

func (k *kafka) mustCommitStates(group, topic string) map[int32]commitState {
	k.t.Helper()
	c, err := k.commitStates(testCtx(k.t, 30*time.Second), group, topic)
	if err != nil {
		k.t.Fatalf("fetch offsets of group %s: %v", group, err)
	}
	return c
}

// checkBrokerMetaLimit proves the broker's limit is the one the input is
// built for: a commit with brokerMetaLimit bytes of metadata passes, one
// byte more is refused with OFFSET_METADATA_TOO_LARGE (in a group of its
// own).
func checkBrokerMetaLimit(t *testing.T, k *kafka, topic string) {
	t.Helper()
	group := "wm-frag-limit-" + suffix()
	for _, n := range []int{brokerMetaLimit, brokerMetaLimit + 1} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1, Metadata: strings.Repeat("x", n)})
		resp, err := k.adm.CommitOffsets(testCtx(t, 30*time.Second), group, offs)
		if err != nil {
			t.Fatalf("commit %d bytes of metadata: %v", n, err)
		}
		err = resp.Error()
		switch {
		case n <= brokerMetaLimit && err != nil:
			t.Fatalf("the broker refused %d bytes of metadata: %v", n, err)
		case n > brokerMetaLimit && !errors.Is(err, kerr.OffsetMetadataTooLarge):
			t.Fatalf("the broker answered %v to %d bytes of metadata, want OFFSET_METADATA_TOO_LARGE", err, n)
		}
	}
}
