package dlcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
)

// Selection is which dead letters redrive moves. Every bound is optional;
// set ones all apply. A value.
type Selection struct {
	Partition  *int32    // of the dead-letter topic; nil: all
	FromOffset *int64    // in the dead-letter topic, inclusive
	ToOffset   *int64    // in the dead-letter topic, inclusive
	FromTime   time.Time // on the origin record's timestamp (dead_letter_timestamp_ms), inclusive; zero: none
	ToTime     time.Time // likewise, exclusive; zero: none
}

// validate checks s, in one place, with messages that name the flag.
func (s Selection) validate() error {
	var errs []error
	if s.Partition != nil && *s.Partition < 0 {
		errs = append(errs, fmt.Errorf("--partition (%d) must be between 0 and %d", *s.Partition, math.MaxInt32))
	}
	if s.FromOffset != nil && *s.FromOffset < 0 {
		errs = append(errs, fmt.Errorf("--from-offset (%d) must not be negative", *s.FromOffset))
	}
	if s.ToOffset != nil && *s.ToOffset < 0 {
		errs = append(errs, fmt.Errorf("--to-offset (%d) must not be negative", *s.ToOffset))
	}
	if s.FromOffset != nil && s.ToOffset != nil && *s.FromOffset > *s.ToOffset {
		errs = append(errs, fmt.Errorf("--from-offset (%d) must be at most --to-offset (%d)", *s.FromOffset, *s.ToOffset))
	}
	if !s.FromTime.IsZero() && !s.ToTime.IsZero() && !s.FromTime.Before(s.ToTime) {
		errs = append(errs, fmt.Errorf("--from-time (%s) must be before --to-time (%s)", formatTime(s.FromTime), formatTime(s.ToTime)))
	}
	return errors.Join(errs...)
}

// byTime reports whether s selects by time, which needs the provenance.
func (s Selection) byTime() bool { return !s.FromTime.IsZero() || !s.ToTime.IsZero() }

// narrow cuts the spans of the dead-letter topic to the partition and
// offsets s selects. gone names, per partition, the selected offsets below
// its log start (deleted by retention or DeleteRecords): a range asked
// 0-4 of a log that starts at 3 is only 3-4, and the caller must say so.
func (s Selection) narrow(spans map[int32]span) (out map[int32]span, gone []string, err error) {
	out = map[int32]span{}
	for _, p := range slices.Sorted(maps.Keys(spans)) {
		sp := spans[p]
		if s.Partition != nil && *s.Partition != p {
			continue
		}
		if s.FromOffset != nil {
			if *s.FromOffset < sp.From {
				last := sp.From - 1
				if s.ToOffset != nil {
					last = min(last, *s.ToOffset)
				}
				gone = append(gone, fmt.Sprintf("partition %d %s (its log starts at %d)", p, offsets(*s.FromOffset, last), sp.From))
			}
			sp.From = max(sp.From, *s.FromOffset)
		}
		if s.ToOffset != nil {
			sp.To = min(sp.To, *s.ToOffset+1)
		}
		out[p] = sp
	}
	if s.Partition != nil && len(out) == 0 {
		return nil, nil, fmt.Errorf("--partition %d: the dead-letter topic has partitions 0 to %d", *s.Partition, len(spans)-1)
	}
	return out, gone, nil
}

// offsets is "offset 3" or "offsets 3-9".
func offsets(first, last int64) string {
	if first == last {
		return fmt.Sprintf("offset %d", first)
	}
	return fmt.Sprintf("offsets %d-%d", first, last)
}

// inTime reports whether the origin timestamp t is in s's time range.
func (s Selection) inTime(t time.Time) bool {
	return (s.FromTime.IsZero() || !t.Before(s.FromTime)) && (s.ToTime.IsZero() || t.Before(s.ToTime))
}

// tally counts dead letters (what was produced, or what was not tried),
// per destination topic and dead-letter partition.
type tally map[string]map[int32]*offsetRange

