package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The failure runs: one key's requests are answered 500 for -key-fail-for,
// from the moment -key-fail-at of the topic's records were first delivered.
// Under ordering: key the failed hand-out is retried (nack_retry) with its
// keys held, while every other key goes on; its partition's commit stops at
// the failed record. What is measured is the rate of the partition's other
// keys: from the failure's start until the first of the failure's end, the
// partition's held records reaching max_held_records (the input then pauses
// the partition's fetching, every key included) and the other keys' last
// record, against the same stretch of a control run: the same contender on
// the same topic with no failure, started at the same count.
//
// Two failing keys: the topic's busiest key of -key-counts' first count
// (about 25 records at 100,000 keys and 1,000,000 records: its held records
// can never reach the limit), and, with -key-hot-share, a hot key holding
// that share of a topic's records (its records alone fill max_held_records
// during the failure: the limit and when it is reached).

// failCase is one failing key.
type failCase struct {
	name   string
	t      *keyTopic
	key    string
	part   int32 // the key's partition
	recs   int   // the key's records
	others int   // the partition's records of other keys
}

// failRun is one run of a failure case, failing or not.
type failRun struct {
	failure bool
	start   time.Time // when the failure started (in a control run, would have); zero: never
	others  []int64   // Unix ns of each first delivery of the partition's other keys' records, in order
	// limitAt is when the partition's held records were first seen at
	// max_held_records after start (-1: never), and maxHeld the most seen
	// after start, in the 200 ms scrapes of the 1 s gauge.
	limitAt                           time.Duration
	maxHeld                           float64
	keyLast                           time.Duration // the failing key's last first delivery, after start
	failed                            int64         // requests answered 500
	reordered, overlapped, duplicates int64
}

// othersDone is when the partition's other keys were all delivered, after
// start (-1: not all were).
func (r failRun) othersDone(fc failCase) time.Duration { return r.othersAt(fc, 1) }

// othersAt is when a share q of the partition's other keys' records not
// delivered at start had been delivered, after start (-1: never).
func (r failRun) othersAt(fc failCase, q float64) time.Duration {
	from := r.start.UnixNano()
	before := sort.Search(len(r.others), func(i int) bool { return r.others[i] > from })
	i := before + int(math.Ceil(q*float64(fc.others-before))) - 1
	if i < before || i >= len(r.others) {
		return -1
	}
	return time.Duration(r.others[i] - from)
}

// rate is the other keys' records/s from start over d.
func (r failRun) rate(d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	from := r.start.UnixNano()
	lo := sort.Search(len(r.others), func(i int) bool { return r.others[i] > from })
	hi := sort.Search(len(r.others), func(i int) bool { return r.others[i] > from+d.Nanoseconds() })
	return float64(hi-lo) / d.Seconds()
}

