package engine

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// replayPart is an epoch's part in a replay in place (stall.go): where its
// rewind goes and from which poll it takes records, and the stall it
// replays. Owned by the owner goroutine, inside its partState.
type replayPart struct {
	// minPoll is the first poll whose records this epoch takes: 0, or,
	// for an epoch that replays in place, the first poll after its rewind
	// (noPoll until then); rewindTo is where the rewind goes.
	minPoll  uint64
	rewindTo kgo.EpochOffset
	// firstAtMost, for an epoch that replays in place, is the failed
	// batch's first offset, -1 for any other epoch. A first fetch that
	// starts beyond it was read from the rewound position all the same
	// (kgo's SetOffsets ends the consumer session, waits for every fetch of
	// the old one to die and discards what they buffered before it moves
	// the cursor, kgo v1.22.3 consumer.go:2012-2044, 1225-1228; minPoll
	// drops the polls that started before): the failed batch's records are
	// gone, deleted (loss.go reports them) or compacted (said at INFO).
	firstAtMost int64
	// state counts the replays in place in a row at one offset, and
	// keeps the stall they replay.
	state replayState
}

// polls is the owner's side of the poll loop: whether a poll is asked for,
// the last poll handled, how to end the poll in progress early, and the
// epochs waiting for the next poll window to be rewound in. Owned by the
// owner goroutine.
type polls struct {
	pollAsked bool
	// lastPoll is the number of the last poll handled.
	lastPoll uint64
	// wakePoll ends the poll in progress early (poller.wake), so that a
	// rewind gets its poll window soon; a no-op in unit tests. Set before
	// run starts, never changed.
	wakePoll func()
	// rewinds are the epochs waiting for the next poll window to be
	// rewound in (stall.go).
	rewinds []*partState
}

// maxReplayShift caps the replay backoff at 16 x stall_replay_after.
const maxReplayShift = 4

// replayState is what survives a replay: how many replays in a row stalled at
// offset, and the stall they replay (its failed batch's offsets, first nack,
// attempts and error class), which the partition goes on showing until the
// batch is delivered.
type replayState struct {
	offset      int64
	count       int
	first, last int64
	since       time.Time
	attempts    int
	reason      string
}

// noPoll is the minPoll of an epoch waiting for its rewind: it takes no
// record until the rewind is made.
const noPoll = math.MaxUint64

// beginReplay drains p before its rewind (step 1).
func (o *owner) beginReplay(p *partState) {
	o.drainThen(p, o.rewind)
}

// rewind ends p's epoch after its replay drain and starts the one that reads
// it again (step 2): its successor (successor.go), which reads the same log
// from the watermark, on from the next poll window.
func (o *owner) rewind(old *partState) {
	if !old.live() {
		return // revoked or lost meanwhile: the next owner replays it
	}
	base, _ := old.commitBase()
	stalled, _, ok := old.stallInfo()
	np := o.succeed(old, succession{base: base, leaderEpoch: old.positionLeaderEpoch(base), holdsTo: noTruncation})
	if ok {
		np.replay.firstAtMost = stalled.First
	}
	if np.replay.state.count == 0 || np.replay.state.offset != base {
		np.replay.state = replayState{offset: base}
	}
	np.replay.state.count++
	np.replay.state.first, np.replay.state.last = stalled.First, stalled.Last
	np.replay.state.since, np.replay.state.attempts, np.replay.state.reason = stalled.Since, stalled.Attempts, stalled.Reason
	o.rewindLater(np)
	o.m.stallReplays.Incr(1, np.labels[:]...)
	o.log.Warnf("kafka_watermark: replaying %s/%d in place from offset %d (replay %d in a row at this offset; the failed batch was delivered %d time(s)); last error: %s",
		np.tp.topic, np.tp.partition, base, np.replay.state.count, stalled.Attempts, stalled.Reason)
}

// applyRewinds moves the fetch position of every epoch waiting for its
// rewind back to its watermark (step 3). Called from onPoll, in the window
// between a poll's return and AllowRebalance; the epoch then takes records
// from later polls only.
func (o *owner) applyRewinds(seq uint64) {
	for _, p := range o.polls.rewinds {
		if !p.live() || p.draining {
			continue // revoked, lost or closed since: not this member's to move
		}
		o.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{p.tp.topic: {p.tp.partition: p.replay.rewindTo}})
		p.replay.minPoll = seq + 1
	}
	o.polls.rewinds = o.polls.rewinds[:0]
}
