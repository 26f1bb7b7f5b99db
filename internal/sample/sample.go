package sample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// Exit statuses.
const (
	ExitOK     = 0
	ExitFailed = 1 // nothing or part was produced: the reason is on stderr
)

// Bounds of the flags.
const (
	maxRecords    = 10_000_000
	maxPartitions = 10_000
	customers     = 50 // keys: records of one customer share a partition, in order
)

// Options are the command's inputs. A value; Run neither keeps nor
// modifies it.
type Options struct {
	Conn       status.Conn
	Topic      string
	Partitions int // for a topic that does not exist yet
	Records    int
	Timeout    time.Duration
	Seed       uint64 // of the values; 0 is a seed of its own per run
}

func (o Options) check() error {
	var errs []error
	if o.Topic == "" {
		errs = append(errs, errors.New("--topic is required"))
	}
	if o.Partitions < 1 || o.Partitions > maxPartitions {
		errs = append(errs, fmt.Errorf("--partitions (%d) must be between 1 and %d", o.Partitions, maxPartitions))
	}
	if o.Records < 0 || o.Records > maxRecords {
		errs = append(errs, fmt.Errorf("--records (%d) must be between 0 and %d", o.Records, maxRecords))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout (%v) must be positive", o.Timeout))
	}
	return errors.Join(errs...)
}

// Run creates o.Topic if it does not exist, produces o.Records sample
// records to it (JSON orders keyed by customer, acks from all in-sync
// replicas), and writes what it did to stdout. It returns ExitOK, or
// ExitFailed with the reason on stderr.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) int {
	var secrets []string
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sample: %s\n", status.Scrub(err.Error(), secrets))
		return ExitFailed
	}
	if err := o.check(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	in, err := o.Conn.Load()
	if err != nil {
		return fail(err)
	}
	secrets = in.Target.Secrets()
	cl, err := status.Connect(ctx, in.Target, kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return fail(timedOut(ctx, o.Timeout, err))
	}
	defer cl.Close()

	parts, created, err := ensureTopic(ctx, kadm.NewClient(cl), o.Topic, o.Partitions)
	if err != nil {
		return fail(timedOut(ctx, o.Timeout, err))
	}
	if created {
		fmt.Fprintf(stdout, "created topic %s with %d partition(s)\n", o.Topic, parts)
	} else {
		fmt.Fprintf(stdout, "topic %s exists with %d partition(s)\n", o.Topic, parts)
	}
	n, err := produce(ctx, cl, o)
	fmt.Fprintf(stdout, "produced %d of %d record(s) to %s\n", n, o.Records, o.Topic)
	if err != nil {
		return fail(timedOut(ctx, o.Timeout, err))
	}
	return ExitOK
}

// ensureTopic creates topic with partitions partitions and the broker's
// default replication when it does not exist, and returns how many
// partitions it has and whether it was created.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) (int, bool, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, false, fmt.Errorf("listing topic %s: %w", topic, err)
	}
	if d, ok := td[topic]; ok && d.Err == nil {
		return len(d.Partitions), false, nil
	} else if ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return 0, false, fmt.Errorf("topic %s: %w", topic, d.Err)
	}
	r, err := adm.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	if err == nil {
		err = r.Err
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		return ensureTopic(ctx, adm, topic, partitions) // created meanwhile
	case err != nil:
		return 0, false, fmt.Errorf("creating topic %s with %d partition(s): %w", topic, partitions, err)
	}
	return partitions, true, nil
}

// produce writes o.Records records in batches, and returns how many the
// brokers acknowledged.
func produce(ctx context.Context, cl *kgo.Client, o Options) (int, error) {
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, 30))
	const batch = 1000
	done := 0
	recs := make([]*kgo.Record, 0, batch)
	for done < o.Records {
		recs = recs[:0]
		for i := done; i < o.Records && len(recs) < batch; i++ {
			recs = append(recs, record(o.Topic, i, rng))
		}
		var errs []error
		for _, r := range cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				errs = append(errs, r.Err)
			} else {
				done++
			}
		}
		if len(errs) > 0 {
			return done, fmt.Errorf("producing to %s: %w", o.Topic, errs[0])
		}
	}
	return done, nil
}

// record is the i-th sample record: an order of one of the customers, as
// JSON, keyed by the customer.
func record(topic string, i int, rng *rand.Rand) *kgo.Record {
	customer := "customer-" + strconv.Itoa(rng.IntN(customers))
	cents := 100 + rng.IntN(99_900)
	value := fmt.Appendf(nil, `{"order_id":%d,"customer":%q,"amount":"%d.%02d","items":%d}`,
		i, customer, cents/100, cents%100, 1+rng.IntN(5))
	return &kgo.Record{Topic: topic, Key: []byte(customer), Value: value}
}

// timedOut names the timeout when ctx's deadline cut err short.
func timedOut(ctx context.Context, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("gave up after --timeout %v: %w", timeout, err)
	}
	return err
}
