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
	// again (Engine.read): the owner drops it once it has answered it or
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
		// abortTxn, under exactly once, says why the open transaction
		// is aborted rather than committed with final (txn.go).
		abortTxn string
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
		// records is how many records the transaction held (exactly once).
		records int64
	}
)

// owner is the one goroutine that holds every tracker. ReadBatch, acks, the
// poll loop, rebalance callbacks and commit completions all reach it over
// channels (inbox); it never performs network I/O itself (pause and resume
// only flip client state), so an ack is never delayed by a slow broker.
//
// Its state is in parts, each declared in the file that keeps it: the
// epochs of the assigned partitions (parts, assignment.go), the reads and
// the run queue (handout.go), the walks over what changed (lists,
// lists.go), the poll window's bookkeeping (polls, replay.go), the periodic
// commit (commits, commit.go), the log-end and retention queries
// (queries, lag.go), what was reported lost (lost, lossbook.go), the drains
// (drain.go), the retries in backoff (retries.go), the heartbeat fence
// (fence.go) and, under exactly once, the pipeline count and the barrier
// before a transaction ends (txn.go).
type owner struct {
	conf *Config
	log  *service.Logger
	m    *Metrics
	cl   groupClient
	sig  *shutdown.Signaller

	inbox inbox
	// ioCtx bounds the network calls of the committer and the log-end
	// queries; stopIO cancels it at hard stop, so no call in flight
	// outlives the input.
	ioCtx  context.Context
	stopIO context.CancelFunc

	// Owned by the run goroutine. parts holds the live epoch of every
	// assigned partition; a partState not in it has ended.
	parts  map[topicPartition]*partState
	runQ   []*partState // partitions that can hand out, round robin
	parked []*readReq
	drains []*drain
	closed bool
	// clock is the time of the event being handled, read once (now) and
	// zeroed after each event, so that a burst of acks costs one reading
	// of the clock, not one per watermark move.
	clock time.Time

	lists   lists
	polls   polls
	commits commitLoop
	queries queries
	lost    lossBook
	// retries holds the nacked batches in backoff (retries.go).
	retries retries
	// fence holds hand-outs back while the group may have given this
	// member's partitions away (fence.go).
	fence fence
	// txn is exactly once's part (txn.go): the batches in the pipeline
	// and the barrier before a transaction ends.
	txn txnPart
}

// inbox is every channel into the owner goroutine, and its one channel out
// (commitJobs, to the committer). Made by newOwner, never changed.
type inbox struct {
	readCh     chan *readReq
	withdrawCh chan withdrawReq
	ackCh      chan ackMsg
	pollCh     chan pollResult
	pollWant   chan struct{} // capacity 1: a token asking the poll loop for more
	assignCh   chan assignReq
	fetchedCh  chan fetchedReq
	revokeCh   chan revokeReq
	closeCh    chan closeReq
	commitCh   chan commitDone
	// deadLetterCh brings the outcomes of dead-letter writes.
	deadLetterCh chan deadLetterDone
	endsCh       chan endsResult
	retentionCh  chan retentionResult
	drainDone    chan *drain
	// commitJobs feeds the committer goroutine.
	commitJobs chan commitJob
}

func newOwner(conf *Config, log *service.Logger, m *Metrics) *owner {
	ctx, stop := context.WithCancel(context.Background())
	return &owner{
		conf: conf,
		log:  log,
		m:    m,
		sig:  shutdown.NewSignaller(),
		inbox: inbox{
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
			deadLetterCh: make(chan deadLetterDone),
			endsCh:       make(chan endsResult),
			retentionCh:  make(chan retentionResult),
			drainDone:    make(chan *drain, 1),
			commitJobs:   make(chan commitJob, 1),
		},
		ioCtx:   ctx,
		stopIO:  stop,
		parts:   map[topicPartition]*partState{},
		lists:   newLists(),
		polls:   polls{wakePoll: func() {}},
		commits: commitLoop{metaMax: conf.CommitMetadataMaxBytes, member: memberName(conf.ClientID)},
		queries: queries{retention: map[string]int64{}},
		lost:    lossBook{lossReported: map[topicPartition][]commitmeta.Range{}, truncations: map[topicPartition][]int64{}, accepted: map[topicPartition]acceptedOffsets{}},
		fence:   newFence(conf, time.Now()),
		txn:     txnPart{on: conf.Txn != nil},
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
		case a := <-o.inbox.ackCh:
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
	defer o.retries.stop()
	o.askPoll()
	for {
		select {
		case r := <-o.inbox.readCh:
			o.parked = append(o.parked, r)
		case w := <-o.inbox.withdrawCh:
			o.onWithdraw(w)
		case a := <-o.inbox.ackCh:
			o.onAck(a)
			o.drainAcks()
		case res := <-o.inbox.pollCh:
			o.polls.pollAsked = false
			o.onPoll(res.seq, res.fetches)
			close(res.done)
		case r := <-o.inbox.assignCh:
			o.onAssign(r.tps)
			o.listEpochs(r.tps)
			close(r.done)
			if o.anyUndescribed(r.tps) {
				o.queryRetention()
			}
		case r := <-o.inbox.fetchedCh:
			o.onFetched(r.commits)
			for tp := range r.commits {
				if p := o.parts[tp]; p != nil {
					o.lists.gauges.add(p) // the lag's resume point
				}
			}
			close(r.done)
		case r := <-o.inbox.revokeCh:
			o.onRevoke(r)
		case r := <-o.inbox.closeCh:
			o.onClose(r)
		case c := <-o.inbox.commitCh:
			o.onCommitDone(c)
		case r := <-o.inbox.endsCh:
			o.onEnds(r)
		case r := <-o.inbox.retentionCh:
			o.onRetention(r)
		case <-retentionTick.C:
			o.queryRetention()
		case d := <-o.inbox.deadLetterCh:
			o.onDeadLetterDone(d)
		case <-o.retries.fired():
			for _, b := range o.retries.takeDue(o.now()) {
				o.onRetryDue(b)
			}
		case d := <-o.inbox.drainDone:
			o.finishDrain(d)
		case <-o.fence.wake():
			// A heartbeat answered: serve below sees whether the fence lifts.
		case <-commitTick.C:
			if o.txn.on {
				o.txnTick()
			} else {
				o.commit()
			}
		case now := <-gaugeTick.C:
			o.publishGauges(now)
			o.checkStalls(now)
			o.expireLosses(now)
		case <-lagTick.C:
			if o.anyPaused() || len(o.lists.failed.parts) > 0 {
				o.queryEnds()
			}
		case <-o.sig.HardStopChan():
			for _, r := range o.parked {
				r.reply <- nil
			}
			return
		}
		if len(o.polls.rewinds) > 0 {
			o.listEpochs(nil) // a drain just ended in a successor waiting for its rewind
		}
		if o.txn.fatal != nil {
			for _, r := range o.parked {
				r.reply <- nil
			}
			return // Engine.Failed says why; the input starts anew
		}
		o.txnStep()
		o.serve()
		o.askPoll()
		o.clock = time.Time{} // the next event reads it afresh
	}
}
