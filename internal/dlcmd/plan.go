package dlcmd

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
)

// The check pass of redrive: which dead letters it moves, where each goes,
// and whether every one can be placed, all known before anything is
// produced. It keeps runs of offsets, not records, so that checking 200 MB
// of dead letters costs memory per run (one for a range of one origin
// topic), not per byte; the produce pass reads the records again.

// run is consecutive offsets of one dead-letter partition, every one a
// selected record going to dest.
type run struct {
	first, last int64
	dest        string
}

// plan is a checked selection: per dead-letter partition, its runs in
// offset order, none empty, none overlapping. A value once built.
type plan struct {
	runs  map[int32][]run
	total int // records in all runs
}

// after counts in t every planned record after partition p offset o, in
// the order produce goes (partition, then offset): what was not tried when
// the run stopped there. p -1 counts them all.
func (pl plan) after(p int32, o int64, t tally) {
	for _, q := range slices.Sorted(maps.Keys(pl.runs)) {
		if q < p {
			continue
		}
		for _, r := range pl.runs[q] {
			first := r.first
			if q == p {
				first = max(first, o+1)
			}
			if first <= r.last {
				t.addRun(r.dest, q, first, r.last)
			}
		}
	}
}

// selector builds the plan from the records of the check pass, which come
// in offset order within a partition (scan's order), and collects what it
// cannot place: every unparsable record in the offsets read, when the
// destination or the time range needs the provenance, and the first record
// that would go back to the dead-letter topic itself.
type selector struct {
	sel        Selection
	to         string // --to; "" for each record's origin topic
	dlTopic    string
	plan       plan
	unparsable []Unparsable
	loop       *kgo.Record // the first record whose destination is dlTopic
}

func newSelector(sel Selection, to, dlTopic string) *selector {
	return &selector{sel: sel, to: to, dlTopic: dlTopic, plan: plan{runs: map[int32][]run{}}}
}

func (s *selector) add(r *kgo.Record) {
	dest, ok := s.place(r)
	if !ok {
		return
	}
	if dest == s.dlTopic && s.loop == nil {
		s.loop = r
	}
	s.plan.total++
	runs := s.plan.runs[r.Partition]
	if n := len(runs); n > 0 && runs[n-1].last == r.Offset-1 && runs[n-1].dest == dest {
		runs[n-1].last = r.Offset
		return
	}
	s.plan.runs[r.Partition] = append(runs, run{first: r.Offset, last: r.Offset, dest: dest})
}

// place says whether r is selected and where it goes.
func (s *selector) place(r *kgo.Record) (string, bool) {
	if s.to != "" && !s.sel.byTime() {
		return s.to, true
	}
	p, err := deadletter.Parse(r)
	if err != nil {
		s.unparsable = append(s.unparsable, Unparsable{Partition: r.Partition, Offset: r.Offset, Reason: err.Error()})
		return "", false
	}
	if !s.sel.inTime(p.Timestamp) {
		return "", false
	}
	return cmp.Or(s.to, p.Topic), true
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
	if s.loop != nil {
		errs = append(errs, fmt.Errorf("%s/%d@%d would go back to the dead-letter topic %s itself", s.dlTopic, s.loop.Partition, s.loop.Offset, s.dlTopic))
	}
	return errors.Join(errs...)
}
