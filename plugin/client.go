package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// clientOpts translates the config into kgo options. Autocommit is off: the
// owner commits watermarks only.
// The rebalance callbacks are bound to o, the owner of this client's
// lifetime, never read from the Input, which a failed Connect resets.
func (in *Input) clientOpts(o *owner) []kgo.Opt {
	c := in.conf
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.seedBrokers...),
		kgo.ClientID(c.clientID),
		kgo.ConsumerGroup(c.group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { in.onAssigned(o, m) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) { in.revokeOrLose(ctx, o, m, false) }),
		kgo.OnPartitionsLost(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) { in.revokeOrLose(ctx, o, m, true) }),
		kgo.SessionTimeout(c.sessionTimeout),
		kgo.RebalanceTimeout(c.rebalanceTimeout),
		kgo.HeartbeatInterval(c.heartbeat),
		kgo.FetchMaxBytes(int32(c.fetchMaxBytes)),
		kgo.FetchMaxPartitionBytes(int32(c.fetchMaxPartitionBytes)),
		kgo.FetchMaxWait(c.fetchMaxWait),
		kgo.MetadataMaxAge(c.metadataMaxAge),
		// kgo refuses a max age below its min age (5s by default).
		kgo.MetadataMinAge(min(c.metadataMaxAge, 5*time.Second)),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		// Transaction markers are kept so the owner accounts for their
		// offsets (they are never handed out): otherwise a partition that
		// ends in a marker is committed one short of its end for ever.
		kgo.KeepControlRecords(),
		kgo.WithLogger(&kgoLogger{log: in.log}),
	}
	if c.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if c.regexpTopics {
		opts = append(opts, kgo.ConsumeRegex())
		if len(c.regexpExclude) > 0 {
			opts = append(opts, kgo.ConsumeExcludeTopics(c.regexpExclude...))
		}
	}
	opts = append(opts,
		kgo.FetchMinBytes(int32(c.fetchMinBytes)),
		kgo.RequestTimeoutOverhead(c.requestTimeoutOverhead),
		kgo.ConnIdleTimeout(c.connIdleTimeout),
	)
	opts = append(opts, kgo.ConsumeTopics(c.topics...))
	if c.groupProtocol == protocolConsumer {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if c.rackID != "" {
		opts = append(opts, kgo.Rack(c.rackID))
	}
	if c.instanceID != "" {
		opts = append(opts, kgo.InstanceID(c.instanceID))
	}
	switch c.startOffset {
	case startLatest:
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	case startCommitted:
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	default:
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	opts = append(opts, kgo.OnOffsetsFetched(func(ctx context.Context, cl *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
		return in.onOffsetsFetched(ctx, o, cl, resp)
	}))
	if dial := dialOpt(c.dialer, c.tls); dial != nil {
		opts = append(opts, dial)
	}
	var mechs []sasl.Mechanism
	for _, s := range c.sasl {
		if s.mechanism != saslNone {
			mechs = append(mechs, saslMechanism(s))
		}
	}
	if len(mechs) > 0 {
		opts = append(opts, kgo.SASL(mechs...))
	}
	return opts
}

func saslMechanism(s saslConfig) sasl.Mechanism {
	switch s.mechanism {
	case saslPlain:
		return plain.Auth{User: s.username, Pass: s.password}.AsMechanism()
	case saslScram256:
		return scram.Auth{User: s.username, Pass: s.password}.AsSha256Mechanism()
	case saslScram512:
		return scram.Auth{User: s.username, Pass: s.password}.AsSha512Mechanism()
	default: // OAUTHBEARER; validate rejected anything else
		return oauth.Auth{Token: s.token, Extensions: s.extensions}.AsMechanism()
	}
}

// onOffsetsFetched runs on kgo's group goroutine when newly assigned
// partitions' committed offsets arrive, after OnPartitionsAssigned and before
// their fetch positions are set, so no record of theirs can reach the owner
// first. It hands the offsets and their metadata to the owner (the delivered
// ranges to skip), and implements start_offset: committed: a partition with
// no committed offset is paused and reported, never consumed from a guessed
// position.
func (in *Input) onOffsetsFetched(ctx context.Context, o *owner, cl *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	commits := map[topicPartition]fetchedCommit{}
	missing := map[string][]int32{}
	each := func(topic string, partition int32, offset int64, epoch int32, meta *string) {
		fc := fetchedCommit{offset: offset, epoch: epoch}
		if meta != nil {
			fc.meta = *meta
		}
		commits[topicPartition{topic, partition}] = fc
		if offset < 0 {
			missing[topic] = append(missing[topic], partition)
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			each(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata)
		}
	}
	for _, g := range resp.Groups {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				each(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata)
			}
		}
	}
	req := fetchedReq{commits: commits, done: make(chan struct{})}
	select {
	case o.fetchedCh <- req:
		select {
		case <-req.done:
		case <-o.stopped():
		}
	case <-o.stopped():
	case <-ctx.Done():
	}
	if in.conf.startOffset == startCommitted && len(missing) > 0 {
		cl.PauseFetchPartitions(missing)
		in.log.Errorf("kafka_watermark: %s is %q and these partitions have no committed offset for group %q, so they are not consumed: %v",
			fieldStartOffset, startCommitted, in.conf.group, missing)
	}
	return nil
}

// kgoLogger forwards franz-go's log lines to Benthos's logger, one level
// down for info and debug: the client is chatty at info.
type kgoLogger struct{ log *service.Logger }

func (l *kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	line := msg
	for i := 0; i+1 < len(keyvals); i += 2 {
		line += fmt.Sprintf(" %v=%v", keyvals[i], keyvals[i+1])
	}
	switch level {
	case kgo.LogLevelError:
		l.log.Errorf("kgo: %s", line)
	case kgo.LogLevelWarn:
		l.log.Warnf("kgo: %s", line)
	case kgo.LogLevelInfo:
		l.log.Debugf("kgo: %s", line)
	default:
		l.log.Tracef("kgo: %s", line)
	}
}
