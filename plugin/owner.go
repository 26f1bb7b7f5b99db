package plugin

import (
	"context"
	"time"

	"github.com/Jeffail/shutdown"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/tracker"
)

// Messages to the owner goroutine.
type (
	// readReq is a ReadBatch waiting for a batch. reply has capacity 1 so
	// the owner never blocks on it.
	readReq struct{ reply chan *inflight }

	ackMsg struct {
		in  *inflight
		err error
	}

	pollResult struct {
		fetches kgo.Fetches
		done    chan struct{}
	}

	assignReq struct {
		tps  []topicPartition
		done chan struct{}
	}

	// revokeReq asks for the final watermarks of tps after a drain; lost
	// requests skip the drain and commit nothing.
	revokeReq struct {
		tps   []topicPartition
		lost  bool
		reply chan map[string]map[int32]kgo.EpochOffset
	}

	closeReq struct {
		reply chan map[string]map[int32]kgo.EpochOffset
	}

	// cancelReq withdraws a parked read whose context ended, or gives
	// back a batch (given) that ReadBatch received but could not return.
	cancelReq struct {
		req   *readReq
		given *inflight
	}

	commitDone struct {
		offsets map[topicPartition]int64
		parts   map[topicPartition]*partState
		errs    map[topicPartition]error
		err     error
		took    time.Duration
	}

	retryDue struct{ in *inflight }
)

// drain is a revoke waiting for its partitions' in-flight batches, or the
// final step of a close.
type drain struct {
	parts []*partState
	reply chan map[string]map[int32]kgo.EpochOffset
	timer *time.Timer // a revoke's drain_timeout; a close does not wait
	// close: after replying, the owner refuses all further work.
	close bool
}

// owner is the one goroutine that holds every tracker. ReadBatch, acks, the
// poll loop, rebalance callbacks and commit completions all reach it over
// channels; it never performs network I/O itself (pause and resume only
// flip client state), so an ack is never delayed by a slow broker.
type owner struct {
	conf *config
	log  *service.Logger
	m    *metrics
	cl   *kgo.Client
	sig  *shutdown.Signaller

	readCh   chan *readReq
	cancelCh chan cancelReq
	ackCh    chan ackMsg
	pollCh   chan pollResult
	pollWant chan struct{} // capacity 1: a token asking the poll loop for more
	assignCh chan assignReq
	revokeCh chan revokeReq
	closeCh  chan closeReq
	commitCh chan commitDone
	// commitJobs feeds the committer goroutine; commitCtx is cancelled at
	// hard stop so a commit in flight cannot outlive the input.
	commitJobs chan commitJob
	commitCtx  context.Context
	cancel     context.CancelFunc
	retryCh    chan retryDue
	endsCh     chan endsResult
	drainDone  chan *drain

	// Owned by the run goroutine. parts holds the live epoch of every
	// assigned partition; a partState not in it has ended.
	parts      map[topicPartition]*partState
	runQ       []*partState // partitions that can hand out, round robin
	parked     []*readReq
	drains     []*drain
	epoch      uint64
	pollAsked  bool
	committing bool
	closed     bool
	// A log-end query for paused partitions (lag.go).
	endsInFlight   bool
	ticksSinceEnds int
}

func newOwner(conf *config, log *service.Logger, m *metrics) *owner {
	ctx, cancel := context.WithCancel(context.Background())
	return &owner{
		commitJobs: make(chan commitJob, 1),
		commitCtx:  ctx,
		cancel:     cancel,
		conf:       conf,
		log:        log,
		m:          m,
		sig:        shutdown.NewSignaller(),
		readCh:     make(chan *readReq),
		cancelCh:   make(chan cancelReq),
		ackCh:      make(chan ackMsg, 1024),
		pollCh:     make(chan pollResult),
		pollWant:   make(chan struct{}, 1),
		assignCh:   make(chan assignReq),
		revokeCh:   make(chan revokeReq),
		closeCh:    make(chan closeReq),
		commitCh:   make(chan commitDone, 1),
		retryCh:    make(chan retryDue, 64),
		endsCh:     make(chan endsResult),
		drainDone:  make(chan *drain, 1),
		parts:      map[topicPartition]*partState{},
	}
}

// stopped is closed when the run goroutine has returned.
func (o *owner) stopped() <-chan struct{} { return o.sig.HasStoppedChan() }

