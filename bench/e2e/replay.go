package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The replay benchmark (section 5): what a kill -9 costs in records
// delivered twice, by max_pending_batches, commit_period and commit_metadata.
//
// One topic of replayPartitions partitions holds replayRecords records. In
// run 1 the sink holds each partition's first batch (a slow head: no
// watermark can move past it) and lets the rest through at replayRate
// records/s; once it has delivered a number of records drawn uniformly from
// [replayKillMin, replayKillMax) (or delivery has stalled for a second:
// every partition's window is full), the binary is killed with SIGKILL. The
// draw spreads the kill over two seconds of flow, so it falls at any moment
// of the commit period: process start and group join take about the same
// time in every trial, and a fixed count would kill at about the same
// moment of it every time. Run 2 restarts it with the same group and instance_id (static
// membership, so it takes the dead member's place at once instead of after
// its session timeout; what it resumes from is the same) against a sink
// that lets everything through, until the group's commits reach the log
// end. The duplicates are the records run 1 delivered that run 2 delivered
// again, each counted once; records run 1 never delivered (the held heads
// among them) are not duplicates, however often they come.
const (
	replayPartitions = 4
	replayRecords    = 32_000
	replayBatch      = 10 // batch_max_records: 800 batches a partition
	replayRate       = 4000
	replayKillMin    = 10_000
	replayKillMax    = 18_000
)

type replayConf struct {
	maxPending   int
	commitPeriod time.Duration
	meta         bool
}

type trial struct {
	delivered int // distinct records run 1 delivered
	dups      int
}

func replay(ctx context.Context, w io.Writer, o options, a *admin, b binaries) error {
	c := cell{partitions: replayPartitions, size: 100, codec: "none", records: replayRecords,
		topic: fmt.Sprintf("bench-replay-%d", time.Now().Unix()%1_000_000)}
	if err := a.createTopic(ctx, c.topic, c.partitions); err != nil {
		return err
	}
	if !o.keep {
		defer func() { _ = a.deleteTopics(context.Background(), c.topic) }()
	}
	ends, err := fill(ctx, a, c)
	if err != nil {
		return err
	}
	s, err := newSink()
	if err != nil {
		return err
	}
	defer s.Close()
	var confs []replayConf
	for _, mp := range []int{64, 1024} {
		for _, cp := range []time.Duration{100 * time.Millisecond, time.Second} {
			for _, meta := range []bool{true, false} {
				confs = append(confs, replayConf{mp, cp, meta})
			}
		}
	}
	results := map[replayConf][]trial{}
	rng := rand.New(rand.NewPCG(o.seed, 5))
	for r := range o.replayRounds {
		for _, k := range rng.Perm(len(confs)) {
			rc := confs[k]
			t, err := replayTrial(ctx, o, a, b, s, c, ends, rc, r, rng)
			if err != nil {
				return fmt.Errorf("replay trial %+v: %w", rc, err)
			}
			logf("replay round %d, max_pending_batches %d, commit_period %v, commit_metadata %v: run 1 delivered %d, %d again after the restart",
				r+1, rc.maxPending, rc.commitPeriod, rc.meta, t.delivered, t.dups)
			results[rc] = append(results[rc], t)
		}
	}

	fmt.Fprintf(w, "### Replay after kill -9\n\n")
	fmt.Fprintf(w, "%d partitions, %d records of 100 B, batch_max_records %d, http_client max_in_flight 64; slow-head sink at %d records/s; kill -9 once a number of records drawn from [%d, %d) is delivered, or once delivery has stalled for 1s; %d trials each, median [min–max].\n\n",
		replayPartitions, replayRecords, replayBatch, replayRate, replayKillMin, replayKillMax, o.replayRounds)
	fmt.Fprintf(w, "| max_pending_batches | commit_period | commit_metadata | delivered by run 1 | delivered again after the restart | share |\n| ---: | ---: | :---: | ---: | ---: | ---: |\n")
	for _, rc := range confs {
		var del, dups, share []float64
		for _, t := range results[rc] {
			del, dups = append(del, float64(t.delivered)), append(dups, float64(t.dups))
			share = append(share, 100*float64(t.dups)/float64(max(t.delivered, 1)))
		}
		fmt.Fprintf(w, "| %d | %v | %v | %s | %s | %s |\n", rc.maxPending, rc.commitPeriod, rc.meta,
			spreadOf(del).format("%.0f"), spreadOf(dups).format("%.0f"), spreadOf(share).format("%.0f%%"))
	}
	fmt.Fprintln(w)
	return nil
}

