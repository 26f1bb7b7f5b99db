package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// What the demo tells of keys when the records carry few keys
// (demoOptions.keySpace): under ordering: key, that a failed batch holds
// back only its keys, the input holding their later records while the
// partition's other keys go past it, and that no key went out of order;
// under none, what happened to the same keys instead.

// keyStory is the part of the story about keys: what watch saw of each
// failed partition's held records, and which events it told. Only watch
// writes it, while it runs; the summary reads it after.
//
// kafka_watermark_held_records counts every record waiting for its key,
// and with a few keys per partition most records wait for a batch of their
// key in flight. So the held records are told once they are the waiting
// keys' alone: the partition stalled, and nothing of it in flight at the
// sink for quietFor, long enough for the input to take the sink's last
// answer, hand out whatever key it freed (which would be in flight again),
// and refresh its gauges (every commit_period) twice.
type keyStory struct {
	on, ordered bool                    // the records carry few keys; ordering: key
	quietFor    time.Duration           // see above
	held        map[int32]int64         // the records held for the waiting keys alone, once told
	heldAt      map[int32]time.Duration // when they were told
	waitedAt    map[int32]time.Duration // when the failed batch's wait was told, once the sink accepted it
}

func newKeyStory(o demoOptions) keyStory {
	return keyStory{on: o.keySpace() > 0, ordered: o.keyOrdered(), quietFor: 2*o.CommitPeriod + 100*time.Millisecond,
		held: map[int32]int64{}, heldAt: map[int32]time.Duration{}, waitedAt: map[int32]time.Duration{}}
}

// record tells what changed of partition v, whose first failed batch is f:
// under key, its keys waiting while others flow; under either ordering,
// once the sink accepted the batch, what the sink received meanwhile.
func (k *keyStory) record(at time.Duration, v partitionView, f *failedBatch, ev func(string, ...any)) {
	p := v.Partition
	if _, told := k.heldAt[p]; !told && k.ordered && v.Stalled && v.Held > 0 && v.Sink.Quiet >= k.quietFor {
		k.held[p], k.heldAt[p] = v.Held, at
		ev("partition %d: %s alone waits, behind its rejected batch; the input holds %d record(s) back for it (kafka_watermark_held_records) "+
			"while %d record(s) of the partition's other keys went past offset %d", p, keyList(f.Wait.Keys), v.Held, f.Wait.Passed, f.First)
	}
	accepted := acceptedAt(f)
	if _, ok := k.waitedAt[p]; ok || accepted.IsZero() {
		return
	}
	k.waitedAt[p] = at
	if k.ordered {
		ev("partition %d: the sink accepted the batch of %s; while it waited, %d record(s) of other keys went past offset %d, and %d of its own",
			p, keyList(f.Wait.Keys), f.Wait.Passed, f.First, f.Wait.OwnPassed)
		return
	}
	ev("partition %d: the sink accepted batch %d-%d; while it waited, %d later record(s) of its %s landed before it",
		p, f.First, f.Last, f.Wait.OwnPassed, keyList(f.Wait.Keys))
}

// acceptedAt is when the sink first accepted a delivery of f; zero if it
// never did.
func acceptedAt(f *failedBatch) time.Time {
	for _, d := range f.Deliveries {
		if d.Accepted {
			return d.Answered
		}
	}
	return time.Time{}
}

// keyList names keys for a sentence: "key k6", "keys k6, k14", or the
// first few and how many more.
func keyList(keys []string) string {
	const shown = 4
	switch len(keys) {
	case 0:
		return "keys"
	case 1:
		return "key " + keys[0]
	}
	if len(keys) <= shown {
		return "keys " + strings.Join(keys, ", ")
	}
	return fmt.Sprintf("keys %s and %d more", strings.Join(keys[:shown], ", "), len(keys)-shown)
}

// batchName names a failed batch for a sentence: under key, a set of a few
// keys' records, by its keys; under none, a range.
func (k keyStory) batchName(f *failedBatch) string {
	if !k.ordered {
		return fmt.Sprintf("batch %d-%d", f.First, f.Last)
	}
	return fmt.Sprintf("the batch of %s (%d records, offsets %d-%d)", keyList(f.Wait.Keys), f.records(), f.First, f.Last)
}

// writeKeyOrder prints the summary's key figures: the per-key check, the
// batches that shared a key, the records that landed again older than
// their key, and what the failed batch's wait let through.
func writeKeyOrder(w io.Writer, r *demoResult) {
	line := func(label, format string, a ...any) {
		for i, l := range wrap(fmt.Sprintf(format, a...), 72) {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(w, "  %-28s%s\n", label, l)
		}
	}
	ko := r.KeyOrder
	if r.Ordering == orderingKey {
		line("key order:", "%d keys delivered out of order over %d records (%d keys)", ko.Reordered, ko.Records, ko.Keys)
	} else {
		line("key order:", "%d of %d keys delivered out of order over %d records; %d record(s) landed after a later one of their key",
			ko.Reordered, ko.Keys, ko.Records, ko.Late)
	}
	line("batches sharing a key:", "%d went out holding a key of another batch not yet answered", ko.Overlaps)
	if ko.WentBack > 0 {
		line("landed again, going back:", "%d record(s), delivered again by the replays in place, older than a record of their key already delivered",
			ko.WentBack)
	}
	for _, v := range r.Parts {
		f := v.Sink.firstFailure()
		if f == nil || acceptedAt(f).IsZero() || f.Deliveries[0].Answered.IsZero() {
			continue
		}
		waited := acceptedAt(f).Sub(f.Deliveries[0].Answered).Seconds()
		if r.Ordering != orderingKey {
			line("the failed batch's wait:", "batch %d-%d of partition %d waited %.1fs; %d later record(s) of its %s landed before it",
				f.First, f.Last, v.Partition, waited, f.Wait.OwnPassed, keyList(f.Wait.Keys))
			continue
		}
		held := ""
		if n, ok := r.Story.keys.held[v.Partition]; ok {
			held = fmt.Sprintf(", %d record(s) held back for it (kafka_watermark_held_records)", n)
		}
		line("held for their key:", "%s of partition %d waited %.1fs behind its rejected batch%s; meanwhile %d record(s) of other keys "+
			"went past offset %d, and %d of its own", keyList(f.Wait.Keys), v.Partition, waited, held, f.Wait.Passed, f.First, f.Wait.OwnPassed)
	}
}

