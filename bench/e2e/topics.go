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

// warm reads c.topic once from its start to its log end, unmeasured, and
// returns how long that took. The matrix calls it before a cell's
// contenders in each round (-warm): when the cells' topics hold more than the
// page cache (four 1 KiB cells of 6,000,000 records are 24 GB), the round's
// other cells evict a cell's log, and without it the contender that happens
// to run first reads the log from disk while the others read it from
// memory, a gap of up to a third in records/s that has nothing to do with
// the contender (docs/BENCHMARKS.md, issue 31).
func (a *admin) warm(ctx context.Context, c cell) (time.Duration, error) {
	start := time.Now()
	ends, err := a.endOffsets(ctx, c.topic)
	if err != nil {
		return 0, err
	}
	offsets := map[int32]kgo.Offset{}
	for p, end := range ends {
		if end > 0 {
			offsets[p] = kgo.NewOffset().AtStart()
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(a.brokers, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: offsets}),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for left := len(offsets); left > 0; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("warming %s: %d of %d partitions not read to their end: %w", c.topic, left, len(offsets), err)
		}
		if err := fs.Err0(); err != nil {
			return 0, fmt.Errorf("warming %s: %w", c.topic, err)
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if n := len(p.Records); n > 0 && p.Records[n-1].Offset+1 == ends[p.Partition] {
				left--
			}
		})
	}
	return time.Since(start), nil
}
