package dlcmd

import (
	"cmp"
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
			if *s.FromOffset < sp.from {
				last := sp.from - 1
				if s.ToOffset != nil {
					last = min(last, *s.ToOffset)
				}
				gone = append(gone, fmt.Sprintf("partition %d %s (its log starts at %d)", p, offsets(*s.FromOffset, last), sp.from))
			}
			sp.from = max(sp.from, *s.FromOffset)
		}
		if s.ToOffset != nil {
			sp.to = min(sp.to, *s.ToOffset+1)
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

// pick is a selected dead letter and where it goes.
type pick struct {
	r    *kgo.Record // the dead letter, as read
	dest string
}

// selector collects the dead letters to redrive, and the ones it cannot
// place: every unparsable record in the offsets read, when the destination
// or the time range needs the provenance.
type selector struct {
	sel        Selection
	to         string // --to; "" for each record's origin topic
	dlTopic    string
	picks      []pick
	unparsable []Unparsable
}

func (s *selector) add(r *kgo.Record) {
	if s.to != "" && !s.sel.byTime() {
		s.picks = append(s.picks, pick{r, s.to})
		return
	}
	p, err := deadletter.Parse(r)
	if err != nil {
		s.unparsable = append(s.unparsable, Unparsable{Partition: r.Partition, Offset: r.Offset, Reason: err.Error()})
		return
	}
	if !s.sel.inTime(p.Timestamp) {
		return
	}
	s.picks = append(s.picks, pick{r, cmp.Or(s.to, p.Topic)})
}

// check refuses a selection that cannot be redriven as asked: unparsable
// records (nothing is skipped silently), or a destination that is the
// dead-letter topic itself.
func (s *selector) check() error {
	var errs []error
	for _, u := range s.unparsable {
		need := "its origin topic (give --to)"
		if s.sel.byTime() {
			need = "its origin timestamp (select it by offset)"
		}
		errs = append(errs, fmt.Errorf("unparsable %s/%d@%d, so %s is unknown: %s", s.dlTopic, u.Partition, u.Offset, need, u.Reason))
	}
	for _, p := range s.picks {
		if p.dest == s.dlTopic {
			errs = append(errs, fmt.Errorf("%s/%d@%d would go back to the dead-letter topic %s itself", s.dlTopic, p.r.Partition, p.r.Offset, s.dlTopic))
			break
		}
	}
	return errors.Join(errs...)
}

// tally counts dead letters (what was produced, or what was not tried),
// per destination topic and dead-letter partition.
type tally map[string]map[int32]*offsetRange

type offsetRange struct {
	count       int
	first, last int64
}

func (m tally) add(dest string, partition int32, offset int64) {
	if m[dest] == nil {
		m[dest] = map[int32]*offsetRange{}
	}
	r := m[dest][partition]
	if r == nil {
		r = &offsetRange{first: offset, last: offset}
		m[dest][partition] = r
	}
	r.count++
	r.first, r.last = min(r.first, offset), max(r.last, offset)
}

func (m tally) addPicks(ps []pick) {
	for _, p := range ps {
		m.add(p.dest, p.r.Partition, p.r.Offset)
	}
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
// for tests that stop a run between batches. Nil outside tests.
var batchDone func(ctx context.Context)

// produce produces the picks in order, batchSize at a time, each batch with
// ProduceSync, and records what the brokers acknowledged in moved and what
// was not tried in notTried. It stops after the first batch with a failure,
// or when ctx ends: the batches after it are not tried. The error names
// every record of that batch that failed.
//
// A record that failed with ctx's error counts as not tried: with an
// idempotent producer kgo fails a record on its context only while no
// request carrying it has been sent (pkg/kgo/producer.go:572-581), so it
// was not written.
func produce(ctx context.Context, cl *kgo.Client, picks []pick, batchSize int, keepTimestamps bool, moved, notTried tally) error {
	for i := 0; i < len(picks); i += batchSize {
		if ctx.Err() != nil {
			notTried.addPicks(picks[i:])
			return nil
		}
		batch := picks[i:min(i+batchSize, len(picks))]
		rs := make([]*kgo.Record, len(batch))
		now := time.Now()
		for j, p := range batch {
			rs[j] = redriven(p, now, keepTimestamps)
		}
		// ProduceSync returns the results in the order the records
		// finish, not the order given (kgo's promise appends each as it
		// completes: pkg/kgo/producer.go:387-388, v1.22.3), so a result is
		// matched to its pick through its record.
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
		if errs := slices.DeleteFunc(failed, func(err error) bool { return err == nil }); len(errs) > 0 { // in the batch's order
			notTried.addPicks(picks[i+len(batch):])
			return errors.Join(errs...)
		}
		if batchDone != nil {
			batchDone(ctx)
		}
	}
	return nil
}
