package keyed

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

// Fill says what to produce to a keyed topic. Keys are drawn uniformly at
// random from k0..k<Keys-1> with a fixed seed, so two fills with the same
// Fill hold the same keys in the same order; the default (key hash)
// partitioner spreads them over the partitions, as the Java client's does.
// With Hot set, each record is Hot's instead with probability HotShare: one
// busy key, all of whose records land in one partition. HotShare 0 draws
// exactly what a fill without Hot draws.
type Fill struct {
	Brokers  []string
	Topic    string // must exist; Fill does not create it
	Records  int
	Keys     int
	Size     int // value bytes per record, at least the longest key and a space
	Seed     uint64
	Hot      string
	HotShare float64
}

// KeyStat is what a fill wrote of one key.
type KeyStat struct {
	Records   int
	Partition int32
}

// Filled is what a fill wrote: per key, its records and partition, and the
// records of each partition.
type Filled struct {
	Keys       map[string]KeyStat
	Partitions map[int32]int
}

// Busiest returns the key with the most records (the lowest-numbered key of
// those tied), other than skip.
func (f Filled) Busiest(skip string) string {
	best, bestN := "", -1
	for k, s := range f.Keys {
		if k == skip {
			continue
		}
		if s.Records > bestN || (s.Records == bestN && keyLess(k, best)) {
			best, bestN = k, s.Records
		}
	}
	return best
}

// keyLess orders keys k<n> by n, others after them by their bytes.
func keyLess(a, b string) bool {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "k"))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "k"))
	if ea == nil && eb == nil {
		return na < nb
	}
	return ea == nil || (eb != nil && a < b)
}

// Run produces the records and returns what it wrote, once every record is
// acknowledged.
func (f Fill) Run(ctx context.Context) (Filled, error) {
	longest := max(len("k"+strconv.Itoa(f.Keys-1)), len(f.Hot))
	switch {
	case f.Records < 1 || f.Keys < 1:
		return Filled{}, fmt.Errorf("fill %s: records (%d) and keys (%d) must be at least 1", f.Topic, f.Records, f.Keys)
	case f.Size < longest+1:
		return Filled{}, fmt.Errorf("fill %s: size (%d) must hold the longest key and a space (%d bytes)", f.Topic, f.Size, longest+1)
	case f.HotShare < 0 || f.HotShare >= 1 || (f.HotShare > 0 && f.Hot == ""):
		return Filled{}, fmt.Errorf("fill %s: hot share (%v) must be in [0, 1), and needs a hot key (%q)", f.Topic, f.HotShare, f.Hot)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(f.Brokers...),
		kgo.DefaultProduceTopic(f.Topic),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return Filled{}, err
	}
	defer cl.Close()

	rng := rand.New(rand.NewPCG(f.Seed, uint64(f.Keys)))
	out := Filled{Keys: map[string]KeyStat{}, Partitions: map[int32]int{}}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // guards out and perr, written by the produce callbacks
		perr error
	)
	for range f.Records {
		key := ""
		if f.HotShare > 0 && rng.Float64() < f.HotShare {
			key = f.Hot
		} else {
			key = "k" + strconv.Itoa(rng.IntN(f.Keys))
		}
		v := make([]byte, f.Size)
		n := copy(v, key)
		v[n] = ' '
		for j := n + 1; j < len(v); j++ {
			v[j] = "0123456789abcdef"[rng.IntN(16)]
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: v}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				perr = err
				return
			}
			s := out.Keys[key]
			s.Records++
			s.Partition = r.Partition
			out.Keys[key] = s
			out.Partitions[r.Partition]++
		})
	}
	wg.Wait()
	if perr != nil {
		return Filled{}, fmt.Errorf("produce to %s: %w", f.Topic, perr)
	}
	return out, nil
}
