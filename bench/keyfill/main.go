// Command keyfill creates and fills the topic of the key-ordering benchmark
// (keyed.Fill): records keyed over a fixed number of distinct keys, each
// value naming its key ("<key> <hex padding>", size bytes in all) so that
// bench/keysink can check per-key order from the value alone. Keys are drawn
// uniformly at random from k0..k<keys-1> with a fixed seed, so two fills
// with the same flags hold the same keys in the same order; the default (key
// hash) partitioner spreads them over the partitions, as the Java client's
// does.
//
//	keyfill -brokers 127.0.0.1:9092 -topic keys -partitions 8 -records 1000000 -keys 100000
//
// It fails if the topic exists (a benchmark reads a topic it knows all of),
// and prints one line: keyfill topic= partitions= records= keys= distinct_keys= size= seconds=
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/bench/keyed"
)

func main() {
	brokers := flag.String("brokers", "", "seed brokers, comma separated")
	topic := flag.String("topic", "", "topic to create and fill")
	partitions := flag.Int("partitions", 8, "the topic's partitions")
	records := flag.Int("records", 200_000, "records to produce")
	keys := flag.Int("keys", 100_000, "distinct keys to draw from")
	size := flag.Int("size", 100, "value bytes per record")
	seed := flag.Uint64("seed", 1, "seed of the key draw and the padding")
	flag.Parse()
	switch {
	case *brokers == "" || *topic == "":
		log.Fatal("keyfill: -brokers and -topic are required")
	case *partitions < 1 || *records < 1 || *keys < 1:
		log.Fatalf("keyfill: partitions (%d), records (%d) and keys (%d) must be at least 1", *partitions, *records, *keys)
	case *size < len(strconv.Itoa(*keys))+2:
		log.Fatalf("keyfill: size (%d) must hold the longest key and a space (%d bytes)", *size, len(strconv.Itoa(*keys))+2)
	}
	start := time.Now()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(*partitions), 1, nil, *topic)
	if err = errors.Join(err, resp.Err); err != nil {
		log.Fatalf("keyfill: create %s: %v", *topic, err)
	}

	filled, err := keyed.Fill{Brokers: strings.Split(*brokers, ","), Topic: *topic, Records: *records, Keys: *keys, Size: *size, Seed: *seed}.Run(ctx)
	if err != nil {
		log.Fatalf("keyfill: %v", err)
	}
	fmt.Printf("keyfill topic=%s partitions=%d records=%d keys=%d distinct_keys=%d size=%d seconds=%.1f\n",
		*topic, *partitions, *records, *keys, len(filled.Keys), *size, time.Since(start).Seconds())
}