type offsetRange struct {
	count       int
	first, last int64
}

func (m tally) add(dest string, partition int32, offset int64) {
	m.addRun(dest, partition, offset, offset)
}

// addRun counts the offsets first to last of partition, all going to dest.
func (m tally) addRun(dest string, partition int32, first, last int64) {
	if m[dest] == nil {
		m[dest] = map[int32]*offsetRange{}
	}
	r := m[dest][partition]
	if r == nil {
		r = &offsetRange{first: first, last: last}
		m[dest][partition] = r
	}
	r.count += int(last - first + 1)
	r.first, r.last = min(r.first, first), max(r.last, last)
}

func (m tally) count() int {
	n := 0
	for _, ps := range m {
		for _, r := range ps {
			n += r.count
		}
	}
	return n
}

// write prints one line per destination topic, each after prefix:
//
//	orders: 3 records from orders.dlq partition 0 offsets 10-12
//	payments: 2 records from orders.dlq partition 0 offset 13, partition 1 offset 4
func (m tally) write(w io.Writer, prefix, dlTopic string) error {
	for _, dest := range slices.Sorted(maps.Keys(m)) {
		total := 0
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(m[dest])) {
			r := m[dest][p]
			total += r.count
			parts = append(parts, fmt.Sprintf("partition %d %s", p, offsets(r.first, r.last)))
		}
		if _, err := fmt.Fprintf(w, "%s%s: %d record%s from %s %s\n", prefix, dest, total, plural(total), dlTopic, strings.Join(parts, ", ")); err != nil {
			return err
		}
	}
	return nil
}

// HeaderOriginalTimestampMs is the header a redriven record carries when
// redrive gave it the time of the redrive: the timestamp the dead letter
// had (the origin record's, unless the dead-letter topic stamps log-append
// time), in Unix milliseconds, decimal ASCII. It is in deadletter.Prefix's
// namespace, so that a redriven record dead-lettered again drops it, as it
// drops deadletter.HeaderRedrivenFrom.
const HeaderOriginalTimestampMs = deadletter.Prefix + "original_timestamp_ms"

// redriven is the record to produce for p (deadletter.Redriven), stamped
// with now, and the dead letter's timestamp kept in
// HeaderOriginalTimestampMs; with keepTimestamps, it keeps the dead
// letter's timestamp instead. A redriven record with its old timestamp is
// deleted at once by a destination whose time retention it is past.
func redriven(p pick, now time.Time, keepTimestamps bool) *kgo.Record {
	r := deadletter.Redriven(p.r, p.dest)
	if keepTimestamps {
		return r
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderOriginalTimestampMs, Value: strconv.AppendInt(nil, p.r.Timestamp.UnixMilli(), 10)})
	r.Timestamp = now
	return r
}

// batchDone, when set, is called after each batch produce sends: a seam
// for tests that stop a run between batches or look at it. Nil outside
// tests.
var batchDone func(ctx context.Context)

// pick is a selected dead letter, as read, and where it goes.
type pick struct {
	r    *kgo.Record
	dest string
}

