// Command fetchstat reads a topic from its start with kafka_watermark's
// fetch settings and reports what its fetches bring: fetch responses and
// the bytes each read, partitions and records per response, and the
// producer batches inside (records per batch). It answers how many fetches
// a record costs at a partition count, which no metric of the binary shows
// (docs/BENCHMARKS.md, issue 31). Each poll is followed by -work per record
// of busy waiting, standing in for the pipeline, so that fetches are issued
// at the pace the binary's would be.
//
//	fetchstat -brokers 127.0.0.1:39292 -topic t -records 3000000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stats counts what the hooks see; kgo calls them from its own goroutines.
type stats struct {
	mu         sync.Mutex
	fetches    int
	fetchBytes int64
	batches    int
	batchRecs  int64
	batchBytes int64
}

func (s *stats) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key != int16(kmsg.Fetch) || err != nil {
		return
	}
	s.mu.Lock()
	s.fetches++
	s.fetchBytes += int64(n)
	s.mu.Unlock()
}

func (s *stats) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	s.mu.Lock()
	s.batches++
	s.batchRecs += int64(m.NumRecords)
	s.batchBytes += int64(m.UncompressedBytes)
	s.mu.Unlock()
}

func main() {
	brokers := flag.String("brokers", "", "seed brokers, comma separated")
	topic := flag.String("topic", "", "topic to read from its start")
	records := flag.Int64("records", 0, "stop after this many records")
	maxBytes := flag.Int("fetch-max-bytes", 16<<20, "FetchMaxBytes (kafka_watermark's default)")
	partBytes := flag.Int("fetch-max-partition-bytes", 1<<20, "FetchMaxPartitionBytes")
	work := flag.Duration("work", 0, "busy time per record after each poll")
	flag.Parse()

	var s stats
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(int32(*maxBytes)),
		kgo.FetchMaxPartitionBytes(int32(*partBytes)),
		kgo.FetchMaxWait(5*time.Second),
		kgo.FetchMinBytes(1),
		kgo.WithHooks(&s),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	var got, polls, parts int64
	start := time.Now()
	for got < *records {
		fs := cl.PollFetches(context.Background())
		polls++
		n := 0
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) > 0 {
				parts++
				n += len(p.Records)
			}
		})
		got += int64(n)
		for end := time.Now().Add(time.Duration(n) * *work); time.Now().Before(end); {
		}
	}
	el := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	f := float64(s.fetches)
	fmt.Printf("records %d in %v; polls %d; fetch responses %d (%.0f records, %.2f MiB each; %.1f per million records)\n",
		got, el.Round(time.Millisecond), polls, s.fetches, float64(got)/f, float64(s.fetchBytes)/f/(1<<20), f*1e6/float64(got))
	fmt.Printf("partitions with records per poll %.1f, records per partition per poll %.0f; producer batches %d, %.0f records and %.0f KiB each\n",
		float64(parts)/float64(polls), float64(got)/float64(parts), s.batches, float64(s.batchRecs)/float64(s.batches), float64(s.batchBytes)/float64(s.batches)/1024)
}
