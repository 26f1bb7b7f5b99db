package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// commitObs is one distinct commit of a partition as polled: the same
// offset and metadata from firstSeen to lastSeen (Unix ns).
type commitObs struct {
	offset    int64
	epoch     int32 // the leader epoch the commit carries (-1: none)
	meta      string
	firstSeen int64
	lastSeen  int64
}

// backObs is a poll that read a commit below one read before.
type backObs struct {
	p        int32
	from, to int64
	at       int64
}

// pausedObs is one scrape of the members' gauges.
type pausedObs struct {
	at      int64
	paused  int
	stalled int
}

// poller watches, from outside the binary, the group's commits (every
// 250ms, with the log end offsets), its membership (every second: how many
// rebalances) and the members' paused and stalled gauges (every 2s).
type poller struct {
	cl       *kgo.Client
	adm      *kadm.Client
	group    string
	topic    string
	parts    int
	protocol string
	fleet    *fleet
	logf     func(string, ...any)
	verbose  bool

	mu         sync.Mutex
	hist       [][]commitObs
	maxSeen    []int64
	backs      []backObs
	ends       []int64
	endsAt     int64
	polls      int
	errs       int
	lastErr    string
	sig        string
	epoch      int32
	rebalances []int64
	groupType  string
	paused     []pausedObs
	// lossCounts is the last scrape of each member process's loss
	// counters (kafka_watermark_lost_records_total and
	// _truncated_records_total, summed over partitions).
	lossCounts map[string]lossCounters
	cancel     context.CancelFunc
	done       chan struct{}
}

func newPoller(brokers, group, topic string, parts int, protocol string, f *fleet, logf func(string, ...any), verbose bool) (*poller, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.ClientID("chaos-checker"), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	pl := &poller{cl: cl, adm: kadm.NewClient(cl), group: group, topic: topic, parts: parts, protocol: protocol, fleet: f,
		logf: logf, verbose: verbose, hist: make([][]commitObs, parts), maxSeen: make([]int64, parts), ends: make([]int64, parts)}
	for i := range pl.maxSeen {
		pl.maxSeen[i] = -1
	}
	return pl, nil
}

func (pl *poller) start() {
	ctx, cancel := context.WithCancel(context.Background())
	pl.cancel = cancel
	pl.done = make(chan struct{})
	go func() {
		defer close(pl.done)
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); every(ctx, 250*time.Millisecond, pl.pollCommits) }()
		go func() { defer wg.Done(); every(ctx, time.Second, pl.pollGroup) }()
		go func() { defer wg.Done(); every(ctx, 2*time.Second, pl.scrape) }()
		wg.Wait()
	}()
}

// stop ends the polling and takes one last sample of the commits.
func (pl *poller) stop() {
	pl.cancel()
	<-pl.done
	pl.pollCommits(context.Background())
}

func (pl *poller) close() { pl.cl.Close() }

func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (pl *poller) fail(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	pl.mu.Lock()
	pl.errs++
	pl.lastErr = what + ": " + shortErr(err)
	pl.mu.Unlock()
	if pl.verbose {
		pl.logf("poll %s: %v", what, err)
	}
}

