package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The dead-letter topic of a run that draws poison, read back after the
// drain and held against the log and the sink.
//
// A record of the topic counts as delivered only when its provenance is
// right: deadletter.Parse accepts it, it names a visible record of the run's
// topic (dead_letter_topic, _partition, _offset), its value and key are that
// record's, dead_letter_timestamp_ms is that record's timestamp, and
// dead_letter_attempts is between 1 and deadLetterAttempts. It counts from
// when the broker appended it: the topic is created with LogAppendTime, so a
// dead letter's own timestamp is its append time on the broker's clock, the
// clock of the commit log's timestamps (the input resolves a dead-lettered
// batch only once the broker acknowledged its write, so a commit past it is
// never earlier). With it a commit may pass a record the sink never had,
// once the record is in the dead-letter topic; never before.
//
// Which records may be there: those the sink refused (a poison record, any
// record of a request that held one, a batch of sink-fail) or judged after
// the member's timeout (a failure for the member), since each of the
// deadLetterAttempts deliveries that put a record there failed for the
// member. A record the sink never refused nor judged late that is in the
// topic fails the run. (One path would put one there legitimately: a
// batch handed out deadLetterAttempts times, each time by a member killed
// before the request reached the sink's verdict, since the input counts
// the hand-out at the watermark of each epoch. It needs kills inside a few
// milliseconds of three hand-outs in a row of one batch, and has not been
// seen; should it be, the member logs' "after N attempt(s)" and the kills'
// times tell it.) Copies are allowed: a crash between a dead-letter write
// and the commit past it writes the batch again.

// deadLetterPartitions is the dead-letter topic's partition count.
const deadLetterPartitions = 3

// letter is one record of the dead-letter topic as read back.
type letter struct {
	part     int32 // where the dead-letter topic holds it
	offset   int64
	appended int64 // Unix ns: the broker's append time
	prov     deadletter.Provenance
	parseErr error
	value    uint32 // hashes of its value and key
	key      uint32
}

// deadLetterFacts is what the checker knows of the dead-letter topic: its
// records, and the sink's refusals and poison slots.
type deadLetterFacts struct {
	topic   string // the origin topic
	letters []letter
	refused map[[2]int64]refusal
	slots   []poisonSlot
	logged  int64 // records the members' log lines say they dead-lettered
}

// deadLetterResult is the checker's account of the dead-letter topic.
type deadLetterResult struct {
	Copies        int64    `json:"copies"`                  // records in the topic
	Records       int64    `json:"records"`                 // distinct origin records, provenance right
	Only          int64    `json:"only_dead_lettered"`      // of those, never received by the sink
	MaxCopies     int      `json:"max_copies"`              // most copies of one origin record
	BadProvenance int64    `json:"bad_provenance"`          // must be 0
	Unrefused     int64    `json:"never_refused"`           // dead-lettered, never refused by the sink: must be 0
	Beside        int64    `json:"beside_poison"`           // dead-lettered, refused in a request with a poison record
	RefusedOther  int64    `json:"refused_by_other_faults"` // dead-lettered, refused (or answered late) only otherwise: sink-fail
	Refused       int64    `json:"refused_offsets"`         // offsets the sink refused or judged late
	Slots         int      `json:"poison_slots"`
	Poison        int      `json:"poison_records"` // slots bound to a record
	PoisonDead    int      `json:"poison_dead_lettered"`
	PoisonMissing int      `json:"poison_missing"` // in neither the sink nor the topic: must be 0
	PoisonInSink  int      `json:"poison_in_sink"` // must be 0 (the sink refuses them)
	Logged        int64    `json:"logged"`         // what the members' logs say they wrote: at most copies
	Examples      []string `json:"examples,omitempty"`
}

