package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// Input metrics the demo reads. Committed offsets come from the broker, not
// from here: the broker is the truth; these are the input's own view of
// state the broker cannot know.
const (
	gaugePending = "kafka_watermark_pending_batches"
	gaugeStalled = "kafka_watermark_stalled"
	gaugePaused  = "kafka_watermark_paused"
)

// observer gathers partitionViews from the broker, the input's gauges and
// the sink.
type observer struct {
	cluster *demoCluster
	o       demoOptions
	ranges  map[int32][2]int64
	sink    *demoSink
	gauges  *memmetrics.Store
}

func (ob observer) observe(ctx context.Context) ([]partitionView, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	committed, err := ob.cluster.committed(ctx, ob.o.Group, ob.o.Topic)
	if err != nil {
		return nil, err
	}
	ends, err := ob.cluster.endOffsets(ctx, ob.o.Topic)
	if err != nil {
		return nil, err
	}
	views := make([]partitionView, 0, len(ob.ranges))
	for p, r := range ob.ranges {
		c, ok := committed[p]
		if !ok {
			c = -1
		}
		t := ob.o.Topic
		views = append(views, partitionView{
			Partition: p, Start: r[0], End: r[1], Committed: c, LogEnd: ends[p],
			Pending: ob.gauges.Get(gaugePending, t, p),
			Stalled: ob.gauges.Get(gaugeStalled, t, p) == 1,
			Paused:  ob.gauges.Get(gaugePaused, t, p) == 1,
			Sink:    ob.sink.state(p),
		})
	}
	slices.SortFunc(views, func(a, b partitionView) int { return cmp.Compare(a.Partition, b.Partition) })
	return views, nil
}

// watch shows progress until every partition settles, the duration passes,
// ctx is cancelled (Ctrl-C) or the pipeline ends by itself. It returns the
// last views, whether everything settled, why it stopped otherwise, and the
// pipeline's error if the pipeline ended.
func watch(ctx context.Context, ob observer, o demoOptions, w io.Writer, live bool, head string, runDone <-chan error) (last []partitionView, settled bool, reason string, err error) {
	const tick = 250 * time.Millisecond
	printEvery := time.Second
	if live {
		printEvery = tick
	}
	var lt *liveTable
	if live {
		lt = &liveTable{w: w}
		lt.start()
		defer func() {
			lt.draw(nil) // the final table and the summary replace it
			lt.end()
		}()
	} else {
		fmt.Fprintf(w, "watermark-connect demo: %s; %d records, sink fails %d batch(es)\n", head, o.Records, o.FailBatches)
	}
	began := time.Now()
	deadline := time.NewTimer(o.Duration)
	defer deadline.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	var lastPrint time.Time
	for {
		views, err := ob.observe(ctx)
		if err == nil {
			last = views
			if time.Since(lastPrint) >= printEvery-tick/2 {
				lastPrint = time.Now()
				if live {
					lt.draw(tableLines(views, fmt.Sprintf("watermark-connect demo, %.1fs: sink fails %d batch(es), %d in flight",
						time.Since(began).Seconds(), o.FailBatches, o.MaxInFlight), head))
				} else {
					fmt.Fprintln(w, progressLine(time.Since(began), views))
				}
			}
			if allSettled(views) {
				return last, true, "", nil
			}
		}
		select {
		case <-ticker.C:
		case <-deadline.C:
			return last, false, fmt.Sprintf("--duration %v passed", o.Duration), nil
		case <-ctx.Done():
			return last, false, "interrupted", nil
		case err := <-runDone:
			if err == nil {
				err = errors.New("the pipeline ended by itself")
			}
			return last, false, "the pipeline ended", err
		}
	}
}

func allSettled(views []partitionView) bool {
	for _, v := range views {
		if !v.settled() {
			return false
		}
	}
	return len(views) > 0
}
