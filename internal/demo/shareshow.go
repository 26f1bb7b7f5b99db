package demo

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// writeShareSummary prints what demo --share saw: per member what it was
// handed and what became of it, every record delivered more than once with
// each delivery's member and attempt, the dead letters as the broker holds
// them, and the totals.
func writeShareSummary(w io.Writer, r *shareResult) {
	fmt.Fprintf(w, "\nsummary (seed %d, %.1fs):\n", r.Seed, r.Elapsed.Seconds())
	type tally struct{ accepted, released, lettered int }
	by := map[string]*tally{}
	perOffset := map[int64][]shareDelivery{}
	for _, d := range r.Deliveries {
		t := by[d.Member]
		if t == nil {
			t = &tally{}
			by[d.Member] = t
		}
		switch {
		case !d.Failed:
			t.accepted++
		case d.Attempt >= shareMaxAttempts:
			t.lettered++
		default:
			t.released++
		}
		perOffset[d.Offset] = append(perOffset[d.Offset], d)
	}
	fmt.Fprintln(w, "who got what:")
	for i := range shareMembers {
		m := memberName(i)
		t := by[m]
		if t == nil {
			t = &tally{}
		}
		fmt.Fprintf(w, "  %s: %d records accepted, %d failed and released, %d dead-lettered\n", m, t.accepted, t.released, t.lettered)
	}

	fmt.Fprintln(w, "records delivered more than once (each delivery: attempt, member, verdict):")
	var offs []int64
	for o, ds := range perOffset {
		if len(ds) > 1 {
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	moved, again := 0, 0
	for _, o := range offs {
		ds := perOffset[o]
		var steps []string
		for i, d := range ds {
			v := "accepted"
			switch {
			case d.Failed && d.Attempt >= shareMaxAttempts:
				v = "failed: dead-lettered"
			case d.Failed:
				v = "failed: released"
			}
			steps = append(steps, fmt.Sprintf("attempt %d %s %s", d.Attempt, d.Member, v))
			if i > 0 {
				again++
				if d.Member != ds[i-1].Member {
					moved++
				}
			}
		}
		label := ""
		if o == r.Poison {
			label = " (poison)"
		}
		fmt.Fprintf(w, "  offset %d%s: %s\n", o, label, strings.Join(steps, " -> "))
	}
	fmt.Fprintf(w, "  %d deliveries after a release, %d of them to another member than the one that released it\n", again, moved)

	fmt.Fprintf(w, "dead-letter topic %s, read back from the broker:", r.DeadLetterTopic)
	if r.LettersErr != nil {
		fmt.Fprintf(w, " %v", r.LettersErr)
	}
	fmt.Fprintln(w)
	for _, l := range r.Letters {
		if l.Err != nil {
			fmt.Fprintf(w, "  offset %d: headers do not parse: %v\n", l.Offset, l.Err)
			continue
		}
		p := l.Prov
		fmt.Fprintf(w, "  %s/%d@%d after %d attempts (error %q), dead-lettered by %s\n", p.Topic, p.Partition, p.Offset, p.Attempts, p.Error, p.Member)
	}

	once, dups, lost := 0, 0, 0
	for o := range int64(r.Records) {
		switch n := r.Accepted[o]; {
		case o == r.Poison:
		case n == 0:
			lost++
		case n == 1:
			once++
		default:
			once++
			dups += n - 1
		}
	}
	verdict := "every record accepted or dead-lettered"
	if !r.Settled {
		verdict = "NOT SETTLED before --duration"
	}
	fmt.Fprintf(w, "%s: %d of %d records accepted (%d duplicates), %d dead-lettered, %d never accepted\n",
		verdict, once, r.Records, dups, len(r.Letters), lost)
}