func replayTrial(ctx context.Context, o options, a *admin, b binaries, s *sink, c cell, ends map[int32]int64, rc replayConf, round int, rng *rand.Rand) (trial, error) {
	tag := fmt.Sprintf("mp%d-cp%dms-meta%v-r%d", rc.maxPending, rc.commitPeriod.Milliseconds(), rc.meta, round)
	group := "g-" + c.topic + "-" + tag
	dir := filepath.Join(o.workDir, "replay", tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return trial{}, err
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(replayYAML(a.brokers, c.topic, group, s.URL(), rc)), 0o600); err != nil {
		return trial{}, err
	}

	s.startRun(true, replayRate)
	p1, err := startProc(dir, "run1", b.head, []string{"-c", path}, "")
	if err != nil {
		return trial{}, err
	}
	deadline := time.Now().Add(time.Minute)
	for s.held() < replayPartitions {
		select {
		case err := <-p1.done:
			return trial{}, fmt.Errorf("run 1 exited (%w):\n%s", err, p1.tail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p1.kill()
			return trial{}, fmt.Errorf("only %d heads held after a minute:\n%s", s.held(), p1.tail())
		}
	}
	// Kill once killAt records are delivered, or once delivery has stalled
	// (every partition's window is full) for a second.
	killAt := replayKillMin + rng.Int64N(replayKillMax-replayKillMin)
	last, lastAt := s.Records(), time.Now()
	for n := last; n < killAt && time.Since(lastAt) < time.Second; n = s.Records() {
		if n != last {
			last, lastAt = n, time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	p1.kill()
	// The dead process's requests finish (and count) and the heads fail.
	s.releaseHeld()
	if !s.waitIdle(30 * time.Second) {
		return trial{}, fmt.Errorf("requests of run 1 still in progress after 30s")
	}

	run1 := s.startRun(false, 0)
	p2, err := startProc(dir, "run2", b.head, []string{"-c", path}, "")
	if err != nil {
		return trial{}, err
	}
	if err := waitCommitted(ctx, a, group, c.topic, ends, 2*time.Minute); err != nil {
		p2.kill()
		return trial{}, fmt.Errorf("run 2: %w\n%s", err, p2.tail())
	}
	if err := p2.stop(); err != nil {
		return trial{}, fmt.Errorf("run 2: %w", err)
	}
	s.waitIdle(10 * time.Second)
	run2 := s.startRun(false, 0)

	for i, l := range []*testkit.Ledger{run1, run2} {
		if l.BadCount > 0 {
			return trial{}, fmt.Errorf("run %d: the sink saw %d bad records or requests, first: %s", i+1, l.BadCount, l.Bad[0])
		}
	}
	t := trial{delivered: int(run1.Distinct())}
	for p, end := range ends {
		for off := range end {
			switch n1, n2 := run1.Count(p, off), run2.Count(p, off); {
			case n1 > 0 && n2 > 0:
				t.dups++
			case n1 == 0 && n2 == 0:
				return t, fmt.Errorf("partition %d offset %d was never delivered", p, off)
			}
		}
	}
	return t, nil
}

// waitCommitted waits until the group's commits reach ends.
func waitCommitted(ctx context.Context, a *admin, group, topic string, ends map[int32]int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := a.committed(ctx, group, topic)
		if err == nil {
			done := true
			for p, end := range ends {
				if got[p].At < end {
					done = false
				}
			}
			if done {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("commits %v did not reach the log ends %v within %v (%w)", got, ends, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func replayYAML(brokers, topic, group, url string, rc replayConf) string {
	return fmt.Sprintf(`http:
  enabled: false
logger:
  level: WARN
input:
  kafka_watermark:
    seed_brokers: %s
    topics: [ %q ]
    consumer_group: %q
    instance_id: bench-replay
    batch_max_records: %d
    max_pending_batches: %d
    commit_period: %v
    commit_metadata: %v
    session_timeout: 10s
    heartbeat_interval: 1s
pipeline:
  threads: 2
  processors:
    - mapping: 'root = {"p": @kafka_partition, "o": @kafka_offset}'
    - archive:
        format: json_array
output:
  http_client:
    url: %q
    verb: POST
    headers:
      Content-Type: application/json
    retries: 0
    timeout: 5m
    max_in_flight: 64
`, yamlList(strings.Split(brokers, ",")), topic, group, replayBatch, rc.maxPending, rc.commitPeriod, rc.meta, url)
}
