package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transient reports whether err holds an answer that a broker gives for a
// while and then stops giving without anyone doing anything: a broker that
// has just started answers COORDINATOR_NOT_AVAILABLE or
// COORDINATOR_LOAD_IN_PROGRESS until it has loaded __consumer_offsets
// (seconds), NOT_COORDINATOR while a group's coordinator moves, and
// LEADER_NOT_AVAILABLE or NOT_LEADER_OR_FOLLOWER while a partition's leader
// is elected. kgo does not retry these for a command: a coordinator's
// FindCoordinator is sent once (client.go:2274) and its error is the
// request's.
//
// kerr.IsRetriable is wider, made for clients that wait for ever: it
// includes UNKNOWN_TOPIC_OR_PARTITION, which a command must report at once
// (a misspelt topic does not appear by waiting).
func Transient(err error) bool {
	for _, e := range []error{
		kerr.CoordinatorNotAvailable,
		kerr.CoordinatorLoadInProgress,
		kerr.NotCoordinator,
		kerr.LeaderNotAvailable,
		kerr.NotLeaderForPartition,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Retry backoff: the first retry waits retryFirstWait, each next one twice
// the last, up to retryMaxWait. A fresh broker's coordinator is usually
// ready within a few seconds, and a command's --timeout is 10 s or so.
const (
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = time.Second
)

// Retries is what Retry did: how many times it called its function and,
// when more than once, the transient error that made it try again last
// and how long the tries took. A value.
type Retries struct {
	Tries int           // calls of the function, at least 1
	Last  error         // the last transient error; nil when the first try was the last
	Took  time.Duration // from the first try to the end of the last
}

// String says what was retried, for a line after a success: "retried 3
// time(s) over 1.2s: <last transient error>"; "" when nothing was.
func (r Retries) String() string {
	if r.Tries <= 1 || r.Last == nil {
		return ""
	}
	return fmt.Sprintf("retried %d time(s) over %v: %v", r.Tries-1, r.Took.Round(10*time.Millisecond), r.Last)
}

// Retry calls fn until it returns nil or an error that is not Transient,
// waiting a growing time between tries (100 ms doubling to 1 s), for as long
// as ctx lasts: a command's --timeout bounds its retries as it bounds one
// try. It returns fn's last error as it is, an answer such as an unknown
// group being no reason to retry; when ctx ends while the broker still
// answers a transient error, it gives up with "gave up after <n> tries over
// <d>: <the last transient error>" (the last try's own error would say
// nothing but "context deadline exceeded"), which is itself Transient. The
// caller says what was retried (Retries.String) unless it gave up.
//
// Retry keeps no state; fn is called from the caller's goroutine.
func Retry(ctx context.Context, fn func(context.Context) error) (Retries, error) {
	start := time.Now()
	wait := retryFirstWait
	var r Retries
	for {
		r.Tries++
		err := fn(ctx)
		r.Took = time.Since(start)
		if err == nil {
			return r, nil
		}
		if ctx.Err() != nil && r.Last != nil {
			return r, r.gaveUp(r.Last)
		}
		if !Transient(err) {
			return r, err
		}
		r.Last = err
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			r.Took = time.Since(start)
			return r, r.gaveUp(err)
		case <-t.C:
		}
		wait = min(2*wait, retryMaxWait)
	}
}

// gaveUp is err after retries: "gave up after <n> tries over <d>: <err>".
func (r Retries) gaveUp(err error) error {
	return fmt.Errorf("gave up after %d tries over %v: %w", r.Tries, r.Took.Round(10*time.Millisecond), err)
}
