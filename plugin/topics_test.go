package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTopicCreatedAfterStart(t *testing.T) {
	const topic = "late-topic"
	c := newCluster(t, 1, "other")
	s := newSink()
	c.sink = s
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "late", "  metadata_max_age: 200ms\n"), 1)
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer adm.Close()
	_, err = kadm.NewClient(adm).CreateTopic(context.Background(), 2, 1, nil, topic)
	require.NoError(t, err)
	c.learnTopics(t)
	c.produce(t, topic, 2, 100)
	ends := c.endOffsets(t, topic, 2)
	waitCommitted(t, c, "late", topic, ends)
	st.stop(t)
	distinct, _ := s.counts()
	require.Equal(t, 100, distinct)
}

func TestStartOffsetCommittedSkipsUncommittedPartitions(t *testing.T) {
	const topic = "sc"
	c := newCluster(t, 2, topic)
	c.produce(t, topic, 2, 40) // 20 per partition
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer adm.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
	_, err = kadm.NewClient(adm).CommitOffsets(context.Background(), "sc", offs)
	require.NoError(t, err)

	s := newSink()
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "sc", "  start_offset: committed\n"), 1)
	require.Eventually(t, func() bool { return c.lastCommit("sc", topic, 0) == 20 }, 20*time.Second, 10*time.Millisecond, "partition 0 from its commit")
	st.stop(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.delivered, 15, "offsets 5..19 of partition 0 only")
	for off := range int64(20) {
		require.Zero(t, s.delivered[key3(topic, 1, off)], "uncommitted partition 1 is not consumed")
	}
}

func TestRegexpTopics(t *testing.T) {
	c := newCluster(t, 2, "rx-a", "rx-b", "other")
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		c.produce(t, topic, 2, 20)
	}
	s := newSink()
	c.sink = s
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, "^rx-", "rx", "  regexp_topics: true\n"), 1)
	for _, topic := range []string{"rx-a", "rx-b"} {
		waitCommitted(t, c, "rx", topic, c.endOffsets(t, topic, 2))
	}
	st.stop(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.delivered, 40, "both matching topics, nothing else")
	for k := range s.delivered {
		require.True(t, strings.HasPrefix(k, "rx-"), "delivered %s", k)
	}
}