// keyExplanation is the closing paragraph about keys.
func keyExplanation(r *demoResult) string {
	ko := r.KeyOrder
	var f *failedBatch
	var v partitionView
	for _, pv := range r.Parts {
		if f = pv.Sink.firstFailure(); f != nil {
			v = pv
			break
		}
	}
	if r.Ordering != orderingKey {
		s := fmt.Sprintf("The records carried %d keys and the input ran with ordering: none: %d time(s) a batch went out holding a key of "+
			"another batch not yet answered, and %d of %d keys had a record land after a later record of the key (%d records). ",
			r.KeySpace, ko.Overlaps, ko.Reordered, ko.Keys, ko.Late)
		if f != nil {
			s += fmt.Sprintf("While batch %d-%d of partition %d waited, %d later record(s) of its keys landed before it. ",
				f.First, f.Last, v.Partition, f.Wait.OwnPassed)
		}
		return s + "A sink that upserts by key would have written older values over newer ones. " +
			"Run with --ordering key to see the same records kept in order per key."
	}
	s := fmt.Sprintf("With --ordering key the input ran with ordering: key on records of %d keys: a batch never went out holding a key of "+
		"another batch not yet answered (%d times), so the sink's out-of-order answers could not reorder a key, and every key's records "+
		"landed in log order the first time (%d keys out of order over %d records). ", r.KeySpace, ko.Overlaps, ko.Reordered, ko.Records)
	if f != nil {
		held := ""
		if n, ok := r.Story.keys.held[v.Partition]; ok {
			held = fmt.Sprintf(" (%d of them, kafka_watermark_held_records)", n)
		}
		s += fmt.Sprintf("When the sink rejected %s in partition %d, only its keys waited: the input held their later records back%s "+
			"while the partition's other keys went past it (%d records past offset %d), and the partition's commit still stopped short of the "+
			"failed record, so status and the stall metrics told the stall as under none. ",
			r.Story.keys.batchName(f), v.Partition, held, f.Wait.Passed, f.First)
	}
	if ko.WentBack > 0 {
		s += fmt.Sprintf("The replays delivered %d records again that were older than a record of their key already delivered. ", ko.WentBack)
	}
	return s + "Key order holds for first deliveries; a re-delivery (a replay, a restart after a crash) is at-least-once and may go " +
		"back, so a sink that must never go back stores each key's kafka_offset and skips an older one. " +
		fmt.Sprintf("Run with --ordering none --keys %d to see what none does to the same records.", r.KeySpace)
}

// keySteps are the steps of partition v's story about keys, f its first
// failed batch: the keys held while others went on, and what the wait let
// through.
func keySteps(r *demoResult, v partitionView, f *failedBatch) []step {
	k := r.Story.keys
	if !k.on || f == nil {
		return nil
	}
	var out []step
	p := v.Partition
	if at, ok := k.heldAt[p]; ok {
		out = append(out, step{when: at, text: fmt.Sprintf("The partition's other keys went on past offset %d while %s alone waited: "+
			"the input held %d of its later records back (kafka_watermark_held_records).", f.First, keyList(f.Wait.Keys), k.held[p])})
	}
	if at, ok := k.waitedAt[p]; ok {
		text := fmt.Sprintf("The sink accepted the batch. While %s waited, %d record(s) of the partition's other keys had gone past offset %d, "+
			"and %d of its own.", keyList(f.Wait.Keys), f.Wait.Passed, f.First, f.Wait.OwnPassed)
		if !k.ordered {
			text = fmt.Sprintf("The sink accepted the batch. While it waited, %d later record(s) of its %s had landed before it: "+
				"a sink upserting by key holds their newer values, and the batch's older ones landed last.", f.Wait.OwnPassed, keyList(f.Wait.Keys))
		}
		out = append(out, step{when: at, text: text})
	}
	return out
}

// stallCommit is where partition v's commit stood while status saw it
// stalled (story.replayFrom).
func stallCommit(r *demoResult, v partitionView) int64 {
	return r.Story.replayFrom(v.Partition, v.Sink.firstFailure())
}

// replayFrom is where partition p, stalled at its failed batch f, is read
// again from by a replay in place: its watermark, f's first offset under
// none; under key, the first record not delivered yet, which may be below
// (a record of another key fetched before it and still waiting), as status
// saw it (f's first offset until it did).
func (s *story) replayFrom(p int32, f *failedBatch) int64 {
	if st := s.firstStall; s.keys.ordered && st != nil && st.Report != nil {
		for _, sp := range st.Report.Partitions {
			if sp.Partition == p && sp.Stalled() {
				return sp.Committed
			}
		}
	}
	return f.First
}

// stopNote says where a commit that stopped at offset at stands against
// the failed batch f.
func stopNote(at int64, f *failedBatch) string {
	if at == f.First {
		return "the failed batch's first offset"
	}
	return fmt.Sprintf("the first record not delivered yet, below the failed batch's first offset %d "+
		"(under ordering: key a record of another key fetched before it may still wait)", f.First)
}
