package kafkaconn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("fetch offsets: %w", kerr.CoordinatorNotAvailable), true},
		{kerr.CoordinatorLoadInProgress, true},
		{kerr.NotCoordinator, true},
		{kerr.LeaderNotAvailable, true},
		{kerr.NotLeaderForPartition, true},
		// A misspelt topic does not appear by waiting.
		{kerr.UnknownTopicOrPartition, false},
		{kerr.GroupAuthorizationFailed, false},
		{context.DeadlineExceeded, false},
		{nil, false},
	} {
		assert.Equalf(t, c.want, Transient(c.err), "Transient(%v)", c.err)
	}
}

func TestRetry(t *testing.T) {
	// Transient errors are retried until the function succeeds.
	calls := 0
	r, err := Retry(t.Context(), func(context.Context) error {
		if calls++; calls < 3 {
			return fmt.Errorf("find coordinator: %w", kerr.CoordinatorNotAvailable)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, r.Tries)
	assert.Regexp(t, `^retried 2 time\(s\) over .*: find coordinator: COORDINATOR_NOT_AVAILABLE`, r.String())

	// Any other error ends it, as it is, after retries too.
	calls = 0
	r, err = Retry(t.Context(), func(context.Context) error {
		if calls++; calls < 2 {
			return kerr.NotCoordinator
		}
		return kerr.GroupIDNotFound
	})
	assert.Equal(t, kerr.GroupIDNotFound, err)
	assert.False(t, Transient(err))
	assert.Regexp(t, `^retried 1 time\(s\) over .*: NOT_COORDINATOR`, r.String())

	// Any other error ends it at once; a first-try success says nothing.
	r, err = Retry(t.Context(), func(context.Context) error { return kerr.UnknownTopicOrPartition })
	assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
	assert.Equal(t, 1, r.Tries)
	assert.Equal(t, "UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.", err.Error())
	r, err = Retry(t.Context(), func(context.Context) error { return nil })
	require.NoError(t, err)
	assert.Empty(t, r.String())

	// At the deadline it gives up with the last transient error, not the
	// context's.
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	r, err = Retry(ctx, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
			return kerr.CoordinatorLoadInProgress
		}
	})
	assert.ErrorIs(t, err, kerr.CoordinatorLoadInProgress)
	assert.Greater(t, r.Tries, 1)
	assert.Regexp(t, `^gave up after \d+ tries over .*: COORDINATOR_LOAD_IN_PROGRESS`, err.Error())
	assert.True(t, Transient(err), "a give-up is still the broker's transient answer")
}
