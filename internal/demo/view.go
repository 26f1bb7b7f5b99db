package demo

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// partitionView is one partition at one moment, as the demo shows it: the
// broker's truth (committed offset, log end), the input's own state from its
// gauges (pending, stalled, paused) and the sink's record of deliveries.
type partitionView struct {
	Partition int32
	Start     int64 // where the group starts this run
	End       int64 // the log end once this run's records were produced
	Committed int64 // the group's committed offset on the broker, -1 if none
	LogEnd    int64 // the log end now
	Pending   int64 // kafka_watermark_pending_batches
	// MaxPending is max_pending_batches, the bound on Pending: per
	// partition, and under ordering: key on the hand-outs not answered too.
	MaxPending int64
	Stalled    bool
	Paused     bool
	Replays    int64 // kafka_watermark_stall_replays_total: replays in place so far
	// Held is kafka_watermark_held_records: records fetched and waiting
	// for their key, under ordering: key (0 under none).
	Held int64
	// DeadLettered is kafka_watermark_dead_lettered_records_total: records
	// of the partition the broker acknowledged in the dead-letter topic.
	DeadLettered int64
	Sink         sinkState
}

// resumeAt is where a restart of the group would resume the partition: the
// committed offset, or before any commit where the group started.
func (v partitionView) resumeAt() int64 {
	if v.Committed >= 0 {
		return v.Committed
	}
	return v.Start
}

// settled reports whether the partition has reached the end state the demo
// waits for; heals says whether a failed batch can be resolved in this
// process (demoOptions.heals). A partition settles when its commit reaches
// the log end, which a partition with a failed batch does only after a
// replay delivered the batch again and the sink accepted it, or after the
// batch was dead-lettered. Without either, a partition with a
// failed batch settles instead when its commit stands at that batch's first
// offset, the input reports it stalled, and every batch the input will hand
// out is answered: either all its records were delivered, or it paused with
// max_pending_batches batches pending and the sink has answered each of
// them.
func (v partitionView) settled(heals bool) bool {
	if v.Sink.InFlight > 0 {
		return false
	}
	f := v.Sink.firstFailure()
	if f == nil || heals {
		return v.resumeAt() >= v.End
	}
	if v.resumeAt() != f.First || !v.Stalled {
		return false
	}
	return int64(v.Sink.Distinct) == v.Sink.Expected || (v.Paused && int64(v.Sink.answeredAt) >= v.Pending)
}

// state is a short description of the partition, for the live table (the
// table fits in 80 columns), with its records held for their key under
// ordering: key.
func (v partitionView) state() string {
	if v.Held > 0 {
		return fmt.Sprintf("%s, %d held", v.baseState(), v.Held)
	}
	return v.baseState()
}

func (v partitionView) baseState() string {
	f := v.Sink.firstFailure()
	switch {
	case f != nil && v.Stalled && v.Paused:
		return fmt.Sprintf("STALLED at %d, paused", f.First)
	case f != nil && v.Stalled:
		return fmt.Sprintf("STALLED at %d", f.First)
	case f != nil && v.DeadLettered > 0 && v.resumeAt() > f.Last && v.resumeAt() >= v.End:
		return "dead-lettered, at the log end"
	case f != nil && v.DeadLettered > 0 && v.resumeAt() > f.Last:
		return "dead-lettered, consuming"
	case f != nil && v.DeadLettered > 0:
		return fmt.Sprintf("dead-lettered %d, committing", f.First)
	case f != nil && v.resumeAt() > f.Last && v.resumeAt() >= v.End:
		return "healed, at the log end"
	case f != nil && v.resumeAt() > f.Last:
		return "healed, consuming"
	case f != nil:
		return fmt.Sprintf("batch %d failed", f.First)
	case v.Paused && v.Pending >= v.MaxPending:
		return "paused: max pending"
	case v.Paused: // under key: its hand-outs or its held records reached their bound
		return "paused"
	case v.resumeAt() >= v.End:
		return "at the log end"
	}
	return "consuming"
}

func fmtOffset(o int64) string {
	if o < 0 {
		return "-"
	}
	return fmt.Sprint(o)
}

// pendingLimit is max_pending_batches as the demo tells it beside one
// partition's batches pending (kafka_watermark_pending_batches).
type pendingLimit struct {
	max   int64
	keyed bool // ordering: key
}

// pausedWith says what a partition that paused behind its failed batch had
// pending, beside the limit, so that neither figure reads as a breach of
// the other: "16 batches pending behind the failed one (max_pending_batches:
// 16 per partition)". Under ordering: key the limit also bounds the batches
// handed out and not yet answered, which no gauge shows, and
// max_held_records the records waiting for their key: a partition may pause
// on those with fewer batches pending, and the text says so. Above the
// limit are the batches a replay in place skips as already delivered:
// they count, but are registered at once.
func (l pendingLimit) pausedWith(pending int64) string {
	text := fmt.Sprintf("%d batches pending behind the failed one (max_pending_batches: %d per partition", pending, l.max)
	switch {
	case pending > l.max:
		text += "; the batches a replay in place skips as already delivered count too, registered at once"
	case pending < l.max && l.keyed:
		text += ", which under ordering: key also bounds the batches handed out and not yet answered, " +
			"as max_held_records bounds the records waiting for their key: one of those paused it"
	}
	return text + ")"
}

