package deadletter_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
)

func Example() {
	failed := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := &kgo.Record{
		Topic: "orders", Partition: 3, Offset: 1207, Timestamp: failed.Add(-time.Minute),
		Key: []byte("k"), Value: []byte("v"),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t-1")}},
	}
	l := deadletter.Letter(r, "orders.dlq", deadletter.Failure{
		Attempts: 4, Error: "http: status=503", FirstFailed: failed, Member: "wm@pod-7",
	})
	for _, h := range l.Headers {
		fmt.Printf("%s=%s\n", h.Key, h.Value)
	}

	l.Partition, l.Offset = 0, 42 // where the dead-letter topic stored it
	p, _ := deadletter.Parse(l)
	fmt.Printf("%s/%d@%d failed %d times since %s\n", p.Topic, p.Partition, p.Offset, p.Attempts, p.FirstFailed.Format(time.RFC3339))

	back := deadletter.Redriven(l, p.Topic)
	fmt.Printf("to %s: %s=%s %s=%s\n", back.Topic, back.Headers[0].Key, back.Headers[0].Value, back.Headers[1].Key, back.Headers[1].Value)
	// Output:
	// trace=t-1
	// dead_letter_topic=orders
	// dead_letter_partition=3
	// dead_letter_offset=1207
	// dead_letter_timestamp_ms=1772366340000
	// dead_letter_attempts=4
	// dead_letter_error=http: status=503
	// dead_letter_first_failed_ms=1772366400000
	// dead_letter_member=wm@pod-7
	// orders/3@1207 failed 4 times since 2026-03-01T12:00:00Z
	// to orders: trace=t-1 dead_letter_redriven_from=orders.dlq/0/42
}
