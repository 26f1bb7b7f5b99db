package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// The retention fault: Kafka deletes records the group has not delivered.
// One partition's batches fail at the sink (the sink-fail fault's mode,
// aimed at that partition) until its owner stalls at the failed batch; its
// commits stop before that batch. Then DeleteRecords moves the partition's
// log start above the stalled watermark, to the middle of what was
// produced past it, either with the owner running (it learns of the loss
// from a replay, or from the log start it lists for a partition that
// cannot fetch) or with every member stopped (the next owner resumes from
// a commit below the log start). Then the sink recovers, the members come
// back. The harness records, from the sink's own ledger, exactly which
// offsets went before any sink had them (deletion, losscheck.go).

// stallWait bounds the wait for a partition to stall at the sink.
const stallWait = time.Minute

func (h *harness) retention(ctx context.Context, fr *faultRun) error {
	p := fr.Part
	h.sink.setMode(sinkMode{kind: "fail", failPart: p})
	healed := false
	heal := func() {
		if !healed {
			h.sink.setMode(sinkMode{kind: "normal"})
			healed = true
		}
	}
	defer heal()

	owner, err := h.waitStall(ctx, p, stallWait)
	if err != nil {
		return err
	}
	if owner == "" {
		fr.Note = fmt.Sprintf("no member showed partition %d stalled within %v; deleting past its commit all the same. ", p, stallWait)
	} else {
		fr.Note = fmt.Sprintf("%s stalled at partition %d. ", owner, p)
	}
	// Two commit periods: the owner's commit reaches its watermark.
	if err := sleepCtx(ctx, 1500*time.Millisecond); err != nil {
		return err
	}
	down := fr.Variant == "down"
	if down {
		h.fleet.stopAll(90 * time.Second)
		h.logf("fault #%d: every member stopped", fr.Index)
		defer h.startStopped() // also when the fault fails half-way; a no-op after the normal path
	}

	adm := kadm.NewClient(h.poller.cl)
	commit, meta, err := h.committed(ctx, adm, p)
	if err != nil {
		return err
	}
	start, end, err := h.logBounds(ctx, adm, p)
	if err != nil {
		return err
	}
	from := max(commit, start)
	for deadline := time.Now().Add(20 * time.Second); end-from < 2; {
		if time.Now().After(deadline) {
			return fmt.Errorf("partition %d: the log end %d is not 2 past its commit %d after 20s", p, end, commit)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		if _, end, err = h.logBounds(ctx, adm, p); err != nil {
			return err
		}
	}
	to := from + (end-from)/2

	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var os kadm.Offsets
	os.AddOffset(h.topic, p, to, -1)
	resp, err := adm.DeleteRecords(dctx, os)
	if err == nil {
		if r, ok := resp[h.topic][p]; !ok {
			err = errors.New("no answer for the partition")
		} else if r.Err != nil {
			err = r.Err
		} else if r.LowWatermark != to {
			err = fmt.Errorf("the log start is %d, not %d", r.LowWatermark, to)
		}
	}
	if err != nil {
		return fmt.Errorf("DeleteRecords of partition %d to offset %d: %w", p, to, err)
	}
	d := deletion{Fault: fr.Index, P: p, From: start, To: to, End: end, Commit: commit, Meta: meta, At: time.Now().UnixNano(), Down: down}
	// The sink still fails every batch of p: what it holds now is what it
	// held when the log start moved.
	received, missing := h.sink.receivedIn(p, start, to)
	d.Received = received
	m, merr := commitmeta.Decode(meta)
	ranged := merr == nil && m.Base == commit
	var unreceived []int64
	for _, o := range missing {
		if o >= commit && (!ranged || !m.Covered(o)) {
			unreceived = append(unreceived, o)
		}
	}
	d.Unreceived = spansOf(unreceived)
	if s, _, err := h.logBounds(ctx, adm, p); err != nil {
		return fmt.Errorf("after DeleteRecords: %w", err)
	} else if s != to {
		return fmt.Errorf("after DeleteRecords the log start of partition %d lists as %d, not %d", p, s, to)
	}
	h.deletions = append(h.deletions, d)
	fr.Note += fmt.Sprintf("Log start %d -> %d (commit %d, log end %d): %d offset(s) deleted before any sink had them %v, %d deleted after delivery.",
		start, to, commit, end, spansLen(d.Unreceived), d.Unreceived, received)
	h.logf("fault #%d: %s", fr.Index, fr.Note)

	if err := sleepCtx(ctx, fr.Hold); err != nil {
		return err
	}
	heal()
	if down {
		h.startStopped()
	}
	return nil
}

// waitStall waits until a running member shows partition p stalled (its
// kafka_watermark_stalled gauge), and returns that member's process, or ""
// after timeout.
func (h *harness) waitStall(ctx context.Context, p int32, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, m := range h.fleet.running() {
			v, err := memberSeries(ctx, m, "kafka_watermark_stalled", h.topic)
			if err == nil && v[p] > 0 {
				return m.instance, nil
			}
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
	return "", nil
}

// committed is the group's commit of partition p (-1 when none) and its
// metadata.
func (h *harness) committed(ctx context.Context, adm *kadm.Client, p int32) (int64, string, error) {
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(fctx, h.group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return 0, "", fmt.Errorf("the group's commits: %w", err)
	}
	o, ok := resp[h.topic][p]
	if !ok || o.Err != nil {
		return -1, "", nil
	}
	return o.At, o.Metadata, nil
}

// logBounds is partition p's log start and end.
func (h *harness) logBounds(ctx context.Context, adm *kadm.Client, p int32) (start, end int64, err error) {
	return listBounds(ctx, adm, h.topic, p)
}

// startStopped starts every member that is not running (after the harness
// stopped them all).
func (h *harness) startStopped() {
	for _, name := range h.fleet.names() {
		if m := h.fleet.get(name); m != nil && !m.running() {
			if _, err := h.fleet.start(name); err != nil {
				h.note("cannot start %s again: %v", name, err)
			}
		}
	}
}
