package demo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// statusSeen is one answer of `watermark-connect status` for the demo's
// group, asked of the demo's broker as the command asks it: the report, its
// text output, and the exit status the command would return.
type statusSeen struct {
	At     time.Duration // since the demo began
	Report *status.Report
	Text   string // WriteText's output; the reason when it could not tell
	Exit   int    // status.ExitHealthy, ExitStalled, ExitLost, ExitNotConsumed or ExitUnknown
}

// stalled reports whether the answer names a stalled partition.
func (s *statusSeen) stalled() bool { return s != nil && s.Exit == status.ExitStalled }

// lastLine is the answer's closing line: its verdict ("group g: healthy,
// none of 8 partitions stalled").
func (s *statusSeen) lastLine() string {
	lines := strings.Split(strings.TrimRight(s.Text, "\n"), "\n")
	return lines[len(lines)-1]
}

// askStatus runs what `watermark-connect status --topics <topic>` runs,
// status.Collect with the demo cluster's own admin client, and renders it
// as the command does.
func (ob observer) askStatus(ctx context.Context, at time.Duration) *statusSeen {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	seen := &statusSeen{At: at}
	r, err := status.Collect(ctx, ob.cluster.adm, status.Query{Group: ob.o.Group, Topics: []string{ob.o.Topic}})
	if err == nil {
		var b bytes.Buffer
		if err = status.WriteText(&b, r); err == nil {
			seen.Report, seen.Text, seen.Exit = r, b.String(), r.ExitStatus()
			return seen
		}
	}
	seen.Text, seen.Exit = fmt.Sprintf("status: %v\n", err), status.ExitUnknown
	return seen
}

// statusLines is the answer for the live view, which must fit a terminal:
// a heading, then the answer abridged and wrapped at width.
func statusLines(s *statusSeen, width int) []string {
	head := fmt.Sprintf("watermark-connect status, asked of the broker at %.1fs: exit %d", s.At.Seconds(), s.Exit)
	return append([]string{head}, wrapHard(s.abridged(), width)...)
}

// abridged is the answer's text without the rows of the partitions that are
// not stalled, which it counts instead: the table's header, the stalled
// rows, then what follows the table (the verdict).
func (s *statusSeen) abridged() []string {
	lines := strings.Split(strings.TrimRight(s.Text, "\n"), "\n")
	if s.Report == nil || len(lines) < len(s.Report.Partitions)+1 {
		return lines
	}
	rows, stalled := len(s.Report.Partitions), s.Report.Stalled()
	out := lines[:1:1]
	if stalled == 0 {
		out = nil // a header over no rows
	}
	for i, line := range lines[1:] {
		if i >= rows || s.Report.Partitions[i].Stalled() {
			out = append(out, line)
		}
		if i == rows-1 && rows > stalled {
			out = append(out, fmt.Sprintf("(%d partition(s) not stalled left out)", rows-stalled))
		}
	}
	return out
}

// wrapHard breaks each line longer than width at a space where it can,
// indenting the continuation lines.
func wrapHard(lines []string, width int) []string {
	const indent = "    "
	var out []string
	for _, line := range lines {
		for len(line) > width {
			cut := strings.LastIndex(line[:width], " ")
			if cut <= len(indent) {
				cut = width
			}
			out = append(out, strings.TrimRight(line[:cut], " "))
			line = indent + strings.TrimLeft(line[cut:], " ")
		}
		out = append(out, line)
	}
	return out
}
