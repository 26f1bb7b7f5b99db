package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerEnv reads the broker's address from the env file that
// resources/kafka/broker.sh start writes (KAFKA_ENV_FILE), or from
// KAFKA_BROKERS. The driver never starts a broker itself: bench/e2e.sh
// (make bench-e2e) does, on private ports, and stops it on exit.
func brokerEnv() (brokers, version string, err error) {
	vars := map[string]string{}
	if path := os.Getenv("KAFKA_ENV_FILE"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", "", err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
				vars[k] = strings.Trim(v, "'")
			}
		}
	} else {
		vars["KAFKA_BROKERS"] = os.Getenv("KAFKA_BROKERS")
		vars["KAFKA_VERSION"] = os.Getenv("KAFKA_VERSION")
	}
	brokers = vars["KAFKA_BROKERS"]
	if brokers == "" {
		return "", "", fmt.Errorf("no broker: set KAFKA_ENV_FILE (bash resources/kafka/broker.sh start writes $KAFKA_RUN_DIR/env) or KAFKA_BROKERS, or run make bench-e2e")
	}
	conn, err := net.DialTimeout("tcp", strings.Split(brokers, ",")[0], 3*time.Second)
	if err != nil {
		return "", "", fmt.Errorf("broker %s is not reachable: %w", brokers, err)
	}
	conn.Close()
	return brokers, vars["KAFKA_VERSION"], nil
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
