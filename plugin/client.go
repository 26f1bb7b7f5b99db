package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/watermark-connect/watermark-connect/internal/engine"
)

// clientOpts translates the config into kgo options. Autocommit is off: the
// owner commits watermarks only.
// The group callbacks are bound to e, the engine of this client's
// lifetime, never read from the Input, which a failed Connect resets.
func (in *Input) clientOpts(e *engine.Engine) []kgo.Opt {
	c := in.conf
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.seedBrokers...),
		kgo.ClientID(c.clientID),
		kgo.ConsumerGroup(c.group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(c.sessionTimeout),
		kgo.RebalanceTimeout(c.rebalanceTimeout),
		kgo.HeartbeatInterval(c.heartbeat),
		// A classic member keeps heartbeating through a broker restart
		// shorter than session_timeout: see retriableRefusals (used by
		// dialOpt below), requestRetries and retryTimeout.
		kgo.RequestRetries(requestRetries(c.sessionTimeout)),
		kgo.RetryTimeoutFn(retryTimeout(c.sessionTimeout)),
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
	opts = append(opts, dialOpt(c.dialer, c.tls))
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

// offsetOpts maps start_offset onto kgo's start offset only. Where a
// position that fell out of range resumes is not the user's choice: always
// the log start, the first record that still exists, whatever start_offset
// says, so that records the log still holds are never skipped and a
// partition never becomes fatal. What the log no longer holds is reported
// lost by the owner (loss.go).
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

// kgoDialTimeout is kgo's default dial timeout (kgo config.go:626); kgo
// applies it only to its own dialer, which dialOpt replaces.
const kgoDialTimeout = 10 * time.Second

// retriableRefusals wraps the function that dials brokers so that a refused
// connection is reported as a dial timeout.
//
// Why (kgo v1.22.3): while a broker restarts it refuses connections. A classic
// group request (Heartbeat, also JoinGroup, SyncGroup and OffsetCommit) is
// retried within its budget only while every failure is retriable
// (retryable.Request, client.go:1795-1850). The first refused dial, to the
// cached coordinator, is: failDial forgets the coordinator and turns the error
// into errChosenBrokerDead (client.go:1784-1793, 2629-2636). The retry must
// then look the coordinator up again, and that FindCoordinator is sent once,
// never retried (noShardRetryCtx, client.go:2274, 2938, 3067), and is refused
// too. That error comes back as the broker lookup's (client.go:1801-1812,
// where parseRetryErr does not run) and ends the retries: a non-timeout dial
// error is not retriable (isRetryableBrokerErr, errors.go:58-79), and the
// next-broker retry needs another broker (client.go:1839-1843). So about
// 0.3 s after the first refused heartbeat, the heartbeat loop ends the
// session (consumer_group.go:1364-1379) and manageFailWait calls
// OnPartitionsLost with every partition (consumer_group.go:456): everything
// since the last commit is replayed, whatever session_timeout is. The
// KIP-848 heartbeat does not go through this loop: it retries dial errors
// in place (consumer_group.go:1323-1334).
//
// With the refusal marked as a timeout, isDialNonTimeoutErr
// (errors.go:137-140) is false, so the failed lookup is retriable and the
// request is retried with kgo's backoff until the broker is back or the
// budget is spent: a heartbeat gives up, and the partitions are lost, only
// once its next retry would end more than session_timeout after its first
// try (client.go:1828), when the broker could have expired the member; a
// periodic commit is retried for its 30 s and lands once the broker is back.
// It stays a dial error for everything else (isAnyDialErr,
// errors.go:142-145): kgo still forgets a dead broker's coordinators and
// controller. Connect's Ping does not retry (client.go:665-693), so a seed
// that refuses still fails at once.
func retriableRefusals(dial func(ctx context.Context, network, host string) (net.Conn, error)) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		conn, err := dial(ctx, network, host)
		if err != nil {
			return nil, markRefused(err)
		}
		return conn, nil
	}
}

// markRefused wraps the Err of a refused dial's *net.OpError (fresh from
// this dial, so ours to change) in refusedDial, so that its Timeout() is
// true (net.OpError.Timeout asks its Err); any other error is left as it is.
// The message, errors.Is(err, syscall.ECONNREFUSED) and the
// *os.SyscallError inside are unchanged.
func markRefused(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" && errors.Is(oe.Err, syscall.ECONNREFUSED) {
		oe.Err = refusedDial{oe.Err}
	}
	return err
}

// refusedDial is the error of a refused dial, reported as a timeout: nothing
// listens at the address yet.
type refusedDial struct{ err error }

func (e refusedDial) Error() string { return e.err.Error() }
func (e refusedDial) Unwrap() error { return e.err }
func (e refusedDial) Timeout() bool { return true }

// requestRetries is how many times kgo may retry a request (RequestRetries,
// default 20; shouldRetry, client.go:1743-1745). kgo's backoff grows from
// 250 ms to 5 s (config.go:638-666), so 20 retries last about 80 s: a longer
// session_timeout needs more, for the heartbeat's time budget, not the count,
// to end its retries. Other requests keep their 30 s budget, which 20 retries
// already outlast.
func requestRetries(session time.Duration) int {
	return max(20, int(session/(5*time.Second))+5)
}

// leaveRetryBudget bounds how long leaving the group at shutdown is retried.
const leaveRetryBudget = 5 * time.Second

// retryTimeout is kgo's default RetryTimeoutFn (kgo client.go:511-521: the
// budget, from a request's first try, within which kgo retries it,
// client.go:1828), which RetryTimeoutFn replaces whole, with one change:
// leaving the group gets leaveRetryBudget instead of 30 s (LeaveGroup) or
// session_timeout (ConsumerGroupHeartbeat, which goes through kgo's retries
// only to leave, MemberEpoch < 0, client.go:2569-2572). Close leaves the
// group and waits for it (client.go:1394-1408); with retriableRefusals a
// refused leave is retried, so with the broker down a shutdown would
// otherwise hang for 30 s (classic) or session_timeout (consumer) after
// Input.Close's final commit, which is bounded by drain_timeout for the same
// reason. A member that does not leave is expired by the broker after its
// session timeout.
//
// Heartbeat, JoinGroup and SyncGroup keep session_timeout: a classic
// member's heartbeat is retried for the session, no longer.
func retryTimeout(session time.Duration) func(int16) time.Duration {
	return func(key int16) time.Duration {
		switch key {
		case (*kmsg.LeaveGroupRequest)(nil).Key(),
			(*kmsg.ConsumerGroupHeartbeatRequest)(nil).Key():
			return leaveRetryBudget
		case (*kmsg.JoinGroupRequest)(nil).Key(),
			(*kmsg.SyncGroupRequest)(nil).Key(),
			(*kmsg.HeartbeatRequest)(nil).Key():
			return session
		}
		return 30 * time.Second
	}
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
func (in *Input) onOffsetsFetched(ctx context.Context, e *engine.Engine, cl *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	missing := e.OffsetsFetched(ctx, resp)
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