// run is the owner goroutine.
func (o *owner) run() {
	defer o.sig.TriggerHasStopped()
	tick := time.NewTicker(o.conf.commitPeriod)
	defer tick.Stop()
	o.askPoll()
	for {
		select {
		case r := <-o.readCh:
			o.parked = append(o.parked, r)
		case c := <-o.cancelCh:
			o.onCancel(c)
		case a := <-o.ackCh:
			o.onAck(a)
		case res := <-o.pollCh:
			o.pollAsked = false
			o.onPoll(res.fetches)
			close(res.done)
		case r := <-o.assignCh:
			o.onAssign(r.tps)
			close(r.done)
		case r := <-o.revokeCh:
			o.onRevoke(r)
		case r := <-o.closeCh:
			o.onClose(r)
		case c := <-o.commitCh:
			o.onCommitDone(c)
		case r := <-o.endsCh:
			o.onEnds(r)
		case r := <-o.retryCh:
			o.onRetryDue(r.in)
		case d := <-o.drainDone:
			o.finishDrain(d)
		case now := <-tick.C:
			o.onTick(now)
		case <-o.sig.HardStopChan():
			for _, r := range o.parked {
				r.reply <- nil
			}
			return
		}
		o.serve()
		o.askPoll()
	}
}

// serve hands batches to parked reads, round robin over partitions so one
// busy partition cannot starve the others.
func (o *owner) serve() {
	for len(o.parked) > 0 {
		if o.closed {
			o.parked[0].reply <- nil
			o.parked = o.parked[1:]
			continue
		}
		if len(o.runQ) == 0 {
			return
		}
		p := o.runQ[0]
		o.runQ = o.runQ[1:]
		p.queued = false
		if !p.canHandOut(o.conf.maxPending) || o.parts[p.tp] != p {
			continue
		}
		var in *inflight
		if len(p.retry) > 0 {
			in = p.retry[0]
			p.retry = p.retry[1:]
			p.retrying--
			if !in.unread {
				in.attempt++
			}
			in.unread = false
		} else {
			rb := p.ready[0]
			p.ready[0] = rawBatch{}
			p.ready = p.ready[1:]
			seq := p.tracker.NextSeq()
			p.tracker.Register(seq, rb.last)
			p.unresolved++
			in = &inflight{part: p, seq: seq, raw: rb}
			if p.tracker.Pending() >= o.conf.maxPending && !p.paused {
				p.paused = true
				o.cl.PauseFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
			}
		}
		o.parked[0].reply <- in
		o.parked = o.parked[1:]
		o.schedule(p)
	}
}

// schedule puts p on the run queue if it can hand out and is not there yet.
func (o *owner) schedule(p *partState) {
	if !p.queued && p.canHandOut(o.conf.maxPending) {
		p.queued = true
		o.runQ = append(o.runQ, p)
	}
}

// askPoll gives the poll loop a token while fewer than pollLowWater batches
// are ready to hand out, so the next poll overlaps the pipeline's work and
// the owner buffers a bounded amount of fetched data. Batches of a partition
// that cannot hand out (paused at its limit) do not count: they must not
// keep the other partitions from being fetched.
func (o *owner) askPoll() {
	if o.pollAsked || o.closed {
		return
	}
	ready := 0
	for _, p := range o.runQ {
		if !p.canHandOut(o.conf.maxPending) {
			continue
		}
		if ready += len(p.ready) + len(p.retry); ready >= pollLowWater {
			return
		}
	}
	select {
	case o.pollWant <- struct{}{}:
		o.pollAsked = true
	default:
	}
}

// pollLowWater is how many ready batches the owner keeps ahead of the
// pipeline before it asks for another poll.
const pollLowWater = 8

func (o *owner) onPoll(fetches kgo.Fetches) {
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		p := o.parts[topicPartition{fp.Topic, fp.Partition}]
		if p == nil || p.revoking {
			// Fetched under an assignment that has ended: the next owner
			// reads it again from the committed offset.
			return
		}
		if fp.HighWatermark >= 0 {
			p.highWatermark = fp.HighWatermark
		}
		if len(fp.Records) > 0 {
			p.enqueue(fp.Records, o.conf.batchMaxRecords, o.conf.batchMaxBytes)
			o.schedule(p)
		}
	})
}

func (o *owner) onAssign(tps []topicPartition) {
	now := time.Now()
	for _, tp := range tps {
		if old := o.parts[tp]; old != nil {
			// Assigned again without a revoke in between: the old epoch
			// ends here and its acks become late.
			o.forget(old)
		}
		o.epoch++
		o.parts[tp] = newPartState(tp, o.epoch, o.conf.maxPending, now)
		o.log.Debugf("kafka_watermark: assigned %s/%d (epoch %d)", tp.topic, tp.partition, o.epoch)
	}
}