// since prints a time since a failure's start, "never" when negative.
func since(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// failPair is a failure run and its control, run next to each other.
type failPair struct{ fail, ctrl failRun }

// steadyShare bounds the stretch the rates cover: it ends, in either run,
// once this share of the partition's other keys' records left at the start
// is delivered. Past it a partition is draining its tail, not flowing; and
// the failing hand-out holds records of other keys (a Benthos batch fails
// whole: its 63 other keys wait with the failing one, with their later
// records), which come only after the failure ends and must not stretch
// the failure run's window to the failure's end.
const steadyShare = 0.9

// window is the stretch both runs' rates cover, from the start: until the
// first of the failure's end, the failure run's held records reaching the
// limit, and either run delivering steadyShare of the other keys' records
// left at the start.
func (p failPair) window(fc failCase, failFor time.Duration) time.Duration {
	d := failFor
	if p.fail.limitAt >= 0 {
		d = min(d, p.fail.limitAt)
	}
	for _, r := range []failRun{p.fail, p.ctrl} {
		if t := r.othersAt(fc, steadyShare); t >= 0 {
			d = min(d, t)
		}
	}
	return d
}

func keyFailures(ctx context.Context, w io.Writer, o options, s *keySink, cs []contender, base, hot *keyTopic) error {
	ko := o.key
	var cases []failCase
	mk := func(name string, t *keyTopic, key string) failCase {
		st := t.filled.Keys[key]
		return failCase{name: name, t: t, key: key, part: st.Partition, recs: st.Records,
			others: t.filled.Partitions[st.Partition] - st.Records}
	}
	cases = append(cases, mk(fmt.Sprintf("the busiest of %s keys", thousands(base.keys)), base, base.filled.Busiest("")))
	if hot != nil {
		cases = append(cases, mk(fmt.Sprintf("a hot key (%.1f%% of the records)", 100*ko.hotShare), hot, hot.hot))
	}
	var who []contender
	for _, k := range ko.failWho {
		for _, c := range cs {
			if c.key == k {
				who = append(who, c)
			}
		}
	}
	pairs := map[string][]failPair{} // [case name + contender]
	rng := rand.New(rand.NewPCG(o.seed, 22))
	for r := range ko.failRounds {
		for _, fc := range cases {
			for _, ct := range who {
				var pair failPair
				for _, failure := range [][]bool{{true, false}, {false, true}}[rng.IntN(2)] {
					tag := fmt.Sprintf("f%d-%s-%s-%v", r, ct.key, fc.key, failure)
					run, err := runFailure(ctx, o, s, ct, fc, failure, tag)
					if err != nil {
						return fmt.Errorf("failure run %s, %s, failure %v: %w", fc.name, ct.key, failure, err)
					}
					logf("failure round %d, %s (%s, %d records, partition %d), %s, failure %v: others done after %v, held limit at %v (max %.0f), key's last after %v, %d failed requests, reordered %d, overlapped %d",
						r+1, fc.name, fc.key, fc.recs, fc.part, ct.key, failure, since(run.othersDone(fc)),
						since(run.limitAt), run.maxHeld, since(run.keyLast), run.failed, run.reordered, run.overlapped)
					if failure {
						pair.fail = run
					} else {
						pair.ctrl = run
					}
				}
				pairs[fc.name+"/"+ct.key] = append(pairs[fc.name+"/"+ct.key], pair)
			}
		}
	}
	writeKeyFailures(w, o, cases, who, pairs)
	return nil
}

// runFailure runs ct over fc's topic, failing fc's key when failure is set,
// until the sink has every record, scraping the held records of fc's
// partition every 200 ms.
func runFailure(ctx context.Context, o options, s *keySink, ct contender, fc failCase, failure bool, tag string) (failRun, error) {
	ko := o.key
	dir := filepath.Join(o.workDir, "keyorder", fc.t.name+"-"+tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return failRun{}, err
	}
	addr, err := freeAddr()
	if err != nil {
		return failRun{}, err
	}
	c := cell{partitions: keyPartitions, size: keyValueSize, codec: "none", records: ko.records, topic: fc.t.name}
	bin, args, err := ct.args(dir, c, "g-"+fc.t.name+"-"+tag, addr, false)
	if err != nil {
		return failRun{}, err
	}
	failFor := time.Duration(0)
	if failure {
		failFor = ko.failFor
	}
	s.startRun(fc.t.name, keyPartitions, fc.key, failFor, int64(ko.failAt*float64(ko.records)))
	p, err := startProc(dir, ct.key, bin, args, addr)
	if err != nil {
		s.endRun()
		return failRun{}, err
	}
	type heldAt struct {
		at   time.Time
		held float64
	}
	var held []heldAt
	deadline := time.Now().Add(ko.failFor + o.runTimeout)
	tick := time.NewTicker(scrapeBenthos)
	defer tick.Stop()
	for s.distinct() < int64(ko.records) {
		select {
		case err := <-p.done:
			s.endRun()
			return failRun{}, fmt.Errorf("exited early (%w); last log lines:\n%s", err, p.tail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			_ = p.stop()
			s.endRun()
			return failRun{}, fmt.Errorf("%d of %d records delivered after %v; last log lines:\n%s", s.distinct(), ko.records, ko.failFor+o.runTimeout, p.tail())
		}
		if m, err := testkit.ScrapeMetrics(ctx, addr); err == nil {
			if v, ok := m.ByPartition(engine.MetricHeld, fc.t.name)[fc.part]; ok {
				held = append(held, heldAt{time.Now(), v})
			}
		}
	}
	if err := p.stop(); err != nil {
		return failRun{}, err
	}
	s.WaitIdle(10 * time.Second)
	run := s.endRun()
	if run.chk.Foreign > 0 {
		return failRun{}, fmt.Errorf("the sink saw %d records of another topic or partition", run.chk.Foreign)
	}
	if run.start.IsZero() {
		return failRun{}, fmt.Errorf("the failure never started: %d records delivered", run.chk.Distinct)
	}
	r := failRun{failure: failure, start: run.start, others: run.others[fc.part], limitAt: -1,
		keyLast: run.failKeyLastSeen.Sub(run.start), failed: run.failed,
		reordered: run.chk.Reordered, overlapped: run.chk.Overlapped, duplicates: run.chk.Duplicates}
	for _, h := range held {
		if h.at.Before(run.start) {
			continue
		}
		r.maxHeld = max(r.maxHeld, h.held)
		if r.limitAt < 0 && h.held >= keyMaxHeld {
			r.limitAt = h.at.Sub(run.start)
		}
	}
	return r, nil
}
