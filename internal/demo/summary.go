package demo

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// writeSummary prints the end-of-run summary: the figures, the committed
// offsets, each failed batch's story step by step, and the explanation.
func writeSummary(w io.Writer, r *demoResult) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("")
	p("Summary (%.1fs, seed %d)", r.Elapsed.Seconds(), r.Seed)
	if !r.Settled {
		p("  stopped (%s) before every partition settled: the figures are as of the stop", r.StopReason)
	}
	p("  records produced:           %d (%d partitions, %d-byte values, topic %s)", r.Produced, len(r.Parts), r.RecordSize, r.Topic)
	p("  distinct records delivered: %d of %d", r.Distinct, r.Expected)
	p("  duplicate deliveries:       %d%s", r.Duplicates, duplicatesNote(r))
	if r.Expected > int64(r.Distinct) {
		p("  not delivered:              %d (behind a failed batch, in partitions paused at max_pending_batches=%d)", r.Expected-int64(r.Distinct), r.MaxPending)
	}
	if r.ReplayAfter > 0 {
		p("  replays in place:           %d (kafka_watermark_stall_replays_total; stall_replay_after %v)", r.Replays, r.ReplayAfter)
	} else {
		p("  replays in place:           %d (stall_replay_after 0s: never)", r.Replays)
	}
	if r.KeySpace > 0 {
		writeKeyOrder(w, r)
	}
	if r.DeadLetterAfter > 0 {
		p("  dead-lettered records:      %s", deadLettersNote(r))
	}
	if st := r.Story.final; st != nil {
		p("  status after the stop:      exit %d: %s", st.Exit, st.lastLine())
	}
	p("")
	p("  committed offsets asked of the broker after the pipeline stopped:")
	p("  %5s %10s %10s %8s %13s", "part", "committed", "log end", "behind", "delivered")
	for _, v := range r.Parts {
		p("%s", strings.TrimRight(fmt.Sprintf("  %5d %10s %10s %8d %13s  %s", v.Partition, fmtOffset(v.Committed), fmtOffset(v.LogEnd),
			max(v.LogEnd-v.resumeAt(), 0), fmt.Sprintf("%d/%d", v.Sink.Distinct, v.Sink.Expected), partitionNote(v, r.Story.limit)), " "))
	}
	for _, v := range r.Parts {
		if v.Sink.firstFailure() == nil {
			continue
		}
		p("")
		p("  Partition %d, step by step:", v.Partition)
		switch {
		case v.healed():
		case v.Committed < 0:
			p("    partition %d: nothing committed (the first batch failed): the group resumes at %d, the failed batch's first offset", v.Partition, v.Start)
		default:
			p("    partition %d: committed offset %d, the failed batch's first offset is %d", v.Partition, v.Committed, v.Sink.firstFailure().First)
		}
		for _, s := range steps(r, v) {
			lines := wrap(s.text, 88)
			for i, line := range lines {
				at := ""
				if i == 0 {
					at = s.at
				}
				p("    %6s  %s", at, line)
			}
			for _, line := range s.quote {
				p("              %s", line)
			}
		}
	}
	if r.DeadLetterAfter > 0 {
		writeDeadLetters(w, r)
	}
	p("")
	for _, line := range wrap(explanation(r), 100) {
		p("  %s", line)
	}
	if r.KeySpace > 0 {
		p("")
		for _, line := range wrap(keyExplanation(r), 100) {
			p("  %s", line)
		}
	}
}

// healed reports whether the partition's commit passed its failed batch.
func (v partitionView) healed() bool {
	f := v.Sink.firstFailure()
	return f != nil && v.resumeAt() > f.Last
}

// partitionNote is the summary table's note on one partition.
func partitionNote(v partitionView, limit pendingLimit) string {
	f := v.Sink.firstFailure()
	switch {
	case f != nil && v.healed() && v.DeadLettered > 0:
		note := fmt.Sprintf("batch %d-%d dead-lettered after %d attempt(s) (%d replay(s)): %d record(s)", f.First, f.Last, len(f.Deliveries), v.Replays, v.DeadLettered)
		if v.resumeAt() >= v.End {
			note += ", at the log end"
		}
		return note
	case f != nil && v.healed():
		note := fmt.Sprintf("healed in place after %d replay(s): batch %d-%d rejected %d time(s)", v.Replays, f.First, f.Last, f.rejections())
		if v.resumeAt() >= v.End {
			note += ", at the log end"
		}
		return note
	case f != nil:
		note := fmt.Sprintf("STALLED at the failed batch %d-%d", f.First, f.Last)
		if v.Paused {
			note += ", paused with " + limit.pausedWith(v.Pending)
		}
		if v.Replays > 0 {
			note += fmt.Sprintf(", %d replay(s)", v.Replays)
		}
		return note
	case v.resumeAt() >= v.End:
		return "at the log end"
	}
	return ""
}

