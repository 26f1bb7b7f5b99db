package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// brokerEnv reads the broker's address and version from the env file that
// resources/kafka/broker.sh start writes (KAFKA_ENV_FILE), or from
// KAFKA_BROKERS and KAFKA_VERSION (testkit.LookupBrokerEnv). The driver
// never starts a broker itself: bench/e2e.sh (make bench-e2e) does, on
// private ports, and stops it on exit.
func brokerEnv() (brokers, version string, err error) {
	e, err := testkit.LookupBrokerEnv("")
	if err != nil {
		return "", "", fmt.Errorf("no broker (%w): set KAFKA_ENV_FILE (bash resources/kafka/broker.sh start writes $KAFKA_RUN_DIR/env) or KAFKA_BROKERS, or run make bench-e2e", err)
	}
	if err := e.Dial(3 * time.Second); err != nil {
		return "", "", err
	}
	return e.Brokers, e.Version, nil
}

// admin is the driver's own client: topic creation and deletion, log ends,
// committed offsets.
type admin struct {
	brokers string
	cl      *kgo.Client
	adm     *kadm.Client
}

func newAdmin(brokers string) (*admin, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return nil, err
	}
	return &admin{brokers: brokers, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (a *admin) close() { a.cl.Close() }

func (a *admin) createTopic(ctx context.Context, name string, partitions int32) error {
	resp, err := a.adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err != nil {
		return err
	}
	return resp.Err
}

func (a *admin) deleteTopics(ctx context.Context, names ...string) error {
	_, err := a.adm.DeleteTopics(ctx, names...)
	return err
}

// endOffsets returns each partition's log end.
func (a *admin) endOffsets(ctx context.Context, topic string) (map[int32]int64, error) {
	lo, err := a.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var ferr error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = o.Err
		}
		out[o.Partition] = o.Offset
	})
	return out, ferr
}

// committed returns the group's committed offset and metadata per partition
// of topic; partitions without a commit are absent.
func (a *admin) committed(ctx context.Context, group, topic string) (map[int32]kadm.OffsetResponse, error) {
	resp, err := a.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	out := map[int32]kadm.OffsetResponse{}
	for p, o := range resp[topic] {
		out[p] = o
	}
	return out, nil
}
