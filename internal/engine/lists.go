package engine

// lists are the partitions each periodic walk visits, so that a walk costs
// what changed rather than what is assigned (10,000 idle partitions cost a
// commit tick and a gauge refresh nothing). Ended epochs are dropped by the
// walk that meets them. Owned by the owner goroutine.
type lists struct {
	// dirty: p.dirty, a commit may be due (commit, markDirty).
	dirty partList
	// gauges: a gauge may show something else at the next refresh,
	// because an event changed a value, or because the partition has
	// pending batches or is stalled, so its age moves with the clock
	// (publishGauges).
	gauges partList
	// failed: the batch at the watermark failed for good (checkStalls).
	failed partList
	// paused: fetching is paused at the pending limit (the log-end
	// queries).
	paused partList
	// losses: commits carry a loss report, until it expires (loss.go).
	losses partList
}

func newLists() lists {
	return lists{
		dirty:  partList{bit: listDirty},
		gauges: partList{bit: listGauges},
		failed: partList{bit: listFailed},
		paused: partList{bit: listPaused},
		losses: partList{bit: listLoss},
	}
}

// partList is a list of partitions, each on it at most once: its bit in
// partState.listed says a partition is on it. The owner keeps one for each
// walk that must cost what changed, not what is assigned (lists.dirty and
// the others). An epoch that has ended may still be listed: every walk
// checks p.live() and drops the ones that fail. Owned by the
// owner goroutine.
type partList struct {
	bit   listBits
	parts []*partState
}

type listBits uint8

// add lists p, unless it is listed already.
func (l *partList) add(p *partState) {
	if p.listed&l.bit == 0 {
		p.listed |= l.bit
		l.parts = append(l.parts, p)
	}
}

// keep walks the list, in the order the partitions were listed, and keeps
// those for which fn returns true; the others are unlisted. fn must not add
// to this list.
func (l *partList) keep(fn func(p *partState) bool) {
	kept := l.parts[:0]
	for _, p := range l.parts {
		if fn(p) {
			kept = append(kept, p)
		} else {
			p.listed &^= l.bit
		}
	}
	clear(l.parts[len(kept):]) // drop the references to unlisted epochs
	l.parts = kept
}

// markDirty says a commit of p may be due on the next tick.
func (o *owner) markDirty(p *partState) {
	p.dirty = true
	o.lists.dirty.add(p)
}

// listEpochs lists the epochs that code outside the owner's own event
// handlers made: new assignments (their first refresh shows every gauge)
// and successors waiting for their rewind (a replay in place, a keyed
// truncation's drain: successor.go), which are dirty (the replay's stall
// provenance is committed) and show their predecessor's gauges.
func (o *owner) listEpochs(tps []topicPartition) {
	for _, tp := range tps {
		if p := o.parts[tp]; p != nil {
			o.lists.gauges.add(p)
		}
	}
	for _, p := range o.polls.rewinds {
		if p.live() {
			if p.dirty {
				o.lists.dirty.add(p)
			}
			o.lists.gauges.add(p)
		}
	}
}

// anyPaused reports whether a live partition is paused, dropping the
// entries of the paused list that no longer are.
func (o *owner) anyPaused() bool {
	o.lists.paused.keep(func(p *partState) bool { return p.paused && p.live() })
	return len(o.lists.paused.parts) > 0
}
