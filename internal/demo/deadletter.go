package demo

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
)

// With --dead-letter-after the demo's input has a dead-letter topic: the
// failed batch, which the sink then rejects on every delivery, is written
// there after dead_letter.max_attempts deliveries, and its partition commits
// past it once the broker acknowledged the write. The summary does not take
// the input's word for it: it reads the topic back from the broker, as an
// operator would, and shows each record's provenance headers.

// counterDeadLettered is the input's count of records dead-lettered, per
// origin partition (engine.MetricDeadLettered).
const counterDeadLettered = "kafka_watermark_dead_lettered_records_total"

// deadLetterSeen is one record read back from the dead-letter topic: where
// it is there, and the provenance its headers carry.
type deadLetterSeen struct {
	Partition int32 // in the dead-letter topic
	Offset    int64
	Prov      deadletter.Provenance
	Err       error // the headers did not parse (Prov is then zero)
}

// prepareDeadLetterTopic creates the dead-letter topic if needed and
// returns its log ends before the pipeline starts: where this run's dead
// letters begin.
func (c *demoCluster) prepareDeadLetterTopic(ctx context.Context, topic string) (map[int32]int64, error) {
	if _, _, err := c.ensureTopic(ctx, topic, 1); err != nil {
		return nil, err
	}
	return c.endOffsets(ctx, topic)
}

// readDeadLetters reads topic from the offsets in from (its log end before
// the pipeline started, so a real cluster's older dead letters are left
// out) to its log end now.
func (c *demoCluster) readDeadLetters(ctx context.Context, topic string, from map[int32]int64) ([]deadLetterSeen, error) {
	ends, err := c.endOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	offsets := map[int32]kgo.Offset{}
	var want int64
	for p, end := range ends {
		if n := end - from[p]; n > 0 {
			offsets[p] = kgo.NewOffset().At(from[p])
			want += n
		}
	}
	if want == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []deadLetterSeen
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("reading the dead-letter topic %s: %d of %d records: %w", topic, len(out), want, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			prov, err := deadletter.Parse(r)
			out = append(out, deadLetterSeen{Partition: r.Partition, Offset: r.Offset, Prov: prov, Err: err})
		})
	}
	slices.SortFunc(out, func(a, b deadLetterSeen) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out, nil
}

// maxLettersShown bounds the dead letters the summary lists one by one; a
// batch is 100 records by default.
const maxLettersShown = 3

// writeDeadLetters prints the dead letters read back from the broker: a
// line per origin range, then the first few records with their headers.
func writeDeadLetters(w io.Writer, r *demoResult) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("")
	switch {
	case r.DeadLetterErr != nil && len(r.DeadLetters) == 0:
		p("  dead-letter topic %s: cannot read it back: %v", r.DeadLetterTopic, r.DeadLetterErr)
		return
	case len(r.DeadLetters) == 0:
		p("  dead-letter topic %s, read back from the broker after the stop: empty", r.DeadLetterTopic)
		return
	}
	p("  dead-letter topic %s, read back from the broker after the stop: %d record(s)", r.DeadLetterTopic, len(r.DeadLetters))
	if r.DeadLetterErr != nil {
		p("    (read only in part: %v)", r.DeadLetterErr)
	}
	for _, g := range letterGroups(r.DeadLetters, r.Ordering == orderingKey) {
		p("    %s/%d offsets %d-%d: %d record(s), %s", g.topic, g.partition, g.first, g.last, g.count, g.attempts())
	}
	p("  %5s %7s  %s", "part", "offset", "headers")
	for i, l := range r.DeadLetters {
		if i == maxLettersShown {
			p("  ... and %d more", len(r.DeadLetters)-maxLettersShown)
			break
		}
		if l.Err != nil {
			p("  %5d %7d  not a dead letter: %v", l.Partition, l.Offset, l.Err)
			continue
		}
		v := l.Prov
		firstFailed := v.FirstFailed.Sub(r.Began).Seconds()
		lines := []string{
			fmt.Sprintf("%s=%s %s=%d %s=%d", deadletter.HeaderTopic, v.Topic, deadletter.HeaderPartition, v.Partition, deadletter.HeaderOffset, v.Offset),
			fmt.Sprintf("%s=%d %s=%d (%.1fs)", deadletter.HeaderAttempts, v.Attempts, deadletter.HeaderFirstFailedMs, v.FirstFailed.UnixMilli(), firstFailed),
			fmt.Sprintf("%s=%q", deadletter.HeaderError, v.Error),
			fmt.Sprintf("%s=%d %s=%q", deadletter.HeaderTimestampMs, v.Timestamp.UnixMilli(), deadletter.HeaderMember, v.Member),
		}
		for j, line := range lines {
			if j == 0 {
				p("  %5d %7d  %s", l.Partition, l.Offset, line)
			} else {
				p("  %5s %7s  %s", "", "", line)
			}
		}
	}
}

// letterGroup is a run of dead letters from adjacent origin offsets of one
// partition; under ordering: key, where a batch is a few keys' records, from
// any offsets of one partition read one after the other.
type letterGroup struct {
	topic       string
	partition   int32
	first, last int64
	count       int
	attemptsMin int
	attemptsMax int
}

func (g letterGroup) attempts() string {
	if g.attemptsMin == g.attemptsMax {
		return fmt.Sprintf("each after %d attempt(s)", g.attemptsMin)
	}
	return fmt.Sprintf("after %d to %d attempts", g.attemptsMin, g.attemptsMax)
}

// letterGroups groups the parsed dead letters by origin, in the order read;
// with gaps, a group spans gaps in the origin offsets (ordering: key).
func letterGroups(ls []deadLetterSeen, gaps bool) []letterGroup {
	var gs []letterGroup
	for _, l := range ls {
		if l.Err != nil {
			continue
		}
		v := l.Prov
		if n := len(gs); n > 0 {
			g := &gs[n-1]
			if g.topic == v.Topic && g.partition == v.Partition && (g.last+1 == v.Offset || gaps && g.last < v.Offset) {
				g.last, g.count = v.Offset, g.count+1
				g.attemptsMin, g.attemptsMax = min(g.attemptsMin, v.Attempts), max(g.attemptsMax, v.Attempts)
				continue
			}
		}
		gs = append(gs, letterGroup{topic: v.Topic, partition: v.Partition, first: v.Offset, last: v.Offset, count: 1,
			attemptsMin: v.Attempts, attemptsMax: v.Attempts})
	}
	return gs
}

// deadLettersNote is the summary's figure line for the dead letters.
func deadLettersNote(r *demoResult) string {
	var ok int
	for _, l := range r.DeadLetters {
		if l.Err == nil {
			ok++
		}
	}
	gs := letterGroups(r.DeadLetters, r.Ordering == orderingKey)
	var parts []string
	for _, g := range gs {
		parts = append(parts, fmt.Sprintf("%s/%d %d-%d", g.topic, g.partition, g.first, g.last))
	}
	s := fmt.Sprintf("%d to %s (dead_letter.max_attempts %d)", ok, r.DeadLetterTopic, r.DeadLetterAfter)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}
