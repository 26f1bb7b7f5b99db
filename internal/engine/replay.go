package engine

import "github.com/twmb/franz-go/pkg/kgo"

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
