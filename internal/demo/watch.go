package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
	"github.com/watermark-connect/watermark-connect/internal/status"
)

// Input metrics the demo reads. Committed offsets come from the broker, not
// from here: the broker is the truth; these are the input's own view of
// state the broker cannot know.
const (
	gaugePending   = "kafka_watermark_pending_batches"
	gaugeStalled   = "kafka_watermark_stalled"
	gaugePaused    = "kafka_watermark_paused"
	counterReplays = "kafka_watermark_stall_replays_total"
	gaugeHeld      = "kafka_watermark_held_records" // ordering: key only
)

// observer gathers partitionViews from the broker, the input's gauges and
// the sink.
type observer struct {
	cluster *demoCluster
	o       demoOptions
	ranges  map[int32][2]int64
	sink    *demoSink
	gauges  *memmetrics.Store
}

func (ob observer) observe(ctx context.Context) ([]partitionView, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	committed, err := ob.cluster.committed(ctx, ob.o.Group, ob.o.Topic)
	if err != nil {
		return nil, err
	}
	ends, err := ob.cluster.endOffsets(ctx, ob.o.Topic)
	if err != nil {
		return nil, err
	}
	views := make([]partitionView, 0, len(ob.ranges))
	for p, r := range ob.ranges {
		c, ok := committed[p]
		if !ok {
			c = -1
		}
		t := ob.o.Topic
		views = append(views, partitionView{
			Partition: p, Start: r[0], End: r[1], Committed: c, LogEnd: ends[p],
			Pending:      ob.gauges.Get(gaugePending, t, p),
			MaxPending:   int64(ob.o.MaxPending),
			Stalled:      ob.gauges.Get(gaugeStalled, t, p) == 1,
			Paused:       ob.gauges.Get(gaugePaused, t, p) == 1,
			Replays:      ob.gauges.Get(counterReplays, t, p),
			Held:         ob.gauges.Get(gaugeHeld, t, p),
			DeadLettered: ob.gauges.Get(counterDeadLettered, t, p),
			Sink:         ob.sink.state(p),
		})
	}
	slices.SortFunc(views, func(a, b partitionView) int { return cmp.Compare(a.Partition, b.Partition) })
	return views, nil
}

// story is what the demo saw happen while it ran, for the event lines and
// the summary. Times are since the demo began. Only watch writes it, while
// it runs; the summary reads it after.
type story struct {
	firstStall   *statusSeen // the first status answer that named a stall
	healthyAgain *statusSeen // the first healthy answer after firstStall
	latest       *statusSeen // the latest answer, which the live view shows
	final        *statusSeen // asked after the pipeline stopped (runDemo)

	stalledAt  map[int32]time.Duration   // when the input first reported the partition stalled
	pausedAt   map[int32]time.Duration   // when it first reported it stalled and paused (max_pending_batches)
	pausedWith map[int32]int64           // its batches pending then
	replaysAt  map[int32][]time.Duration // when each replay of the partition was first counted
	passedAt   map[int32]time.Duration   // when a failed partition's commit first passed its failed batch
	reachedEnd map[int32]time.Duration   // when that commit then reached the log end

	// With --dead-letter-after (maxAttempts > 0, set before the first
	// record): the answered deliveries of each partition's failed batch
	// already told, and when its dead letters were first counted.
	limit pendingLimit // set before the first record

	maxAttempts    int
	dlq            string
	attemptsTold   map[int32]int
	deadLetteredAt map[int32]time.Duration

	keys keyStory // when the records carry few keys (keystory.go)
}

func newStory(o demoOptions) *story {
	return &story{stalledAt: map[int32]time.Duration{}, pausedAt: map[int32]time.Duration{}, pausedWith: map[int32]int64{},
		limit: o.pendingLimit(), replaysAt: map[int32][]time.Duration{},
		passedAt: map[int32]time.Duration{}, reachedEnd: map[int32]time.Duration{},
		attemptsTold: map[int32]int{}, deadLetteredAt: map[int32]time.Duration{}, keys: newKeyStory(o)}
}

