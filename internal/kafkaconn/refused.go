package kafkaconn

import (
	"context"
	"errors"
	"net"
	"syscall"
)

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