// produce is the produce pass: it reads the planned dead letters again, one
// dead-letter partition after the other in offset order, and produces them
// batchSize at a time, each batch with ProduceSync, so that it holds a
// batch (and kgo's fetch buffers), never the selection. It records what the
// brokers acknowledged in moved and what was not tried in notTried. It
// stops after the first batch with a failure, or when ctx ends: the records
// after it are not tried. The error names every record of that batch that
// failed, and the planned records that were gone when it came to read them
// (deleted since the check pass).
func produce(ctx context.Context, cl *kgo.Client, topic string, pl plan, batchSize int, keepTimestamps bool, moved, notTried tally) error {
	var (
		batch      []pick
		cutP       int32 = -1 // the last record handed to ProduceSync: everything planned after it is not tried
		cutO       int64 = -1
		failed     error
		gone       = tally{}
		readFailed error
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		last := batch[len(batch)-1].r
		cutP, cutO = last.Partition, last.Offset
		failed = produceBatch(ctx, cl, batch, keepTimestamps, moved, notTried)
		batch = batch[:0]
		if failed == nil && batchDone != nil {
			batchDone(ctx)
		}
		return failed
	}
	for _, p := range slices.Sorted(maps.Keys(pl.runs)) {
		runs := pl.runs[p]
		i, want := 0, runs[0].first // the run read in, and the next offset of it expected
		sp := map[int32]span{p: {From: runs[0].first, To: runs[len(runs)-1].last + 1}}
		readFailed = scan(ctx, cl, topic, sp, func(r *kgo.Record) error {
			for i < len(runs) && r.Offset > runs[i].last {
				if want <= runs[i].last {
					gone.addRun(runs[i].dest, p, want, runs[i].last)
				}
				if i++; i < len(runs) {
					want = runs[i].first
				}
			}
			if i == len(runs) || r.Offset < runs[i].first {
				return nil // not selected
			}
			if r.Offset > want {
				gone.addRun(runs[i].dest, p, want, r.Offset-1)
			}
			want = r.Offset + 1
			batch = append(batch, pick{r, runs[i].dest})
			if len(batch) >= batchSize {
				return flush()
			}
			return nil
		})
		if readFailed != nil {
			break
		}
	}
	if readFailed == nil {
		readFailed = flush()
	}
	var errs []error
	switch {
	case failed != nil:
		errs = append(errs, failed)
	case readFailed != nil && ctx.Err() == nil:
		errs = append(errs, readFailed)
	}
	if readFailed != nil || ctx.Err() != nil {
		pl.after(cutP, cutO, notTried)
	}
	if n := gone.count(); n > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d selected record%s gone from the dead-letter topic when read again to be produced (deleted since the check):\n", n, plural(n))
		if err := gone.write(&b, "  ", topic); err != nil {
			return err
		}
		errs = append(errs, errors.New(strings.TrimSuffix(b.String(), "\n")))
	}
	return errors.Join(errs...)
}

// produceBatch produces one batch with ProduceSync and records each
// record's outcome: moved, notTried, or in the error, in the batch's order.
//
// A record that failed with ctx's error counts as not tried: with an
// idempotent producer kgo fails a record on its context only while no
// request carrying it has been sent (pkg/kgo/producer.go:572-581), so it
// was not written.
func produceBatch(ctx context.Context, cl *kgo.Client, batch []pick, keepTimestamps bool, moved, notTried tally) error {
	rs := make([]*kgo.Record, len(batch))
	now := time.Now()
	for j, p := range batch {
		rs[j] = redriven(p, now, keepTimestamps)
	}
	// ProduceSync returns the results in the order the records finish, not
	// the order given (kgo's promise appends each as it completes:
	// pkg/kgo/producer.go:387-388, v1.22.3), so a result is matched to its
	// pick through its record.
	at := make(map[*kgo.Record]int, len(rs))
	for j, r := range rs {
		at[r] = j
	}
	failed := make([]error, len(batch))
	for _, res := range cl.ProduceSync(ctx, rs...) {
		j, ok := at[res.Record]
		if !ok {
			return fmt.Errorf("a produce result for a record not in the batch (%s/%d)", res.Record.Topic, res.Record.Partition)
		}
		src := batch[j].r
		switch {
		case res.Err == nil:
			moved.add(batch[j].dest, src.Partition, src.Offset)
		case ctx.Err() != nil && errors.Is(res.Err, ctx.Err()):
			notTried.add(batch[j].dest, src.Partition, src.Offset)
		default:
			failed[j] = fmt.Errorf("%s/%d@%d to %s: %w", src.Topic, src.Partition, src.Offset, batch[j].dest, res.Err)
		}
	}
	return errors.Join(failed...) // nil when none failed; Join skips nils, in the batch's order
}
