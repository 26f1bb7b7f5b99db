package status

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// status --share-group reports a share group's share-partitions, members
// and limits, as the kafka_share input leaves them: here a member accepted
// two of three records and is still in the group.
func TestStatusShareGroup(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
		kfake.BrokerConfigs(map[string]string{"group.share.delivery.count.limit": "7"}))
	require.NoError(t, err)
	defer kc.Close()
	addr := kc.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer admin.Close()
	for _, v := range []string{"a", "b", "c"} {
		require.NoError(t, admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte(v)}).FirstErr())
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "workers"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	_, err = req.RequestWith(ctx, admin)
	require.NoError(t, err)

	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup("workers"), kgo.ConsumeTopics("t"),
		kgo.ShareMaxRecords(2), kgo.ShareMaxRecordsStrict())
	require.NoError(t, err)
	defer member.Close()
	var polled []*kgo.Record
	for len(polled) < 2 {
		fs := member.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		polled = append(polled, fs.Records()...)
	}
	for _, r := range polled[:2] {
		r.Ack(kgo.AckAccept)
	}
	require.NoError(t, member.FlushAcks(ctx))

	var doc jsonShareReport
	require.Eventually(t, func() bool {
		var out, errOut bytes.Buffer
		code := Run(ctx, Options{SeedBrokers: []string{addr}, ShareGroup: "workers", Format: "json", Timeout: 10 * time.Second}, &out, &errOut)
		if code != ExitHealthy {
			t.Logf("exit %d: %s", code, errOut.String())
			return false
		}
		doc = jsonShareReport{}
		require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
		return len(doc.Partitions) == 1 && doc.Partitions[0].StartOffset == 2
	}, 15*time.Second, 50*time.Millisecond)
	require.Equal(t, "workers", doc.Group)
	require.Equal(t, int32(7), doc.DeliveryLimit, "the broker's delivery limit")
	require.Equal(t, int64(30000), doc.LockDuration, "Kafka's default lock")
	require.Len(t, doc.Members, 1)
	require.Equal(t, 1, doc.Partitions[0].Members)

	var out, errOut bytes.Buffer
	require.Equal(t, ExitHealthy, Run(ctx, Options{SeedBrokers: []string{addr}, ShareGroup: "workers", Timeout: 10 * time.Second}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "delivery count limit 7, record lock 30000 ms")

	// -c reads the config's kafka_share input for the connection.
	path := filepath.Join(t.TempDir(), "share.yaml")
	require.NoError(t, os.WriteFile(path, []byte("input:\n  kafka_share:\n    seed_brokers: [ "+addr+" ]\n    topics: [ t ]\n    share_group: workers\noutput:\n  drop: {}\n"), 0o600))
	out.Reset()
	require.Equal(t, ExitHealthy, Run(ctx, Options{ConfigPath: path, ShareGroup: "workers", Timeout: 10 * time.Second}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "share group workers")
}
