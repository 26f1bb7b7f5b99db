package demo

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// demo --share on kfake: every record is accepted exactly once but the
// poison one; each record the sink fails once comes back at attempt 2 and
// is accepted; the poison record fails at attempts 1, 2 and 3 and is then
// in the dead-letter topic, read back from the broker with its
// provenance; the records are spread over the members; the summary says
// all of it.
func TestDemoShare(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var buf bytes.Buffer
	r, err := runShareDemo(ctx, shareOptions{Seed: 12, MaxLatency: 40 * time.Millisecond, LogWriter: io.Discard}, &buf)
	out := buf.String()
	require.NoError(t, err, out)
	require.True(t, r.Settled, out)
	require.Equal(t, 60, r.Records)
	require.Len(t, r.FailOnce, 4)

	byOffset := map[int64][]shareDelivery{}
	members := map[string]int{}
	for _, d := range r.Deliveries {
		byOffset[d.Offset] = append(byOffset[d.Offset], d)
		members[d.Member]++
	}
	for o := range int64(r.Records) {
		if o == r.Poison {
			assert.Zero(t, r.Accepted[o], "the poison record is never accepted")
			continue
		}
		assert.Equal(t, 1, r.Accepted[o], "offset %d accepted once:\n%s", o, out)
	}
	for _, o := range r.FailOnce {
		ds := byOffset[o]
		require.Len(t, ds, 2, "offset %d: failed once, then accepted:\n%s", o, out)
		assert.Equal(t, shareDelivery{Attempt: 1, Failed: true}, shareDelivery{Attempt: ds[0].Attempt, Failed: ds[0].Failed})
		assert.Equal(t, shareDelivery{Attempt: 2}, shareDelivery{Attempt: ds[1].Attempt, Failed: ds[1].Failed})
	}
	poison := byOffset[r.Poison]
	require.Len(t, poison, shareMaxAttempts, out)
	for i, d := range poison {
		assert.Equal(t, i+1, d.Attempt)
		assert.True(t, d.Failed)
	}
	assert.GreaterOrEqual(t, len(members), 2, "the records spread over the members: %v", members)

	require.NoError(t, r.LettersErr)
	require.Len(t, r.Letters, 1, out)
	l := r.Letters[0]
	require.NoError(t, l.Err)
	assert.Equal(t, "watermark-demo-share", l.Prov.Topic)
	assert.Equal(t, r.Poison, l.Prov.Offset)
	assert.Equal(t, shareMaxAttempts, l.Prov.Attempts)
	assert.Equal(t, poison[len(poison)-1].Member+"@", l.Prov.Member[:len(poison[len(poison)-1].Member)+1], "dead-lettered by the member of the last attempt")

	for _, want := range []string{"who got what:", "member-1:", "member-2:", "member-3:", "(poison): attempt 1 ", "attempt 3 ",
		"failed: dead-lettered", "dead-letter topic watermark-demo-share-dlq, read back from the broker:",
		"every record accepted or dead-lettered: 59 of 60 records accepted (0 duplicates), 1 dead-lettered, 0 never accepted"} {
		assert.Contains(t, out, want)
	}
}

// A flag of the other demo is refused with --share, by name; a bad value
// names the flag, the value and the limit.
func TestDemoShareFlags(t *testing.T) {
	run := func(args ...string) string {
		var out bytes.Buffer
		app := &cli.App{Name: "watermark-connect", Writer: &out, ErrWriter: &out, Commands: []*cli.Command{Command()},
			ExitErrHandler: func(*cli.Context, error) {}}
		err := app.Run(append([]string{"watermark-connect", "demo", "--share"}, args...))
		require.Error(t, err, args)
		return err.Error()
	}
	msg := run("--partitions", "4", "--ordering", "key")
	assert.Contains(t, msg, "--partitions does not apply to demo --share")
	assert.Contains(t, msg, "--ordering does not apply to demo --share")
	msg = run("--records", "1")
	assert.Contains(t, msg, "--records with --share must be between 2 and 10000")
	assert.Contains(t, msg, "got 1")
}