// tableLines renders the per-partition table under the given header lines,
// with a totals line.
func tableLines(views []partitionView, head ...string) []string {
	lines := append(slices.Clone(head), fmt.Sprintf("%4s %9s %9s %11s %7s %7s  %s", "part", "committed", "log end", "delivered", "pending", "replays", "state"))
	var committed, expected, delivered, dups, replays int64
	for _, v := range views {
		lines = append(lines, fmt.Sprintf("%4d %9s %9s %11s %7d %7d  %s",
			v.Partition, fmtOffset(v.Committed), fmtOffset(v.LogEnd),
			fmt.Sprintf("%d/%d", v.Sink.Distinct, v.Sink.Expected), v.Pending, v.Replays, v.state()))
		committed += v.resumeAt() - v.Start
		expected += v.Sink.Expected
		delivered += int64(v.Sink.Distinct)
		dups += int64(v.Sink.Dups)
		replays += v.Replays
	}
	lines = append(lines, fmt.Sprintf("total: committed %d/%d, delivered %d, duplicates %d, replays %d", committed, expected, delivered, dups, replays))
	return lines
}

// liveWidth is the widest line the live view draws: a line wider than the
// terminal would wrap and throw the cursor arithmetic off.
const liveWidth = 79

// liveLines is the live view: the table, then the latest status answer.
func liveLines(views []partitionView, st *statusSeen, head ...string) []string {
	lines := tableLines(views, head...)
	if st != nil {
		lines = append(lines, "")
		lines = append(lines, statusLines(st, liveWidth)...)
	}
	return lines
}

// progressLine is the periodic line printed when the output is not a
// terminal: totals and the partitions worth a look. The batches pending are
// every partition's, so the line says so beside max_pending_batches, which
// bounds each partition's: 120 pending in 8 partitions is no breach of 16.
func progressLine(elapsed time.Duration, views []partitionView, maxPending int) string {
	var committed, expected, delivered, pending int64
	var stalled, paused, replayed, held []string
	for _, v := range views {
		committed += v.resumeAt() - v.Start
		expected += v.Sink.Expected
		delivered += int64(v.Sink.Distinct)
		pending += v.Pending
		if v.Stalled {
			stalled = append(stalled, fmt.Sprintf("%d@%d", v.Partition, v.resumeAt()))
		}
		if v.Paused {
			paused = append(paused, fmt.Sprint(v.Partition))
		}
		if v.Replays > 0 {
			replayed = append(replayed, fmt.Sprintf("%d:%d", v.Partition, v.Replays))
		}
		if v.Held > 0 {
			held = append(held, fmt.Sprintf("%d:%d", v.Partition, v.Held))
		}
	}
	s := fmt.Sprintf("[%5.1fs] committed %d/%d, delivered %d/%d, %d batches pending in %d partitions (max_pending_batches %d each)",
		elapsed.Seconds(), committed, expected, delivered, expected, pending, len(views), maxPending)
	if len(stalled) > 0 {
		s += ", stalled " + strings.Join(stalled, " ")
	}
	if len(paused) > 0 {
		s += ", paused " + strings.Join(paused, " ")
	}
	if len(replayed) > 0 {
		s += ", replays " + strings.Join(replayed, " ")
	}
	if len(held) > 0 { // ordering: key: records waiting for their key
		s += ", held " + strings.Join(held, " ")
	}
	return s
}

// liveTable redraws a block of lines in place with ANSI escape codes: move
// the cursor up to the block's first line, rewrite each line and clear
// what is left of it.
type liveTable struct {
	w     io.Writer
	drawn int
}

func (l *liveTable) start() { fmt.Fprint(l.w, "\x1b[?25l") } // hide the cursor
func (l *liveTable) end()   { fmt.Fprint(l.w, "\x1b[?25h") } // show it again

func (l *liveTable) draw(lines []string) {
	var b strings.Builder
	if l.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF", l.drawn)
	}
	for _, line := range lines {
		// Clip what is still too wide (liveWidth).
		if r := []rune(line); len(r) > liveWidth {
			line = string(r[:liveWidth-1]) + "~"
		}
		b.WriteString(line)
		b.WriteString("\x1b[K\n")
	}
	b.WriteString("\x1b[J") // the block may have shrunk
	l.drawn = len(lines)
	_, _ = io.WriteString(l.w, b.String())
}

// isTerminal reports whether w is a character device (a terminal), without
// a dependency beyond the standard library.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