// recordAttempts tells each answered delivery of partition v's failed batch
// f that was not told yet, with its attempt number, and the batch's dead
// letters once the input counted them.
func (s *story) recordAttempts(at time.Duration, v partitionView, f *failedBatch, ev func(string, ...any)) {
	p := v.Partition
	for i := s.attemptsTold[p]; i < len(f.Deliveries); i++ {
		d := f.Deliveries[i]
		if d.Answered.IsZero() {
			break
		}
		s.attemptsTold[p] = i + 1
		attempt := cmp.Or(d.Attempt, i+1)
		verdict := "rejected"
		if d.Accepted {
			verdict = "accepted"
		}
		ev("partition %d: the sink %s batch %d-%d, delivery attempt %d of %d (kafka_delivery_attempt; dead_letter.max_attempts %d)",
			p, verdict, f.First, f.Last, attempt, s.maxAttempts, s.maxAttempts)
	}
	if _, ok := s.deadLetteredAt[p]; !ok && v.DeadLettered > 0 {
		s.deadLetteredAt[p] = at
		ev("partition %d: %d record(s) of batch %d-%d written to the dead-letter topic %s after %d attempts; the broker acknowledged them, so they count as delivered",
			p, v.DeadLettered, f.First, f.Last, s.dlq, s.maxAttempts)
	}
}

// record notes what changed in views and in the status answer st, both seen
// at, and returns the event lines that tell it.
func (s *story) record(at time.Duration, views []partitionView, st *statusSeen) []string {
	var events []string
	ev := func(format string, a ...any) {
		events = append(events, fmt.Sprintf("[%5.1fs] ", at.Seconds())+fmt.Sprintf(format, a...))
	}
	for _, v := range views {
		f := v.Sink.firstFailure()
		if f == nil {
			continue
		}
		p := v.Partition
		if _, ok := s.stalledAt[p]; !ok && v.Stalled {
			s.stalledAt[p] = at
			ev("partition %d stalled: the sink rejected %s, so its commit cannot pass offset %d", p, s.keys.batchName(f), f.First)
		}
		if _, ok := s.pausedAt[p]; !ok && v.Stalled && v.Paused {
			s.pausedAt[p], s.pausedWith[p] = at, v.Pending
			ev("partition %d paused: %s", p, s.limit.pausedWith(v.Pending))
		}
		for int64(len(s.replaysAt[p])) < v.Replays {
			s.replaysAt[p] = append(s.replaysAt[p], at)
			ev("partition %d: replayed in place from offset %d (replay %d, kafka_watermark_stall_replays_total)", p, s.replayFrom(p, f), len(s.replaysAt[p]))
		}
		// After the replays: replay k delivers attempt k+1.
		if s.maxAttempts > 0 {
			s.recordAttempts(at, v, f, ev)
		}
		if s.keys.on {
			s.keys.record(at, v, f, ev)
		}
		if _, ok := s.passedAt[p]; !ok && v.resumeAt() > f.Last {
			s.passedAt[p] = at
			if v.DeadLettered > 0 {
				ev("partition %d: the commit moved past the dead-lettered batch %d-%d to %d", p, f.First, f.Last, v.resumeAt())
			} else {
				ev("partition %d: the sink accepted batch %d-%d; the commit moved past it to %d", p, f.First, f.Last, v.resumeAt())
			}
		}
		if _, ok := s.reachedEnd[p]; !ok && v.resumeAt() > f.Last && v.resumeAt() >= v.End {
			s.reachedEnd[p] = at
			ev("partition %d: committed to the log end (%d) without a restart", p, v.End)
		}
	}
	if st == nil {
		return events
	}
	s.latest = st
	switch {
	case s.firstStall == nil && st.stalled():
		s.firstStall = st
		ev("watermark-connect status, asked of the broker, sees the stall (exit %d):", st.Exit)
		for _, line := range strings.Split(strings.TrimRight(st.Text, "\n"), "\n") {
			events = append(events, "          "+line)
		}
	case s.firstStall != nil && s.healthyAgain == nil && st.Exit == status.ExitHealthy:
		s.healthyAgain = st
		ev("watermark-connect status: %s (exit %d)", st.lastLine(), st.Exit)
	}
	return events
}

