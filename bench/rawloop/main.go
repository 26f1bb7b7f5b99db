// Command rawloop is the client's ceiling in the end-to-end benchmark: a
// franz-go consumer in a group with autocommit that polls and counts records,
// no Benthos, no messages, no metadata. It serves the count at /metrics as
// output_sent, in the Prometheus text format, so bench/e2e watches it as it
// watches the Benthos contenders, and a CPU profile at /debug/pprof/profile.
// It runs until SIGTERM.
//
//	rawloop -brokers 127.0.0.1:9092 -topic t -group g -http 127.0.0.1:4195
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "", "seed brokers, comma separated")
	topic := flag.String("topic", "", "topic to consume")
	group := flag.String("group", "", "consumer group")
	addr := flag.String("http", "127.0.0.1:4195", "address of the /metrics endpoint")
	flag.Parse()

	// The same client settings as the baseline input: kafka_watermark's
	// fetch defaults (kgo's, but 16MiB for fetch_max_bytes) and the
	// cooperative-sticky balancer.
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(16<<20),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
	)
	if err != nil {
		log.Fatal(err)
	}
	var count atomic.Int64
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE output_sent counter\noutput_sent %d\n", count.Load())
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { _ = http.Serve(l, mux) }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		var n int64
		fetches.EachPartition(func(p kgo.FetchTopicPartition) { n += int64(len(p.Records)) })
		count.Add(n)
	}
	cl.Close()
}
