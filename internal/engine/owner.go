package engine

import (
	"context"
	"time"

	"github.com/Jeffail/shutdown"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// epochOffsets is kgo's shape for offsets to commit: topic, partition,
// offset and the leader epoch of the record before it.
type epochOffsets = map[string]map[int32]kgo.EpochOffset

// Messages to the owner goroutine.
type (
	// readReq is a ReadBatch waiting for a batch. reply has capacity 1 so
	// the owner never blocks on it. An Input sends the same one again and
	// again (Input.read): the owner drops it once it has answered it or
	// handled its withdrawal, and never refers to it after.
	readReq struct{ reply chan *Batch }

	ackMsg struct {
		b   *Batch
		err error
		// failed holds the indices in b.raw.records of the records a
		// batch error named failed, or nil (the whole batch).
		failed []int
	}

	pollResult struct {
		seq     uint64 // polls are numbered in the order they start
		fetches kgo.Fetches
		done    chan struct{}
	}

	assignReq struct {
		tps  []topicPartition
		done chan struct{}
	}

	// revokeReq asks for the final commits of tps after a drain; lost
	// requests skip the drain and commit nothing.
	revokeReq struct {
		tps   []topicPartition
		lost  bool
		reply chan commitSet
	}

	// fetchedReq hands over the committed offsets and metadata of newly
	// assigned partitions (kgo's OnOffsetsFetched), before any fetch.
	fetchedReq struct {
		commits map[topicPartition]fetchedCommit
		done    chan struct{}
	}

	closeReq struct{ reply chan closeReply }

	// closeReply is the owner's last word: the final watermark of every
	// partition, the revoke drains still waiting (hold is their reply
	// channels; Close answers them, with nothing to commit, only after its
	// own commit, so a revoke can never commit after Close), and nothing
	// more.
	closeReply struct {
		final commitSet
		held  []chan commitSet
	}

	// withdrawReq withdraws a parked read whose context ended, or gives
	// back a batch (given) that ReadBatch received but could not return.
	withdrawReq struct {
		req   *readReq
		given *Batch
	}

	commitDone struct {
		commitJob
		result commitResult
		took   time.Duration
	}

	retryDue struct{ b *Batch }
)

// owner is the one goroutine that holds every tracker. ReadBatch, acks, the
// poll loop, rebalance callbacks and commit completions all reach it over
// channels; it never performs network I/O itself (pause and resume only
// flip client state), so an ack is never delayed by a slow broker.
//
// The owner's files: owner.go (state and loop), handout.go (fetches in,
// batches out), ack.go (verdicts, retries, advance), drain.go (revoke and
// close drains), rebalance.go (assignment and revocation), commit.go,
// lag.go and gauges.go.
type owner struct {
	conf *Config
	log  *service.Logger
	m    *Metrics
	cl   groupClient
	sig  *shutdown.Signaller

	readCh      chan *readReq
	withdrawCh  chan withdrawReq
	ackCh       chan ackMsg
	pollCh      chan pollResult
	pollWant    chan struct{} // capacity 1: a token asking the poll loop for more
	assignCh    chan assignReq
	fetchedCh   chan fetchedReq
	revokeCh    chan revokeReq
	closeCh     chan closeReq
	commitCh    chan commitDone
	retryCh     chan retryDue
	endsCh      chan endsResult
	retentionCh chan retentionResult
	drainDone   chan *drain
	// commitJobs feeds the committer goroutine. ioCtx bounds the network
	// calls of the committer and the log-end queries; stopIO cancels it at
	// hard stop, so no call in flight outlives the input.
	commitJobs chan commitJob
	ioCtx      context.Context
	stopIO     context.CancelFunc

	// Owned by the run goroutine. parts holds the live epoch of every
	// assigned partition; a partState not in it has ended.
	parts      map[topicPartition]*partState
	runQ       []*partState // partitions that can hand out, round robin
	parked     []*readReq
	drains     []*drain
	pollAsked  bool
	committing bool
	// commitWaiters are closed when the periodic commit in flight has
	// its answer (afterCommit).
	commitWaiters []chan struct{}
	closed        bool
	// endsInFlight: a log-end query for paused partitions is running
	// (lag.go); at most one at a time.
	endsInFlight bool
	// retention holds each described topic's time retention in ms, -1
	// for none (retention.go); retentionInFlight says a description is
	// running, retentionWarned that a refused one was said.
	retention                          map[string]int64
	retentionInFlight, retentionWarned bool
	// wakePoll ends the poll in progress early (poller.wake), so that a
	// rewind gets its poll window soon; a no-op in unit tests. Set before
	// run starts, never changed.
	wakePoll func()
	// lastPoll is the number of the last poll handled; rewinds are the
	// partitions waiting for the next poll window to be rewound in
	// (stall.go).
	lastPoll uint64
	rewinds  []*partState
	// The partitions each periodic walk visits, so that a walk costs what
	// changed rather than what is assigned (10,000 idle partitions cost a
	// commit tick and a gauge refresh nothing):
	//   - dirty: p.dirty, a commit may be due (commit, markDirty);
	//   - gauges: a gauge may show something else at the next refresh,
	//     because an event changed a value, or because the partition has
	//     pending batches or is stalled, so its age moves with the clock
	//     (publishGauges);
	//   - stalled: the tracker is stalled (checkStalls);
	//   - paused: fetching is paused at the pending limit (the log-end
	//     queries).
	// Ended epochs are dropped by the walk that meets them.
	//   - losses: commits carry a loss report, until it expires (loss.go).
	dirty, gauges, stalled, paused, losses partList
	// clock is the time of the event being handled, read once (now) and
	// zeroed after each event, so that a burst of acks costs one reading
	// of the clock, not one per watermark move.
	clock time.Time
	// lossReported holds, per partition, the offsets reported lost in
	// this process or by a commit an epoch started from (inheritLoss):
	// sorted, disjoint ranges, kept across epochs so that
	// a revoke and a reassignment report nothing twice (loss.go).
	lossReported map[topicPartition][]commitmeta.Range
	// truncations holds, per partition, the offsets at which truncations
	// were reported in this process, each once (loss.go).
	truncations map[topicPartition][]int64
	// member names this client in stall provenance (memberName).
	member string
	// metaMax is the most bytes of metadata one partition's commit
	// carries: commit_metadata_max_bytes, halved each time a broker
	// refuses metadata as too large (its offset.metadata.max.bytes is
	// smaller).
	metaMax int
	// fence holds hand-outs back while the group may have given this
	// member's partitions away (fence.go).
	fence fence
}

func newOwner(conf *Config, log *service.Logger, m *Metrics) *owner {
	ctx, stop := context.WithCancel(context.Background())
	return &owner{
		conf:         conf,
		log:          log,
		m:            m,
		sig:          shutdown.NewSignaller(),
		readCh:       make(chan *readReq),
		withdrawCh:   make(chan withdrawReq),
		ackCh:        make(chan ackMsg, 1024),
		pollCh:       make(chan pollResult),
		pollWant:     make(chan struct{}, 1),
		assignCh:     make(chan assignReq),
		fetchedCh:    make(chan fetchedReq),
		revokeCh:     make(chan revokeReq),
		closeCh:      make(chan closeReq),
		commitCh:     make(chan commitDone, 1),
		retryCh:      make(chan retryDue, 64),
		endsCh:       make(chan endsResult),
		retentionCh:  make(chan retentionResult),
		retention:    map[string]int64{},
		lossReported: map[topicPartition][]commitmeta.Range{},
		truncations:  map[topicPartition][]int64{},
		drainDone:    make(chan *drain, 1),
		commitJobs:   make(chan commitJob, 1),
		ioCtx:        ctx,
		stopIO:       stop,
		parts:        map[topicPartition]*partState{},
		metaMax:      conf.CommitMetadataMaxBytes,
		wakePoll:     func() {},
		member:       memberName(conf.ClientID),
		dirty:        partList{bit: listDirty},
		gauges:       partList{bit: listGauges},
		stalled:      partList{bit: listStalled},
		paused:       partList{bit: listPaused},
		losses:       partList{bit: listLoss},
		fence:        newFence(conf, time.Now()),
	}
}

// now returns the time of the event being handled: the clock read at its
// first use in this event. The watermark's age, the one thing it times, is
// shown in seconds; an event, a burst of acks included, lasts microseconds.
func (o *owner) now() time.Time {
	if o.clock.IsZero() {
		o.clock = time.Now()
	}
	return o.clock
}

// markDirty says a commit of p may be due on the next tick.
func (o *owner) markDirty(p *partState) {
	p.dirty = true
	o.dirty.add(p)
}

// listEpochs lists the epochs that code outside the owner's own event
// handlers made: new assignments (their first refresh shows every gauge)
// and epochs that replay in place, which are dirty (the replay's stall
// provenance is committed) and show their predecessor's gauges.
func (o *owner) listEpochs(tps []topicPartition) {
	for _, tp := range tps {
		if p := o.parts[tp]; p != nil {
			o.gauges.add(p)
		}
	}
	for _, p := range o.rewinds {
		if p.live() {
			if p.dirty {
				o.dirty.add(p)
			}
			o.gauges.add(p)
		}
	}
}

// anyPaused reports whether a live partition is paused, dropping the
// entries of the paused list that no longer are.
func (o *owner) anyPaused() bool {
	o.paused.keep(func(p *partState) bool { return p.paused && p.live() })
	return len(o.paused.parts) > 0
}

// stopped is closed when the run goroutine has returned.
func (o *owner) stopped() <-chan struct{} { return o.sig.HasStoppedChan() }

// gaugeEvery is how often the owner refreshes the gauges: at most every
// second, whatever commit_period is, so alerts on age and stalls fire on
// time even with a long commit period.
func (o *owner) gaugeEvery() time.Duration { return min(time.Second, o.conf.CommitPeriod) }

// ackBurst is the most acks the owner applies in a row, once one has woken
// it, before it looks at its other channels again.
const ackBurst = 256

// drainAcks applies the acks already queued, up to ackBurst of them. Under
// load, acks arrive far more often than anything else, and each pass
// through run's select locks every one of its channels; a non-blocking
// receive on the ack channel alone costs a fraction of that, so a burst of
// acks pays for the select once. The bound keeps a flood of acks from
// delaying a rebalance, a poll or a commit result by more than a burst.
func (o *owner) drainAcks() {
	for range ackBurst - 1 {
		select {
		case a := <-o.ackCh:
			o.onAck(a)
		default:
			return
		}
	}
}

// run is the owner goroutine.
func (o *owner) run() {
	defer o.sig.TriggerHasStopped()
	commitTick := time.NewTicker(o.conf.CommitPeriod)
	defer commitTick.Stop()
	gaugeTick := time.NewTicker(o.gaugeEvery())
	defer gaugeTick.Stop()
	lagTick := time.NewTicker(o.conf.TopicLagRefresh)
	defer lagTick.Stop()
	retentionTick := time.NewTicker(o.conf.MetadataMaxAge)
	defer retentionTick.Stop()
	o.askPoll()
	for {
		select {
		case r := <-o.readCh:
			o.parked = append(o.parked, r)
		case w := <-o.withdrawCh:
			o.onWithdraw(w)
		case a := <-o.ackCh:
			o.onAck(a)
			o.drainAcks()
		case res := <-o.pollCh:
			o.pollAsked = false
			o.onPoll(res.seq, res.fetches)
			close(res.done)
		case r := <-o.assignCh:
			o.onAssign(r.tps)
			o.listEpochs(r.tps)
			close(r.done)
			if o.anyUndescribed(r.tps) {
				o.queryRetention()
			}
		case r := <-o.fetchedCh:
			o.onFetched(r.commits)
			for tp := range r.commits {
				if p := o.parts[tp]; p != nil {
					o.gauges.add(p) // the lag's resume point
				}
			}
			close(r.done)
		case r := <-o.revokeCh:
			o.onRevoke(r)
		case r := <-o.closeCh:
			o.onClose(r)
		case c := <-o.commitCh:
			o.onCommitDone(c)
		case r := <-o.endsCh:
			o.onEnds(r)
		case r := <-o.retentionCh:
			o.onRetention(r)
		case <-retentionTick.C:
			o.queryRetention()
		case r := <-o.retryCh:
			o.onRetryDue(r.b)
		case d := <-o.drainDone:
			o.finishDrain(d)
		case <-o.fence.wake():
			// A heartbeat answered: serve below sees whether the fence lifts.
		case <-commitTick.C:
			o.commit()
		case now := <-gaugeTick.C:
			o.publishGauges(now)
			o.checkStalls(now)
			o.expireLosses(now)
		case <-lagTick.C:
			if o.anyPaused() || len(o.stalled.parts) > 0 {
				o.queryEnds()
			}
		case <-o.sig.HardStopChan():
			for _, r := range o.parked {
				r.reply <- nil
			}
			return
		}
		if len(o.rewinds) > 0 {
			o.listEpochs(nil) // a drain just ended in a replay's rewind
		}
		o.serve()
		o.askPoll()
		o.clock = time.Time{} // the next event reads it afresh
	}
}
