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
	Pending   int64
	Stalled   bool
	Paused    bool
	Sink      sinkState
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
// waits for. A partition without failures settles when its commit reaches
// the log end. A partition with a failed batch settles when its commit
// stands at that batch's first offset, the input reports it stalled, and
// every batch the input will hand out is answered: either all its records
// were delivered, or it paused with max_pending_batches batches pending and
// the sink has answered each of them.
func (v partitionView) settled() bool {
	if v.Sink.InFlight > 0 {
		return false
	}
	f := v.Sink.firstFailure()
	if f == nil {
		return v.resumeAt() >= v.End
	}
	if v.resumeAt() != f.First || !v.Stalled {
		return false
	}
	return int64(v.Sink.Distinct) == v.Sink.Expected || (v.Paused && int64(v.Sink.answeredAt) >= v.Pending)
}

// state is a short description of the partition, for the live table (the
// table fits in 80 columns).
func (v partitionView) state() string {
	f := v.Sink.firstFailure()
	switch {
	case f != nil && v.Stalled && v.Paused:
		return fmt.Sprintf("STALLED at %d, paused", f.First)
	case f != nil && v.Stalled:
		return fmt.Sprintf("STALLED at %d", f.First)
	case f != nil:
		return fmt.Sprintf("batch %d failed", f.First)
	case v.Paused:
		return "paused: max pending"
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

// tableLines renders the per-partition table under the given header lines,
// with a totals line.
func tableLines(views []partitionView, head ...string) []string {
	lines := append(slices.Clone(head), fmt.Sprintf("%4s %10s %10s %13s %7s  %s", "part", "committed", "log end", "delivered", "pending", "state"))
	var committed, expected, delivered, dups int64
	for _, v := range views {
		lines = append(lines, fmt.Sprintf("%4d %10s %10s %13s %7d  %s",
			v.Partition, fmtOffset(v.Committed), fmtOffset(v.LogEnd),
			fmt.Sprintf("%d/%d", v.Sink.Distinct, v.Sink.Expected), v.Pending, v.state()))
		committed += v.resumeAt() - v.Start
		expected += v.Sink.Expected
		delivered += int64(v.Sink.Distinct)
		dups += int64(v.Sink.Dups)
	}
	lines = append(lines, fmt.Sprintf("total: committed %d/%d, delivered %d, duplicates %d", committed, expected, delivered, dups))
	return lines
}

// progressLine is the periodic line printed when the output is not a
// terminal: totals and the partitions worth a look.
func progressLine(elapsed time.Duration, views []partitionView) string {
	var committed, expected, delivered, pending int64
	var stalled, paused []string
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
	}
	s := fmt.Sprintf("[%5.1fs] committed %d/%d, delivered %d/%d, %d batches pending",
		elapsed.Seconds(), committed, expected, delivered, expected, pending)
	if len(stalled) > 0 {
		s += ", stalled " + strings.Join(stalled, " ")
	}
	if len(paused) > 0 {
		s += ", paused " + strings.Join(paused, " ")
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
		// A line wider than the terminal would wrap and throw the cursor
		// arithmetic off: clip to the narrowest common width.
		if r := []rune(line); len(r) > 79 {
			line = string(r[:78]) + "~"
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

// writeSummary prints the end-of-run summary and the explanation.
func writeSummary(w io.Writer, r *demoResult) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("")
	p("Summary (%.1fs, seed %d)", r.Elapsed.Seconds(), r.Seed)
	if !r.Settled {
		p("  stopped (%s) before every partition settled: the figures are as of the stop", r.StopReason)
	}
	p("  records produced:           %d (%d partitions, %d-byte values, topic %s)", r.Produced, len(r.Parts), r.RecordSize, r.Topic)
	p("  distinct records delivered: %d of %d", r.Distinct, r.Expected)
	p("  duplicate deliveries:       %d", r.Duplicates)
	if r.Expected > int64(r.Distinct) {
		p("  not delivered:              %d (behind a failed batch, in partitions paused at max_pending_batches=%d)", r.Expected-int64(r.Distinct), r.MaxPending)
	}
	p("")
	p("  committed offsets asked of the broker after the pipeline stopped:")
	p("  %5s %10s %10s %8s %13s", "part", "committed", "log end", "behind", "delivered")
	for _, v := range r.Parts {
		note := ""
		if f := v.Sink.firstFailure(); f != nil {
			note = fmt.Sprintf("STALLED at the failed batch %d-%d", f.First, f.Last)
			if v.Paused {
				note += fmt.Sprintf(", paused with %d batches pending", v.Pending)
			}
		} else if v.resumeAt() >= v.End {
			note = "at the log end"
		}
		p("%s", strings.TrimRight(fmt.Sprintf("  %5d %10s %10s %8d %13s  %s", v.Partition, fmtOffset(v.Committed), fmtOffset(v.LogEnd),
			max(v.LogEnd-v.resumeAt(), 0), fmt.Sprintf("%d/%d", v.Sink.Distinct, v.Sink.Expected), note), " "))
	}
	if len(r.Failures) > 0 {
		p("")
		p("  Stalled partitions:")
		for _, v := range r.Parts {
			f := v.Sink.firstFailure()
			if f == nil {
				continue
			}
			if v.Committed < 0 {
				p("    partition %d: nothing committed (the first batch failed): the group resumes at %d, the failed batch's first offset", v.Partition, v.Start)
			} else {
				p("    partition %d: committed offset %d, the failed batch's first offset is %d", v.Partition, v.Committed, f.First)
			}
			for _, fb := range v.Sink.Failed {
				p("      batch %d-%d failed: %s", fb.First, fb.Last, fb.Err)
			}
		}
	}
	p("")
	for _, line := range wrap(explanation(r), 100) {
		p("  %s", line)
	}
}

// explanation is the closing paragraph: what the run showed about the
// guarantee.
func explanation(r *demoResult) string {
	acks := fmt.Sprintf("The sink acknowledged batches out of order (up to %d in flight, each after 0-%v), "+
		"and the input committed each partition only through its contiguous prefix of acknowledged batches.",
		r.MaxInFlight, r.MaxLatency)
	var stalled []partitionView
	for _, v := range r.Parts {
		if v.Sink.firstFailure() != nil {
			stalled = append(stalled, v)
		}
	}
	if len(stalled) == 0 {
		return acks + " No batch failed, so every partition's commit reached its log end. " +
			"Run with --fail-batches 1 (the default) to watch a failed batch stall its partition."
	}
	v := stalled[0]
	f := v.Sink.firstFailure()
	s := acks + fmt.Sprintf(" In partition %d the batch at offsets %d-%d failed, so that partition's commit stopped exactly at offset %d, "+
		"the failed batch's first offset, although batches after it were acknowledged; "+
		"once %d batches were pending behind the failure the partition paused (max_pending_batches), "+
		"while the other partitions went on and committed to their log end.", v.Partition, f.First, f.Last, f.First, r.MaxPending)
	if len(stalled) > 1 {
		s += fmt.Sprintf(" The same holds for the other %d stalled partition(s) listed above.", len(stalled)-1)
	}
	s += fmt.Sprintf(" Nothing past offset %d is lost: a restart of group %s resumes partition %d at offset %d and delivers the failed batch "+
		"and everything after it again (at-least-once: the batches acknowledged after it are delivered twice). "+
		"To let a partition move past records a sink rejects, route them to a dead-letter output (config/dead-letter.yaml): "+
		"a record the dead-letter output accepts counts as delivered.", f.First, r.Group, v.Partition, f.First)
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