// watched is how watch ended: the last views, whether everything settled,
// why it stopped otherwise, and what it saw on the way.
type watched struct {
	Last    []partitionView
	Settled bool
	Reason  string
	Story   *story
}

// failing says what the sink does to the batches it fails, for the
// heading: short, to fit the live view's (liveWidth), or in full.
func (o demoOptions) failing(short bool) string {
	switch {
	case !o.deadLetters():
		return fmt.Sprintf("sink fails %d batch(es) for %v", o.FailBatches, o.FailFor)
	case short:
		return fmt.Sprintf("sink fails %d batch(es), dead-lettered after %d", o.FailBatches, o.DeadLetterAfter)
	}
	return fmt.Sprintf("sink fails %d batch(es) on every delivery, dead-lettered to %s after %d attempt(s)",
		o.FailBatches, o.deadLetterTopic(), o.DeadLetterAfter)
}

// writeHeading is the first line of the output when it is not a
// terminal: what the demo is about to run, said before the topic is
// prepared (on a real cluster, producing the records takes a while).
func writeHeading(w io.Writer, o demoOptions, head string) {
	fmt.Fprintf(w, "watermark-connect demo: %s; %d records, %s, stall_replay_after %s%s\n",
		head, o.Records, o.failing(false), o.replayAfterYAML(), o.keysHead())
}

// watch shows progress until every partition settles, the duration passes,
// ctx is cancelled (Ctrl-C) or the pipeline ends by itself, and asks status
// of the broker on every tick. It returns the pipeline's error if the
// pipeline ended. Times are measured from began, when the demo began.
func watch(ctx context.Context, ob observer, o demoOptions, w io.Writer, live bool, head string, began time.Time, runDone <-chan error) (watched, error) {
	const tick = 250 * time.Millisecond
	printEvery := time.Second
	if live {
		printEvery = tick
	}
	res := watched{Story: newStory(o)}
	res.Story.maxAttempts, res.Story.dlq = o.DeadLetterAfter, o.deadLetterTopic()
	var lt *liveTable
	if live {
		lt = &liveTable{w: w}
		lt.start()
		defer func() {
			lt.draw(nil) // the final table and the summary replace it
			lt.end()
		}()
	}
	deadline := time.NewTimer(o.Duration)
	defer deadline.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	var lastPrint time.Time
	for {
		views, err := ob.observe(ctx)
		if err == nil {
			res.Last = views
			at := time.Since(began)
			events := res.Story.record(at, views, ob.askStatus(ctx, at))
			if live {
				if time.Since(lastPrint) >= printEvery-tick/2 {
					lastPrint = time.Now()
					lt.draw(liveLines(views, res.Story.latest, fmt.Sprintf("watermark-connect demo, %.1fs: %s, %d in flight",
						at.Seconds(), o.failing(true), o.MaxInFlight), head))
				}
			} else {
				for _, e := range events {
					fmt.Fprintln(w, e)
				}
				if time.Since(lastPrint) >= printEvery-tick/2 {
					lastPrint = time.Now()
					fmt.Fprintln(w, progressLine(at, views, o.MaxPending))
				}
			}
			if allSettled(views, o.heals()) {
				res.Settled = true
				return res, nil
			}
		}
		select {
		case <-ticker.C:
		case <-deadline.C:
			res.Reason = fmt.Sprintf("--duration %v passed", o.Duration)
			return res, nil
		case <-ctx.Done():
			res.Reason = "interrupted"
			return res, nil
		case err := <-runDone:
			if err == nil {
				err = errors.New("the pipeline ended by itself")
			}
			res.Reason = "the pipeline ended"
			return res, err
		}
	}
}

func allSettled(views []partitionView, heals bool) bool {
	for _, v := range views {
		if !v.settled(heals) {
			return false
		}
	}
	return len(views) > 0
}
