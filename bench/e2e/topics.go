package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cell is one point of the end-to-end matrix: a topic of its own, filled
// once, that every contender of every round reads from the start with a
// fresh group.
type cell struct {
	partitions int32
	size       int    // value bytes per record
	codec      string // producer compression: none or snappy
	records    int
	topic      string
}

func (c cell) String() string {
	return fmt.Sprintf("%d partitions, %s, %s", c.partitions, sizeName(c.size), c.codec)
}

func sizeName(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// fill produces c.records records to c.topic: keys are the record's number,
// values random lowercase hex (compressible about two to one, as text is),
// spread over the partitions by the default (key hash) partitioner, in
// producer batches compressed with c.codec. It returns the partitions' log
// ends once every record is acknowledged.
func fill(ctx context.Context, a *admin, c cell) (map[int32]int64, error) {
	codec := kgo.NoCompression()
	if c.codec == "snappy" {
		codec = kgo.SnappyCompression()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(a.brokers, ",")...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// A pool of distinct values, so batches do not compress better than
	// real data would by repeating one value.
	const pool = 4096
	rng := rand.New(rand.NewPCG(uint64(c.size), uint64(c.partitions)))
	values := make([][]byte, pool)
	for i := range values {
		v := make([]byte, c.size)
		for j := range v {
			v[j] = "0123456789abcdef"[rng.IntN(16)]
		}
		values[i] = v
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		perr error
	)
	for i := range c.records {
		wg.Add(1)
		r := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: values[i%pool]}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				perr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if perr != nil {
		return nil, fmt.Errorf("produce to %s: %w", c.topic, perr)
	}
	ends, err := a.endOffsets(ctx, c.topic)
	if err != nil {
		return nil, err
	}
	var sum int64
	for _, e := range ends {
		sum += e
	}
	if sum != int64(c.records) {
		return nil, fmt.Errorf("%s holds %d records, want %d", c.topic, sum, c.records)
	}
	return ends, nil
}
