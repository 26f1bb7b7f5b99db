package plugin

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/engine"
)

// clientOpts translates the config into kgo options: the connection's from
// kafkaconn (seed brokers, client ID, TLS, SASL, the tcp dialer, request
// retries and timeouts), then the consumer group's. Autocommit is off: the
// owner commits watermarks only.
// The group callbacks are bound to e, the engine of this client's
// lifetime, never read from the Input, which a failed Connect resets.
func (in *Input) clientOpts(e *engine.Engine) []kgo.Opt {
	c := in.conf
	opts := c.conn().Opts()
	opts = append(opts,
		kgo.ConsumerGroup(c.group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(c.sessionTimeout),
		kgo.RebalanceTimeout(c.rebalanceTimeout),
		kgo.HeartbeatInterval(c.heartbeat),
		kgo.FetchMaxBytes(int32(c.fetchMaxBytes)),
		kgo.FetchMaxPartitionBytes(int32(c.fetchMaxPartitionBytes)),
		kgo.FetchMaxWait(c.fetchMaxWait),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		// Transaction markers are kept so the owner accounts for their
		// offsets (they are never handed out): otherwise a partition that
		// ends in a marker is committed one short of its end for ever.
		kgo.KeepControlRecords(),
	)
	opts = append(opts, in.connLog.opts()...)
	if c.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if c.regexpTopics {
		opts = append(opts, kgo.ConsumeRegex())
		if len(c.regexpExclude) > 0 {
			opts = append(opts, kgo.ConsumeExcludeTopics(c.regexpExclude...))
		}
	}
	opts = append(opts, kgo.FetchMinBytes(int32(c.fetchMinBytes)))
	opts = append(opts, kgo.ConsumeTopics(c.topics...))
	if c.groupProtocol == protocolConsumer {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	opts = append(opts, e.Options()...)
	if c.rackID != "" {
		opts = append(opts, kgo.Rack(c.rackID))
	}
	if c.instanceID != "" {
		opts = append(opts, kgo.InstanceID(c.instanceID))
	}
	opts = append(opts, offsetOpts(c.startOffset)...)
	opts = append(opts, kgo.OnOffsetsFetched(func(ctx context.Context, cl *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
		return in.onOffsetsFetched(ctx, e, cl, resp)
	}))
	return opts
}

// offsetOpts maps start_offset onto kgo's start offset only. Where a
// position that fell out of range resumes is not the user's choice: always
// the log start, the first record that still exists, whatever start_offset
// says, so that records the log still holds are never skipped and a
// partition never becomes fatal. What the log no longer holds is reported
// lost by the owner (internal/engine/loss.go).
//
// kgo v1.22.3 sets the two apart: ConsumeStartOffset places a partition
// without a commit (config.go:1668-1703), and ConsumeResetOffset handles every
// OffsetOutOfRange (config.go:1708-1757), also of a partition that has
// consumed nothing yet, such as one resuming a commit below the log start
// (source.go:1448-1465). Given alone, ConsumeResetOffset also becomes the
// start offset and a NoResetOffset start makes every OffsetOutOfRange fatal
// (client.go:545-553); with both given, neither leaks into the other. So
// start_offset: latest no longer jumps to the log end on a reset, and
// committed no longer wedges its partition. Under committed, a partition
// without a commit is paused before its first fetch (onOffsetsFetched); its
// start offset is the log start, so that it could never skip a record even
// if it were fetched (kgo's NoResetOffset, {at: -1}, is the log end:
// consumer.go:94-100).
func offsetOpts(start string) []kgo.Opt {
	startAt := kgo.NewOffset().AtStart()
	if start == startLatest {
		startAt = kgo.NewOffset().AtEnd()
	}
	return []kgo.Opt{kgo.ConsumeStartOffset(startAt), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
}

// onOffsetsFetched runs on kgo's group goroutine when newly assigned
// partitions' committed offsets arrive, after OnPartitionsAssigned and before
// their fetch positions are set, so no record of theirs can reach the owner
// first. It hands the offsets and their metadata to the owner (the delivered
// ranges to skip), and implements start_offset: committed: a partition with
// no committed offset is paused and reported, never consumed from a guessed
// position.
func (in *Input) onOffsetsFetched(ctx context.Context, e *engine.Engine, cl *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	missing := e.OffsetsFetched(ctx, resp)
	if in.conf.startOffset == startCommitted && len(missing) > 0 {
		cl.PauseFetchPartitions(missing)
		in.log.Errorf("kafka_watermark: %s is %q and these partitions have no committed offset for group %q, so they are not consumed: %v",
			fieldStartOffset, startCommitted, in.conf.group, missing)
	}
	return nil
}
