package demo

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lockedBuffer is a bytes.Buffer the demo writes to while a kfake control
// function reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Issue 30: `demo --dead-letter-after 3` printed nothing for its first 5s,
// not even what it was about to run: its heading waited until the topics
// were prepared and the records produced. The heading now comes first: it
// is out before the broker is asked to create the first topic.
func TestDemoSaysWhatItRunsBeforeItPrepares(t *testing.T) {
	t.Parallel()
	k, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(k.Close)
	var out lockedBuffer
	atCreate := make(chan string, 4) // the output when each CreateTopics came
	k.ControlKey(int16(kmsg.CreateTopics), func(kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case atCreate <- out.String():
		default:
		}
		return nil, nil, false // observe only: the broker creates the topic
	})

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()
	o := demoOptions{Brokers: k.ListenAddrs(), Topic: "start", Group: "start-group", Partitions: 2, Records: 200, FailBatches: 1,
		FailFor: time.Millisecond, StallReplayAfter: neverReplay, DeadLetterAfter: 1, MaxLatency: 5 * time.Millisecond, Duration: 40 * time.Second}
	r, err := runDemo(ctx, o, &out, false)
	require.NoError(t, err, out.String())
	require.True(t, r.Settled, out.String())

	require.Len(t, atCreate, 2, "the demo's topic and its dead-letter topic were created")
	first := <-atCreate
	assert.True(t, strings.HasPrefix(first, "watermark-connect demo: topic start, group start-group, brokers "+k.ListenAddrs()[0]+"; 200 records, "+
		"sink fails 1 batch(es) on every delivery, dead-lettered to start-dlq after 1 attempt(s)"),
		"the heading is out before the first topic is created; the output then: %q", first)
	assert.Equal(t, 1, strings.Count(out.String(), "watermark-connect demo: topic "), "one heading:\n%s", out.String())
}

// Issue 30, the other half of `--dead-letter-after 3`'s silent 5s: the
// demo's client kept kgo's default MetadataMinAge, 5s, and kadm's metadata
// questions are answered from a cache kept that long, so the dead-letter
// topic, "unknown" when ensureTopic asked before creating it, stayed
// unknown to ListEndOffsets for 5s after it was created (metadataMinAge).
func TestDemoClientAsksForMetadataAgainSoon(t *testing.T) {
	t.Parallel()
	c, err := startCluster(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(c.close)
	age, ok := c.cl.OptValue(kgo.MetadataMinAge).(time.Duration)
	require.True(t, ok)
	assert.LessOrEqual(t, age, 250*time.Millisecond, "the demo's client asks the broker again within a few of its 250ms ticks")
}
