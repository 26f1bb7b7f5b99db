package main

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Compound faults: two faults whose effects meet inside one action, rather
// than one fault's recovery overlapping the next (--overlap).

// replayRebalance moves partitions while one of them replays in place. The
// partition's batches fail at the sink until its owner stalls; at the
// owner's next replay in place (its kafka_watermark_stall_replays_total
// goes up) the membership changes: the owner leaves (SIGTERM, back after
// Hold), another member leaves, or a member stopped before the fault
// joins. The sink still fails the partition for Delay after the replay
// began, so the replay, the revoke's drain and the next owner's start
// meet. A leave is graceful: the replaying partition's drain must commit
// no further than its watermark, and the next owner must resume there.
func (h *harness) replayRebalance(ctx context.Context, fr *faultRun) error {
	p := fr.Part
	if fr.Variant == "join" {
		if err := h.fleet.stop(fr.Victim, 90*time.Second); err != nil {
			return err
		}
		// The group settles without it before the partition fails.
		if err := sleepCtx(ctx, 3*time.Second); err != nil {
			return err
		}
	}
	h.sink.setMode(sinkMode{kind: "fail", failPart: p})
	healed := make(chan struct{})
	heal := func() {
		select {
		case <-healed:
		default:
			h.sink.setMode(sinkMode{kind: "normal"})
			close(healed)
		}
	}
	defer heal()

	owner, err := h.waitStall(ctx, p, stallWait)
	if err != nil {
		return err
	}
	if owner == "" {
		fr.Note = fmt.Sprintf("no member showed partition %d stalled within %v: the membership changes without a replay", p, stallWait)
	} else {
		m := h.memberOf(owner)
		before, _ := memberSeries(ctx, m, "kafka_watermark_stall_replays_total", h.topic)
		replayed := false
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && m.running(); {
			now, err := memberSeries(ctx, m, "kafka_watermark_stall_replays_total", h.topic)
			if err == nil && now[p] > before[p] {
				replayed = true
				break
			}
			if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
		fr.Note = fmt.Sprintf("%s stalled at partition %d", owner, p)
		if replayed {
			fr.Note += " and replays it in place"
		} else {
			fr.Note += "; no replay in place seen within 30s"
		}
	}
	timer := time.AfterFunc(fr.Delay, heal)
	defer timer.Stop()

	switch fr.Variant {
	case "join":
		fr.Note += fmt.Sprintf("; %s joins", fr.Victim)
		h.logf("fault #%d: %s", fr.Index, fr.Note)
		_, err = h.fleet.start(fr.Victim)
		return err
	case "leave-owner":
		if m := h.memberOf(owner); m != nil {
			fr.Victim, fr.VictimInstance = m.name, m.instance
		}
	case "leave-other":
		if m := h.memberOf(owner); m != nil && m.name == fr.Victim {
			// Another member than the owner: the next one.
			names := h.fleet.names()
			fr.Victim = names[(memberIndex(fr.Victim)+1)%len(names)]
		}
		if m := h.fleet.get(fr.Victim); m != nil {
			fr.VictimInstance = m.instance
		}
	}
	fr.Note += fmt.Sprintf("; %s leaves for %v", fr.VictimInstance, fr.Hold)
	h.logf("fault #%d: %s", fr.Index, fr.Note)
	if err := h.fleet.stop(fr.Victim, 90*time.Second); err != nil {
		return err
	}
	if err := sleepCtx(ctx, fr.Hold); err != nil {
		return err
	}
	_, err = h.fleet.start(fr.Victim)
	return err
}

// memberOf is the current process of a member by its instance name (m1.3),
// or nil.
func (h *harness) memberOf(instance string) *member {
	for _, m := range h.fleet.running() {
		if m.instance == instance {
			return m
		}
	}
	return nil
}

// killInOutage kills a member (kill -9) while a broker is down: the broker
// (a node of the cluster) is restarted with SIGTERM or SIGKILL, and Delay
// after its client port stops answering the member is killed, then started
// again after Hold2, whether the broker is back or not. The group loses a
// member while it cannot reach the coordinator, or its partitions' leaders,
// and rejoins when both are back.
func (h *harness) killInOutage(ctx context.Context, fr *faultRun) error {
	done := make(chan error, 1)
	go func() { done <- h.kafka.restart(ctx, fr.Node, fr.Variant == "kill", fr.Hold) }()
	addr := h.kafka.nodeAddr(fr.Node)
	downAt, err := waitRefused(ctx, addr, 2*time.Minute)
	if err != nil {
		<-done
		return err
	}
	if downAt.IsZero() {
		fr.Note = fmt.Sprintf("%s kept answering for 2 minutes; ", addr)
	}
	if err := sleepCtx(ctx, fr.Delay); err != nil {
		<-done
		return err
	}
	kerr := h.fleet.kill(fr.Victim)
	if kerr == nil {
		if stillDown := !answers(addr); stillDown {
			fr.Note += fmt.Sprintf("%s killed %v after the broker went down, while it was still down", fr.VictimInstance, fr.Delay)
		} else {
			fr.Note += fmt.Sprintf("%s killed %v after the broker went down, but the broker already answered again", fr.VictimInstance, fr.Delay)
		}
		h.logf("fault #%d: %s", fr.Index, fr.Note)
		if err := sleepCtx(ctx, fr.Hold2); err != nil {
			<-done
			return err
		}
		_, kerr = h.fleet.start(fr.Victim)
	}
	if err := <-done; err != nil {
		return err
	}
	return kerr
}

// waitRefused waits until nothing answers on addr and returns when; the
// zero time when it still answered at the timeout.
func waitRefused(ctx context.Context, addr string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !answers(addr) {
			return time.Now(), nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
	return time.Time{}, nil
}

func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