// duplicatesNote says where the duplicates came from when every one of them
// is a re-delivery of a failed batch.
func duplicatesNote(r *demoResult) string {
	var redelivered int64
	var parts []string
	for _, f := range r.Failures {
		if n := len(f.Deliveries) - 1; n > 0 {
			redelivered += f.records() * int64(n)
			parts = append(parts, fmt.Sprintf("%d records x %d more deliveries", f.records(), n))
		}
	}
	if r.Duplicates == 0 || redelivered != int64(r.Duplicates) {
		return ""
	}
	return fmt.Sprintf(" (only the failed batch's re-deliveries: %s)", strings.Join(parts, ", "))
}

// step is one line of a failed batch's story: when, what, and the lines it
// quotes (status's output).
type step struct {
	when  time.Duration
	at    string
	text  string
	quote []string
}

// steps tells the story of partition v's failed batches, in order of time.
func steps(r *demoResult, v partitionView) []step {
	var out []step
	add := func(when time.Duration, text string, quote ...string) {
		out = append(out, step{when: when, at: fmt.Sprintf("%.1fs", when.Seconds()), text: text, quote: quote})
	}
	since := func(t time.Time) time.Duration { return t.Sub(r.Began) }
	st := r.Story
	for _, f := range v.Sink.Failed {
		if len(f.Deliveries) == 0 {
			continue
		}
		first := f.Deliveries[0].Answered
		if first.IsZero() {
			first = f.Deliveries[0].Start
		}
		until := fmt.Sprintf("It goes on rejecting this batch until %.1fs.", since(f.Until).Seconds())
		if f.Poison {
			until = fmt.Sprintf("That was delivery attempt %d of %d (dead_letter.max_attempts); the sink rejects this batch on every delivery, "+
				"a poison batch only the dead-letter topic can take.", cmp.Or(f.Deliveries[0].Attempt, 1), r.DeadLetterAfter)
		}
		add(since(first), fmt.Sprintf("The sink rejected %s: %s. %s "+
			"The partition stalled: its commit cannot pass offset %d, the batch's first offset, however many batches after it are acknowledged.",
			st.keys.batchName(&f), f.Err, until, f.First))
		for i, d := range f.Deliveries[1:] {
			k := i + 1
			wait := r.ReplayAfter << min(k-1, 4)
			why := fmt.Sprintf("%v (stall_replay_after) after the stall", wait)
			if k > 1 {
				why = fmt.Sprintf("%v after it failed again (the wait doubles for each replay at the same offset)", wait)
			}
			verdict := "the sink rejected it again"
			if f.Poison {
				verdict = fmt.Sprintf("the sink rejected it again (delivery attempt %d of %d)", cmp.Or(d.Attempt, k+1), r.DeadLetterAfter)
			}
			switch {
			case d.Accepted:
				verdict = "the sink accepted it"
			case d.Answered.IsZero():
				verdict = "it was still in flight at the stop"
			}
			skipping := "the batches already delivered"
			if r.Ordering == orderingKey {
				skipping = "the records already delivered"
			}
			add(since(d.Start), fmt.Sprintf("Replay %d in place, %s: the input ended the partition's epoch and read it again from offset %d, "+
				"in this process, without a restart, skipping %s; the failed batch was delivered again and %s.",
				k, why, st.replayFrom(v.Partition, &f), skipping, verdict))
		}
	}
	if s := st.firstStall; s != nil && s.Report != nil && slices.ContainsFunc(s.Report.Partitions, func(p status.Partition) bool {
		return p.Partition == v.Partition && p.Stalled()
	}) {
		add(s.At, fmt.Sprintf("watermark-connect status, asked of the broker (the commit metadata carries the stall), saw it and exited %d:", s.Exit),
			s.abridged()...)
	}
	if at, ok := st.pausedAt[v.Partition]; ok {
		add(at, fmt.Sprintf("With %s, the partition paused its fetching; the other partitions went on.", st.limit.pausedWith(st.pausedWith[v.Partition])))
	}
	f := v.Sink.firstFailure()
	for _, ks := range keySteps(r, v, f) {
		add(ks.when, ks.text)
	}
	if at, ok := st.deadLetteredAt[v.Partition]; ok {
		add(at, fmt.Sprintf("After attempt %d (dead_letter.max_attempts) the input wrote the batch's %d records to the dead-letter topic %s, "+
			"each with its key, value and timestamp and dead_letter_* headers saying where it came from and why; "+
			"once the broker acknowledged the write, they counted as delivered.", r.DeadLetterAfter, v.DeadLettered, r.DeadLetterTopic))
	}
	if at, ok := st.passedAt[v.Partition]; ok {
		what := "the failed batch"
		if v.DeadLettered > 0 {
			what = "the dead-lettered batch"
		}
		text := fmt.Sprintf("The commit moved past %s, over everything delivered behind it, to %d.", what, v.resumeAt())
		if end, ok := st.reachedEnd[v.Partition]; ok {
			text = fmt.Sprintf("The commit moved past %s, over everything delivered behind it, and reached the log end (%d) at %.1fs: "+
				"the partition healed without a restart.", what, v.End, end.Seconds())
		}
		add(at, text)
	}
	if s := st.healthyAgain; s != nil && v.healed() {
		add(s.At, fmt.Sprintf("watermark-connect status: %s (exit %d).", s.lastLine(), s.Exit))
	}
	slices.SortStableFunc(out, func(a, b step) int { return cmp.Compare(a.when, b.when) })
	// The conclusions come last.
	end := r.Elapsed
	if st.final != nil {
		end = st.final.At
	}
	if r.ReplayAfter <= 0 && !v.healed() {
		add(end, fmt.Sprintf("With stall_replay_after 0s nothing delivers the batch again in this process (the sink accepts it from %.1fs on): "+
			"the partition stays stalled at offset %d until a restart.", since(f.Until).Seconds(), f.First))
	}
	if s := st.final; s != nil && !v.healed() {
		add(s.At, fmt.Sprintf("After the stop, watermark-connect status: %s (exit %d).", s.lastLine(), s.Exit))
	}
	return out
}

