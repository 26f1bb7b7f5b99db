package engine

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupClient is all the owner asks of kgo: flip a partition's fetch state,
// rewind, commit, and query log ends. Pause, resume and rewind only change
// client state and are called from the owner goroutine; Commit and the query
// block on the network and run on the committer, a rebalance callback,
// Close, or a query goroutine, never on the owner.
//
// kgoGroupClient is the real one; the owner's unit tests use a fake. All
// implementations must be safe for concurrent use.
type groupClient interface {
	PauseFetchPartitions(topicPartitions map[string][]int32) map[string][]int32
	ResumeFetchPartitions(topicPartitions map[string][]int32)
	SetOffsets(offsets map[string]map[int32]kgo.EpochOffset)
	// Commit commits set, with its metadata, and waits for the answer.
	// final selects a commit a rebalance callback may make (see
	// commitAndWait).
	Commit(ctx context.Context, set commitSet, final bool) commitResult
	// ListEndOffsets lists the log ends of topics: the high watermarks, or
	// under read_committed the last stable offsets.
	ListEndOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error)
	// DescribeRetention returns the time retention of topics, in ms, -1
	// where none applies; a topic that could not be described is missing.
	DescribeRetention(ctx context.Context, topics ...string) (map[string]int64, error)
	// ListStartOffsets lists the log starts of topics.
	ListStartOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error)
}

// kgoGroupClient is the groupClient of a real kgo client.
type kgoGroupClient struct {
	*kgo.Client
	readCommitted bool
}

// Commit sends one OffsetCommit. The metadata goes in through
// kgo.PreCommitFnContext, which runs after kgo has filled the request; every
// partition's Metadata then points at the one member ID string, so each
// gets a pointer of its own, never a write through the shared one.
func (c kgoGroupClient) Commit(ctx context.Context, set commitSet, final bool) commitResult {
	var (
		res  commitResult
		done = make(chan struct{})
	)
	if set.meta != nil {
		ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
			for i := range req.Topics {
				t := &req.Topics[i]
				for j := range t.Partitions {
					p := &t.Partitions[j]
					if m, ok := set.meta[topicPartition{t.Topic, p.Partition}]; ok {
						p.Metadata = kmsg.StringPtr(m)
					}
				}
			}
			return nil
		})
	}
	onDone := func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		defer close(done)
		if err != nil {
			res.err = err
			return
		}
		res.errs = responseErrors(set.offsets, resp)
	}
	if final {
		c.CommitOffsetsSync(ctx, set.offsets, onDone)
	} else {
		c.CommitOffsets(ctx, set.offsets, onDone)
	}
	<-done
	return res
}

func (c kgoGroupClient) ListEndOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
	if c.readCommitted {
		return kadm.NewClient(c.Client).ListCommittedOffsets(ctx, topics...)
	}
	return kadm.NewClient(c.Client).ListEndOffsets(ctx, topics...)
}

func (c kgoGroupClient) ListStartOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
	return kadm.NewClient(c.Client).ListStartOffsets(ctx, topics...)
}

func (c kgoGroupClient) DescribeRetention(ctx context.Context, topics ...string) (map[string]int64, error) {
	rcs, err := kadm.NewClient(c.Client).DescribeTopicConfigs(ctx, topics...)
	out := map[string]int64{}
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		if ms, ok := topicRetention(rc); ok {
			out[rc.Name] = ms
		}
	}
	return out, err
}
