package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// demoCluster is the broker the demo runs against: an in-process kfake
// cluster by default, or a real one with --brokers. Everything the demo
// reports about commits is asked of the broker through kadm, because the
// broker's committed offset is what a restart resumes from.
type demoCluster struct {
	fake    *kfake.Cluster // nil with --brokers
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
	// log is where retry says what it retried (the demo's output); nil
	// says nothing. Set once, before the cluster is used.
	log io.Writer
}

// metadataMinAge is how long the demo's client answers kadm's questions
// about a topic from what it learnt before. kadm asks for metadata through
// kgo's cache (kadm v1.20.0 metadata.go:251, RequestCachedMetadata with
// limit 0), which kgo keeps for MetadataMinAge, 5s by default (kgo v1.22.3
// client.go:1577-1580, 3214-3220), an "unknown topic" answer included.
// ensureTopic asks whether a topic exists before it creates it, so the
// dead-letter topic, created a moment after the demo's own, was "unknown"
// to every ListEndOffsets for 5s: `demo --dead-letter-after 3` printed
// nothing for its first 5s. The demo's client asks a few questions, once:
// asking the broker again sooner costs nothing.
const metadataMinAge = 100 * time.Millisecond

// startCluster connects to brokers, or starts kfake on a random free
// loopback port when brokers is empty, and checks that a broker answers.
func startCluster(ctx context.Context, brokers []string) (*demoCluster, error) {
	c := &demoCluster{brokers: brokers}
	if len(brokers) == 0 {
		fake, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return nil, fmt.Errorf("starting the in-process Kafka: %w", err)
		}
		c.fake, c.brokers = fake, fake.ListenAddrs()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(metadataMinAge))
	if err != nil {
		c.close()
		return nil, err
	}
	c.cl, c.adm = cl, kadm.NewClient(cl)
	if err := cl.Ping(ctx); err != nil {
		c.close()
		return nil, fmt.Errorf("cannot reach Kafka at %s: %w", strings.Join(c.brokers, ","), err)
	}
	return c, nil
}

// retry runs fn, a read of the broker or a write it may repeat, again while
// the broker answers what it answers only for a while (kafkaconn.Transient:
// a broker that has just started says COORDINATOR_NOT_AVAILABLE for
// seconds), within ctx, and says on c.log what it retried, unless it gave
// up, which its error says.
func (c *demoCluster) retry(ctx context.Context, fn func(context.Context) error) error {
	r, err := kafkaconn.Retry(ctx, fn)
	if s := r.String(); s != "" && !kafkaconn.Transient(err) && c.log != nil {
		fmt.Fprintf(c.log, "kafka at %s: %s\n", strings.Join(c.brokers, ","), s)
	}
	return err
}

func (c *demoCluster) close() {
	if c.cl != nil {
		c.cl.Close()
	}
	if c.fake != nil {
		c.fake.Close()
	}
}

// ensureTopic returns the topic's partition count, creating the topic with
// the given partitions when it does not exist. An existing topic keeps its
// own partition count.
func (c *demoCluster) ensureTopic(ctx context.Context, topic string, partitions int32) (n int32, created bool, err error) {
	var details kadm.TopicDetails
	err = c.retry(ctx, func(ctx context.Context) error {
		var err error
		if details, err = c.adm.ListTopics(ctx, topic); err != nil {
			return fmt.Errorf("describing topic %q: %w", topic, err)
		}
		if d := details[topic]; details.Has(topic) && d.Err != nil {
			return fmt.Errorf("describing topic %q: %w", topic, d.Err)
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	if details.Has(topic) {
		return int32(len(details[topic].Partitions)), false, nil
	}
	if _, err := c.adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		return 0, false, fmt.Errorf("creating topic %q with %d partitions: %w", topic, partitions, err)
	}
	// A new topic reaches the brokers' (and this client's) metadata a little
	// later: wait until its every partition answers.
	for {
		ends, err := c.endOffsets(ctx, topic)
		if err == nil && len(ends) == int(partitions) {
			return partitions, true, nil
		}
		c.cl.ForceMetadataRefresh()
		select {
		case <-ctx.Done():
			return 0, false, fmt.Errorf("waiting for the new topic %q: %w (last error: %w)", topic, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// produce writes n records, each with a value of size bytes that starts
// with its partition and index, and waits until every record is
// acknowledged. With keys 0 each record's key is its index and the records
// go round robin over the partitions; else they carry keys k0 to
// k<keys-1>, each key in one partition (keyed).
func (c *demoCluster) produce(ctx context.Context, topic string, partitions int32, n, size, keys int, rng *rand.Rand) error {
	const filler = "abcdefghijklmnopqrstuvwxyz0123456789"
	rs := make([]*kgo.Record, n)
	for i := range rs {
		p, key := int32(i)%partitions, fmt.Appendf(nil, "%d", i)
		if keys > 0 {
			p, key = keyed(i, keys, partitions)
		}
		v := make([]byte, 0, max(size, 24))
		v = fmt.Appendf(v, "p%d-%d ", p, i)
		for len(v) < size {
			v = append(v, filler[rng.IntN(len(filler))])
		}
		rs[i] = &kgo.Record{Topic: topic, Partition: p, Key: key, Value: v[:max(size, 1)]}
	}
	return c.cl.ProduceSync(ctx, rs...).FirstErr()
}

// endOffsets returns every partition's log end offset.
func (c *demoCluster) endOffsets(ctx context.Context, topic string) (map[int32]int64, error) {
	var l kadm.ListedOffsets
	err := c.retry(ctx, func(ctx context.Context) error {
		var err error
		if l, err = c.adm.ListEndOffsets(ctx, topic); err == nil {
			err = l.Error()
		}
		if err != nil {
			return fmt.Errorf("listing end offsets of %q: %w", topic, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// committed returns the group's committed offset of every partition of the
// topic that has one.
func (c *demoCluster) committed(ctx context.Context, group, topic string) (map[int32]int64, error) {
	var rs kadm.OffsetResponses
	err := c.retry(ctx, func(ctx context.Context) error {
		var err error
		if rs, err = c.adm.FetchOffsetsForTopics(ctx, group, topic); err == nil {
			err = rs.Error()
		}
		if err != nil {
			return fmt.Errorf("fetching the offsets of group %q: %w", group, err)
		}
		return nil
	})
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}, nil // a group that never committed
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	rs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out, nil
}

// commit commits offsets for a group that has no member: used once, before
// the pipeline starts, so a fresh group on a real topic starts at the
// records this run produces rather than at the topic's old data.
func (c *demoCluster) commit(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	var offs kadm.Offsets
	for p, at := range offsets {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	// The same offsets again: a retry commits nothing new.
	return c.retry(ctx, func(ctx context.Context) error {
		rs, err := c.adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			return fmt.Errorf("committing the start offsets of group %q: %w", group, err)
		}
		return nil
	})
}
