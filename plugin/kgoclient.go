package plugin

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupClient is all the owner asks of kgo: flip a partition's fetch state,
// commit, rewind, and query log ends. The first three only change client
// state or queue a request, and are called from the owner goroutine; the
// commits and the query block on the network and run on the committer, a
// rebalance callback, Close, or a query goroutine, never on the owner.
//
// *kgo.Client's methods have exactly these signatures; kgoGroupClient adds
// the log-end query through kadm. The owner's unit tests use a fake. All
// implementations must be safe for concurrent use.
type groupClient interface {
	PauseFetchPartitions(topicPartitions map[string][]int32) map[string][]int32
	ResumeFetchPartitions(topicPartitions map[string][]int32)
	SetOffsets(offsets map[string]map[int32]kgo.EpochOffset)
	CommitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset, onDone func(*kgo.Client, *kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse, error))
	CommitOffsetsSync(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset, onDone func(*kgo.Client, *kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse, error))
	ListEndOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error)
}

// kgoGroupClient is the groupClient of a real kgo client.
type kgoGroupClient struct{ *kgo.Client }

func (c kgoGroupClient) ListEndOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
	return kadm.NewClient(c.Client).ListEndOffsets(ctx, topics...)
}