func (r *deadLetterResult) example(format string, args ...any) {
	if len(r.Examples) < maxExamples {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// failures are the result's reasons to fail the run.
func (r *deadLetterResult) failures() []string {
	var out []string
	add := func(cond bool, format string, args ...any) {
		if cond {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	add(r.BadProvenance > 0, "dead letters: %d with a wrong provenance (first: %v)", r.BadProvenance, first(r.Examples, 3))
	add(r.Unrefused > 0, "dead letters: %d record(s) the sink never refused are in the dead-letter topic (first: %v)", r.Unrefused, first(r.Examples, 3))
	add(r.PoisonMissing > 0, "dead letters: %d poison record(s) in neither the sink nor the dead-letter topic", r.PoisonMissing)
	add(r.PoisonInSink > 0, "dead letters: %d poison record(s) in the sink, which refuses them (a harness fault)", r.PoisonInSink)
	add(r.Logged > r.Copies, "dead letters: the member logs say %d record(s) were dead-lettered, the topic holds %d", r.Logged, r.Copies)
	return out
}

// provenance says what is wrong with l's provenance against the log read
// back ("" when it is right).
func (d *deadLetterFacts) provenance(l letter, lg [][]logRec) string {
	pv := l.prov
	switch {
	case l.parseErr != nil:
		return l.parseErr.Error()
	case pv.Topic != d.topic:
		return fmt.Sprintf("names topic %q", pv.Topic)
	case int(pv.Partition) >= len(lg) || pv.Offset >= int64(len(lg[pv.Partition])):
		return fmt.Sprintf("names %d/%d, past the log", pv.Partition, pv.Offset)
	}
	r := lg[pv.Partition][pv.Offset]
	switch {
	case r.kind != offData:
		return fmt.Sprintf("names %d/%d, which holds %s", pv.Partition, pv.Offset, describeKind(r.kind, true))
	case l.value != r.hash:
		return fmt.Sprintf("%d/%d: another value than the record's", pv.Partition, pv.Offset)
	case l.key != r.key:
		return fmt.Sprintf("%d/%d: another key than the record's", pv.Partition, pv.Offset)
	case pv.Timestamp.UnixMilli() != r.ts/1e6:
		return fmt.Sprintf("%d/%d: dead_letter_timestamp_ms %d, the record's is %d", pv.Partition, pv.Offset, pv.Timestamp.UnixMilli(), r.ts/1e6)
	case pv.Attempts < 1 || pv.Attempts > deadLetterAttempts:
		return fmt.Sprintf("%d/%d: dead_letter_attempts %d, not in 1..%d", pv.Partition, pv.Offset, pv.Attempts, deadLetterAttempts)
	}
	return ""
}

// delivered is, for every origin record with a dead letter of the right
// provenance, when the first such was appended (Unix ns).
func (d *deadLetterFacts) delivered(lg [][]logRec) map[[2]int64]int64 {
	out := map[[2]int64]int64{}
	if d == nil {
		return out
	}
	for _, l := range d.letters {
		if d.provenance(l, lg) != "" {
			continue
		}
		k := [2]int64{int64(l.prov.Partition), l.prov.Offset}
		if t, ok := out[k]; !ok || l.appended < t {
			out[k] = l.appended
		}
	}
	return out
}

// deadLetters accounts the dead-letter topic (nothing without one).
func (c *checker) deadLetters() {
	d := c.dl
	if d == nil {
		return
	}
	r := &deadLetterResult{Copies: int64(len(d.letters)), Logged: d.logged}
	c.a.DeadLetters = r
	copies := map[[2]int64]int{}
	for _, l := range d.letters {
		if why := d.provenance(l, c.lg); why != "" {
			r.BadProvenance++
			r.example("%d/%d of the dead-letter topic: %s", l.part, l.offset, why)
			continue
		}
		copies[[2]int64{int64(l.prov.Partition), l.prov.Offset}]++
	}
	for k, n := range copies {
		r.Records++
		r.MaxCopies = max(r.MaxCopies, n)
		if c.at(int(k[0]), k[1]).Count == 0 {
			r.Only++
		}
		switch f, ok := d.refused[k]; {
		case !ok:
			r.Unrefused++
			r.example("%d/%d dead-lettered, but the sink never refused it", k[0], k[1])
		case f.Poison:
		case f.Beside:
			r.Beside++
		default:
			r.RefusedOther++
		}
	}
	r.Refused = int64(len(d.refused))
	for _, s := range d.slots {
		r.Slots++
		if s.O < 0 {
			continue
		}
		r.Poison++
		k := [2]int64{int64(s.P), s.O}
		if c.at(int(s.P), s.O).Count > 0 {
			r.PoisonInSink++
		}
		switch {
		case copies[k] > 0:
			r.PoisonDead++
		case c.at(int(s.P), s.O).Count == 0:
			r.PoisonMissing++
			r.example("poison %d/%d (fault #%d) is not in the dead-letter topic", s.P, s.O, s.Fault)
		}
	}
}

// readDeadLetters reads the dead-letter topic from its start to its end.
func readDeadLetters(ctx context.Context, brokers, topic string) ([]letter, error) {
	starts, err := startOffsets(ctx, brokers, topic, deadLetterPartitions)
	if err != nil {
		return nil, err
	}
	ends, err := endOffsets(ctx, brokers, topic, deadLetterPartitions)
	if err != nil {
		return nil, err
	}
	offsets := map[int32]kgo.Offset{}
	for p, e := range ends {
		if e > starts[p] {
			offsets[int32(p)] = kgo.NewOffset().AtStart()
		}
	}
	if len(offsets) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.ClientID("chaos-dead-letters"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var out []letter
	for len(offsets) > 0 {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return nil, fmt.Errorf("read back %s: %d partition(s) not read to their end: %w", topic, len(offsets), rctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			pv, err := deadletter.Parse(r)
			out = append(out, letter{part: r.Partition, offset: r.Offset, appended: r.Timestamp.UnixNano(), prov: pv, parseErr: err,
				value: testkit.HashValue(string(r.Value)), key: testkit.HashValue(string(r.Key))})
			if r.Offset == ends[r.Partition]-1 {
				delete(offsets, r.Partition)
			}
		})
	}
	return out, nil
}

// deliveredAt is when the record the log holds at p/o (its hash) was first
// delivered: received by the sink, or appended to the dead-letter topic
// with its provenance right (MaxInt64: never).
func (c *checker) deliveredAt(p int, o int64, hash uint32) int64 {
	t := c.acked(p, o, hash)
	if d, ok := c.dead[[2]int64{int64(p), o}]; ok {
		t = min(t, d)
	}
	return t
}