// explanation is the closing paragraph: what the run showed about the
// guarantee.
func explanation(r *demoResult) string {
	acks := fmt.Sprintf("The sink acknowledged batches out of order (up to %d in flight, each after 0-%v), "+
		"and the input committed each partition only through its contiguous prefix of acknowledged batches.",
		r.MaxInFlight, r.MaxLatency)
	var failed []partitionView
	for _, v := range r.Parts {
		if v.Sink.firstFailure() != nil {
			failed = append(failed, v)
		}
	}
	if len(failed) == 0 {
		return acks + " No batch failed, so every partition's commit reached its log end. " +
			"Run with --fail-batches 1 (the default) to watch a failed batch stall its partition."
	}
	v := failed[0]
	f := v.Sink.firstFailure()
	s := acks + fmt.Sprintf(" In partition %d the batch at offsets %d-%d failed, so that partition's commit stopped exactly at offset %d, "+
		"the failed batch's first offset, although batches after it were acknowledged; ", v.Partition, f.First, f.Last, f.First)
	if r.Ordering == orderingKey {
		s = acks + fmt.Sprintf(" In partition %d %s failed, so that partition's commit stopped at offset %d, %s, although records after it "+
			"were acknowledged; ", v.Partition, r.Story.keys.batchName(f), stallCommit(r, v), stopNote(stallCommit(r, v), f))
	}
	if _, ok := r.Story.pausedAt[v.Partition]; ok {
		s += fmt.Sprintf("once it had %s the partition paused, ", r.Story.limit.pausedWith(r.Story.pausedWith[v.Partition]))
	} else {
		s += fmt.Sprintf("it went on delivering the batches after it (up to max_pending_batches=%d pending), ", r.MaxPending)
	}
	s += "while the other partitions went on and committed to their log end. " +
		"Every commit of the stalled partition carried the stall in its metadata, which is how watermark-connect status, " +
		"reading nothing but the broker, named the failed batch and exited 1."
	switch {
	case r.DeadLetterAfter > 0 && v.healed() && v.DeadLettered > 0:
		s += fmt.Sprintf(" With --dead-letter-after %d the sink rejected the batch on every delivery. ", r.DeadLetterAfter)
		if r.DeadLetterAfter > 1 {
			s += fmt.Sprintf("Each replay in place (stall_replay_after %v, the wait doubling at the same offset) delivered it once more, "+
				"kafka_delivery_attempt counting up, and ", r.ReplayAfter)
		}
		s += fmt.Sprintf("after attempt %d (dead_letter.max_attempts) the input wrote its records to the dead-letter topic %s. "+
			"Only once the broker had acknowledged that write did they count as delivered: the commit then moved over everything delivered "+
			"behind the batch to the log end, without a restart. The dead letters read back from the broker say where each came from, "+
			"after how many attempts and with which error. Delivered or dead-lettered, never neither; a crash between the write and the commit "+
			"would write them again (at-least-once).", r.DeadLetterAfter, r.DeadLetterTopic)
	case r.DeadLetterAfter > 0 && !v.healed():
		s += fmt.Sprintf(" With --dead-letter-after %d the sink rejected the batch on every delivery, but the stop came before it was dead-lettered "+
			"(%d of %d attempts): partition %d is still stalled at offset %d and nothing past it is lost; the attempts are carried in the commit "+
			"metadata, so a restart goes on counting them.", r.DeadLetterAfter, len(f.Deliveries), r.DeadLetterAfter, v.Partition, f.First)
	case r.ReplayAfter <= 0:
		s += fmt.Sprintf(" With --stall-replay-after 0 (stall_replay_after: 0s) nothing in the process delivers the failed batch again: "+
			"partition %d stays stalled at offset %d, the failed batch's first offset, until a restart, as it did before replays in place, "+
			"and status exits 1 at the end. Nothing past offset %d is lost: a restart of group %s resumes partition %d at offset %d "+
			"and, from the delivered ranges in the commit metadata, delivers again only what was not delivered. "+
			"Run without --stall-replay-after 0 to watch the partition heal in place.",
			v.Partition, f.First, f.First, r.Group, v.Partition, f.First)
	case v.healed():
		skipped := fmt.Sprintf("skipping the batches already delivered, so the only records delivered twice were the failed batch's "+
			"(%d duplicate deliveries in all).", r.Duplicates)
		if r.Ordering == orderingKey {
			skipped = fmt.Sprintf("skipping the records already delivered, out of offset order as they were, so the only records "+
				"delivered twice were the failed batch's (%d duplicate deliveries in all).", r.Duplicates)
		}
		s += fmt.Sprintf(" Once the batch had failed for stall_replay_after (%v), the input replayed the partition in place: "+
			"it ended the partition's epoch and read it again from offset %d in the same process, %s", r.ReplayAfter, r.Story.replayFrom(v.Partition, f), skipped)
		if v.Replays > 1 {
			s += fmt.Sprintf(" The sink still failed at the first replay; the next waited twice as long (replays at one offset back off, up to 16 times), "+
				"%d replays in all.", v.Replays)
		}
		s += " When the sink accepted the batch, the commit jumped over everything delivered behind it to the log end and status exited 0 again: " +
			"the partition healed without a restart. A batch a sink never accepts goes on being replayed, with a growing wait, and keeps its partition stalled: " +
			"give the input a dead-letter topic for such records (dead_letter, config/dead-letter.yaml; --dead-letter-after 3 shows it)."
	default:
		s += fmt.Sprintf(" The input replayed the partition in place %d time(s) (stall_replay_after %v, the wait doubling at the same offset), "+
			"but the sink had not accepted the batch by the stop: partition %d is still stalled at offset %d and nothing past it is lost. "+
			"To let a partition move past records a sink rejects, give the input a dead-letter topic (dead_letter, config/dead-letter.yaml; "+
			"--dead-letter-after 3 shows it).",
			v.Replays, r.ReplayAfter, v.Partition, f.First)
	}
	if len(failed) > 1 {
		s += fmt.Sprintf(" The same holds for the other %d partition(s) with a failed batch listed above.", len(failed)-1)
	}
	return s
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