func (pl *poller) pollCommits(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := pl.adm.FetchOffsets(fctx, pl.group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		if !errors.Is(err, kerr.GroupIDNotFound) {
			pl.fail(ctx, "fetch offsets", err)
		}
		return
	}
	now := time.Now().UnixNano()
	ends, endErr := pl.adm.ListEndOffsets(fctx, pl.topic)
	if endErr == nil {
		endErr = ends.Error()
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.polls++
	for p, o := range resp[pl.topic] {
		if o.Err != nil || o.At < 0 || int(p) >= pl.parts {
			continue
		}
		h := pl.hist[p]
		if n := len(h); n > 0 && h[n-1].offset == o.At && h[n-1].meta == o.Metadata {
			h[n-1].lastSeen = now
			continue
		}
		if o.At < pl.maxSeen[p] {
			pl.backs = append(pl.backs, backObs{p: p, from: pl.maxSeen[p], to: o.At, at: now})
		}
		pl.maxSeen[p] = max(pl.maxSeen[p], o.At)
		pl.hist[p] = append(h, commitObs{offset: o.At, epoch: o.LeaderEpoch, meta: o.Metadata, firstSeen: now, lastSeen: now})
	}
	if endErr == nil {
		ends.Each(func(l kadm.ListedOffset) {
			if int(l.Partition) < pl.parts {
				pl.ends[l.Partition] = l.Offset
			}
		})
		pl.endsAt = now
	}
}

// snapshot is the last commit polled of every partition (offset -1 and no
// metadata where none was seen), and the log ends polled with it.
type snapshot struct {
	at      int64
	commits []commitObs
	ends    []int64
}

func (pl *poller) snapshot() snapshot {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	s := snapshot{at: time.Now().UnixNano(), commits: make([]commitObs, pl.parts), ends: slices.Clone(pl.ends)}
	for p, h := range pl.hist {
		if len(h) == 0 {
			s.commits[p] = commitObs{offset: -1}
			continue
		}
		s.commits[p] = h[len(h)-1]
	}
	return s
}

// recovered reports whether every partition that had records to commit at
// base has committed past its commit of base.
func (pl *poller) recovered(base snapshot) bool {
	now := pl.snapshot()
	for p := range base.commits {
		b := base.commits[p].offset
		if base.ends[p] <= b {
			continue // nothing pending at base
		}
		if now.commits[p].offset <= b {
			return false
		}
	}
	return true
}

// drained reports whether every partition's commit is at its log end, and
// the ends.
func (pl *poller) drained() (bool, []int64, []int64) {
	s := pl.snapshot()
	offs := make([]int64, len(s.commits))
	ok := true
	for p, c := range s.commits {
		offs[p] = c.offset
		if c.offset != s.ends[p] {
			ok = false
		}
	}
	return ok, offs, s.ends
}

func (pl *poller) pollGroup(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if pl.groupType == "" {
		if lg, err := pl.adm.ListGroups(fctx); err == nil {
			if g, ok := lg[pl.group]; ok {
				pl.mu.Lock()
				pl.groupType = g.GroupType
				pl.mu.Unlock()
			}
		}
	}
	now := time.Now().UnixNano()
	if pl.protocol == "consumer" {
		dg, err := pl.adm.DescribeConsumerGroups(fctx, pl.group)
		if err != nil {
			pl.fail(ctx, "describe consumer group", err)
			return
		}
		g, ok := dg[pl.group]
		if !ok || g.Err != nil {
			return
		}
		pl.mu.Lock()
		defer pl.mu.Unlock()
		// Every group epoch is a new target assignment: a rebalance.
		if pl.epoch > 0 && g.Epoch > pl.epoch {
			for range g.Epoch - pl.epoch {
				pl.rebalances = append(pl.rebalances, now)
			}
		}
		if g.Epoch > pl.epoch {
			pl.epoch = g.Epoch
		}
		return
	}
	dg, err := pl.adm.DescribeGroups(fctx, pl.group)
	if err != nil {
		pl.fail(ctx, "describe group", err)
		return
	}
	g, ok := dg[pl.group]
	if !ok || g.Err != nil || g.State != "Stable" {
		return
	}
	// Classic: a new stable membership or assignment is a completed
	// rebalance (two quick ones between polls count once: a lower bound).
	var parts []string
	for _, m := range g.Members {
		a := ""
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				ps := slices.Clone(t.Partitions)
				slices.Sort(ps)
				a += fmt.Sprintf("%s%v", t.Topic, ps)
			}
		}
		parts = append(parts, m.MemberID+"="+a)
	}
	slices.Sort(parts)
	sig := strings.Join(parts, ";")
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.sig != "" && sig != pl.sig {
		pl.rebalances = append(pl.rebalances, now)
	}
	pl.sig = sig
}

// lossCounters is one scrape of a member process's loss counters.
type lossCounters struct {
	Lost      int64 `json:"lost_records_total"`
	Truncated int64 `json:"truncated_records_total"`
	Final     bool  `json:"after_drain"` // scraped after the drain, when every loss line was written
}

// scrape sums the members' kafka_watermark_paused and _stalled gauges, and
// keeps each process's loss counters.
func (pl *poller) scrape(ctx context.Context) { pl.scrapeMembers(ctx, false) }

func (pl *poller) scrapeMembers(ctx context.Context, final bool) {
	var paused, stalled, seen int
	for _, m := range pl.fleet.running() {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		series, err := testkit.ScrapeMetrics(sctx, m.metricsAddr)
		cancel()
		if err != nil {
			continue
		}
		lc := lossCounters{Final: final}
		for _, s := range series {
			switch s.Name {
			case "kafka_watermark_paused":
				if s.Value != 0 {
					paused++
				}
			case "kafka_watermark_stalled":
				if s.Value != 0 {
					stalled++
				}
			case "kafka_watermark_lost_records_total":
				lc.Lost += int64(s.Value)
			case "kafka_watermark_truncated_records_total":
				lc.Truncated += int64(s.Value)
			}
		}
		pl.mu.Lock()
		if pl.lossCounts == nil {
			pl.lossCounts = map[string]lossCounters{}
		}
		pl.lossCounts[m.instance] = lc
		pl.mu.Unlock()
		seen++
	}
	if seen == 0 || final {
		return
	}
	pl.mu.Lock()
	pl.paused = append(pl.paused, pausedObs{at: time.Now().UnixNano(), paused: paused, stalled: stalled})
	pl.mu.Unlock()
}

// memberSeries is one member process's samples of a metric for topic, by
// partition.
func memberSeries(ctx context.Context, m *member, name, topic string) (map[int32]float64, error) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	all, err := testkit.ScrapeMetrics(sctx, m.metricsAddr)
	if err != nil {
		return nil, err
	}
	return all.ByPartition(name, topic), nil
}

// history returns a copy of everything polled.
func (pl *poller) history() ([][]commitObs, []backObs, []int64, []pausedObs) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	h := make([][]commitObs, len(pl.hist))
	for p := range pl.hist {
		h[p] = slices.Clone(pl.hist[p])
	}
	return h, slices.Clone(pl.backs), slices.Clone(pl.rebalances), slices.Clone(pl.paused)
}
