package plugin

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// syncBuf is a bytes.Buffer safe for the logger's and the test's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bug (issue 30): with a subscribed topic missing, the input said "now
// active" and then nothing for minutes. The watch names the topic at once,
// again with a growing interval, and says when it exists.
func TestWatchTopicsWarnsUntilTheTopicExists(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "present"))
	require.NoError(t, err)
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)

	var out syncBuf
	log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&out, nil)))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchTopics(ctx, adm, []string{"present", "orders"}, log)
	}()
	require.Eventually(t, func() bool {
		return bytes.Contains([]byte(out.String()), []byte("subscribed topic(s) orders do not exist"))
	},
		10*time.Second, 10*time.Millisecond, "the first check is at once")
	assert.Contains(t, out.String(), "checking again in 10s")
	assert.NotContains(t, out.String(), "present do not", "an existing topic is not named")

	_, err = adm.CreateTopic(t.Context(), 1, 1, nil, "orders")
	require.NoError(t, err)
	cancel() // the next check is 10 s away: end it, and check that it ends
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("watchTopics did not end with its context")
	}

	// Every topic exists: one check, nothing said, and it ends by itself.
	// A new client: kgo answers a metadata request from its cache for a
	// while (MetadataMinAge, 5 s; the watch waits 10 s between checks).
	cl2, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl2.Close()
	adm = kadm.NewClient(cl2)
	var out2 syncBuf
	log = service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&out2, nil)))
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		watchTopics(t.Context(), adm, []string{"present", "orders"}, log)
	}()
	select {
	case <-done2:
	case <-time.After(10 * time.Second):
		t.Fatalf("watchTopics did not end once every topic existed: %s", out2.String())
	}
	assert.Empty(t, out2.String())
}