// onCancel withdraws a parked read, or takes back a batch that a ReadBatch
// whose context ended could not return. Benthos cancels that context at
// shutdown and drops whatever ReadBatch returns unacknowledged, so such a
// batch must come back here rather than reach the caller. Handled in this
// goroutine before the caller's next read, so the batch goes out again first.
func (o *owner) onCancel(c cancelReq) {
	given := c.given
	if given == nil {
		for i, r := range o.parked {
			if r == c.req {
				o.parked = append(o.parked[:i], o.parked[i+1:]...)
				return
			}
		}
		// Not parked: answered already, and the answer is in the buffer,
		// which no one else reads any more.
		select {
		case given = <-c.req.reply:
		default:
		}
		if given == nil {
			return
		}
	}
	p := given.part
	if o.parts[p.tp] != p {
		return // the epoch ended; the next owner replays it
	}
	// Still registered, not in the pipeline: a drain does not wait for it.
	p.retrying++
	if p.revoking {
		o.checkDrains()
		return
	}
	given.unread = true
	p.retry = append([]*inflight{given}, p.retry...)
	o.schedule(p)
}

func (o *owner) onAck(a ackMsg) {
	in, p := a.in, a.in.part
	if o.parts[p.tp] != p {
		o.m.lateAcks.Incr(1, p.labels[0], p.labels[1])
		return
	}
	if a.err != nil && in.attempt < o.conf.nackRetries && !p.revoking {
		backoff := o.conf.nackBackoff << in.attempt
		if backoff > o.conf.nackMaxBackoff || backoff <= 0 {
			backoff = o.conf.nackMaxBackoff
		}
		o.log.Warnf("kafka_watermark: batch %s/%d offsets %d-%d nacked (attempt %d of %d), retrying in %v: %v",
			p.tp.topic, p.tp.partition, in.raw.first, in.raw.last, in.attempt+1, o.conf.nackRetries+1, backoff, a.err)
		p.retrying++
		time.AfterFunc(backoff, func() {
			select {
			case o.retryCh <- retryDue{in}:
			case <-o.stopped():
			}
		})
		return
	}
	o.resolve(in, a.err)
}

// resolve records the final verdict on a batch and advances its partition.
func (o *owner) resolve(in *inflight, err error) {
	p := in.part
	status := tracker.Delivered
	if err != nil {
		status = tracker.Failed
	}
	switch out := p.tracker.Resolve(in.seq, status); out {
	case tracker.Applied:
		p.unresolved--
		if err != nil {
			o.log.Errorf("kafka_watermark: batch %s/%d offsets %d-%d failed; the partition's commits stop before offset %d until a restart or reassignment replays it: %v",
				p.tp.topic, p.tp.partition, in.raw.first, in.raw.last, in.raw.first, err)
		}
	case tracker.Unregistered:
		// Registration happens in this goroutine before a batch leaves, so
		// an ack can never overtake it: this is a bug, reported, not fatal.
		o.log.Errorf("kafka_watermark: internal error: ack for unregistered batch %d of %s/%d", in.seq, p.tp.topic, p.tp.partition)
		return
	default:
		// Duplicate or AlreadyAdvanced: the once-guard makes this
		// unreachable through the ack function; count it all the same.
		o.m.dupAcks.Incr(1, p.labels[0], p.labels[1])
		return
	}
	o.advance(p)
	if p.revoking {
		o.checkDrains()
	}
	o.schedule(p)
}

func (o *owner) advance(p *partState) {
	if _, moved := p.tracker.Advance(); moved {
		p.lastMoved = time.Now()
	}
	if p.paused && p.tracker.Pending() < o.conf.maxPending && !p.revoking {
		p.paused = false
		o.cl.ResumeFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
	}
}

func (o *owner) onRetryDue(in *inflight) {
	p := in.part
	if o.parts[p.tp] != p {
		return // the epoch ended; the batch is replayed by the next owner
	}
	if p.revoking {
		return // a drain does not wait for retries: the batch stays unresolved
	}
	p.retry = append(p.retry, in)
	o.schedule(p)
}

func (o *owner) onTick(now time.Time) {
	for _, p := range o.parts {
		o.m.publish(p, now)
	}
	o.commit()
	o.maybeQueryEnds()
}
