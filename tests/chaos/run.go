package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// harness is one run.
type harness struct {
	opts  *options
	root  string
	topic string
	group string

	logMu   sync.Mutex
	logFile io.Writer

	kafka  kafkaShape
	sink   *sink
	fleet  *fleet
	poller *poller
	live   *liveProducer
	txn    *txnProducer

	began      time.Time
	faultStart time.Time
	faultEnd   time.Time
	faults     []*faultRun
	notes      []string // harness-level problems that fail the run
	binary     string
	// git describe and rev-parse HEAD when the binary was built (empty for
	// a prebuilt --binary).
	builtDescribe, builtCommit string
	// What the faults did to the log itself (losscheck.go); written by the
	// fault loop only, read after it.
	deletions   []deletion
	truncations []truncation
}

func (h *harness) logf(format string, args ...any) {
	line := fmt.Sprintf("%s chaos: %s", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	h.logMu.Lock()
	defer h.logMu.Unlock()
	fmt.Println(line)
	if h.logFile != nil {
		fmt.Fprintln(h.logFile, line)
	}
}

func (h *harness) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.logf("PROBLEM: %s", msg)
	h.logMu.Lock()
	h.notes = append(h.notes, msg)
	h.logMu.Unlock()
}

// run is the whole run; its result is the exit status.
func run(ctx context.Context, o *options, root string) int {
	h := &harness{opts: o, root: root, began: time.Now()}
	// A fresh logs folder: a run's member logs are named m1.1, m1.2, ...
	_ = os.RemoveAll(filepath.Join(o.out, "logs"))
	if err := os.MkdirAll(filepath.Join(o.out, "logs"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	lf, err := os.Create(filepath.Join(o.out, "chaos.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	defer lf.Close()
	h.logFile = lf
	h.logf("seed %d; reproduce with: %s", o.seed, reproduceCommand(o))
	h.logf("report to %s", o.out)
	acc, err := h.runPhases(ctx)
	if err != nil {
		h.logf("harness error: %v", err)
	}
	rep := h.buildReport(acc, err)
	if werr := writeReport(o.out, rep); werr != nil {
		h.logf("cannot write the report: %v", werr)
		return 2
	}
	h.logf("wrote %s and %s", filepath.Join(o.out, "chaos-report.md"), filepath.Join(o.out, "chaos-report.json"))
	fmt.Println(summaryLine(rep))
	switch {
	case err != nil:
		return 2
	case !rep.Passed:
		return 1
	}
	return 0
}

func (h *harness) runPhases(ctx context.Context) (*accounting, error) {
	o := h.opts
	h.binary = o.binary
	if h.binary == "" {
		h.logf("building ./cmd/watermark-connect from the %s", map[string]string{"tree": "working tree", "head": "git HEAD"}[o.source])
		start := time.Now()
		h.builtDescribe, h.builtCommit = gitLine(h.root, "describe", "--always", "--tags"), gitLine(h.root, "rev-parse", "HEAD")
		if o.source == "tree" && gitDirty(h.root) {
			h.builtDescribe += "-dirty"
		}
		b, err := buildBinary(ctx, h.root, o.source, o.race, filepath.Join(o.out, "bin"))
		if err != nil {
			return nil, err
		}
		h.binary = b
		h.logf("built %s in %v", b, time.Since(start).Round(time.Millisecond))
	}

	if o.cluster == 1 {
		h.kafka = newBroker(o, h.logf)
		h.logf("starting the broker (run dir %s, port %d)", o.runDir, o.port)
	} else {
		h.kafka = newCluster(o, h.root, h.logf, h.note)
		h.logf("starting a cluster of %d nodes (run dir %s-cluster, ports from %d)", o.cluster, o.runDir, o.port+nodeStride)
	}
	stopKafka := func() {
		h.kafka.keepLogs(filepath.Join(o.out, "logs"))
		if o.keepBroker && o.cluster == 1 {
			h.logf("leaving the broker running (--keep-broker): %s", h.kafka.seeds())
			return
		}
		if err := h.kafka.stop(context.Background()); err != nil {
			h.logf("stop the broker: %v", err)
		}
	}
	if err := h.kafka.start(ctx); err != nil {
		stopKafka()
		return nil, err
	}
	defer stopKafka()
	suffix := fmt.Sprintf("%d-%d", o.seed, time.Now().Unix()%100000)
	h.topic, h.group = "chaos-"+suffix, "chaos-g-"+suffix
	if err := createTopic(ctx, h.kafka.seeds(), h.topic, o.partitions, h.kafka.replication()); err != nil {
		return nil, err
	}
	if err := h.kafka.ready(ctx); err != nil {
		return nil, err
	}
	h.logf("topic %s (%d partitions), group %s (%s protocol), %d members", h.topic, o.partitions, h.group, o.protocol, o.members)

	var err error
	if h.sink, err = newSink(h.topic, o.partitions); err != nil {
		return nil, err
	}
	defer h.sink.close()
	conf := memberConf{seeds: func(name string) string { return h.kafka.memberSeeds(memberIndex(name)) },
		topic: h.topic, group: h.group, sinkURL: h.sink.url(), protocol: o.protocol}
	if h.fleet, err = newFleet(h.binary, filepath.Join(o.out, "logs"), conf, h.logf); err != nil {
		return nil, err
	}
	defer h.fleet.killAll()
	if h.poller, err = newPoller(h.kafka.seeds(), h.group, h.topic, o.partitions, o.protocol, h.fleet, h.logf, o.verbose); err != nil {
		return nil, err
	}
	defer h.poller.close()
	h.poller.start()
	if h.live, err = newLiveProducer(h.kafka.seeds(), h.topic, o.partitions, o.rate, h.logf); err != nil {
		return nil, err
	}
	h.live.start(ctx)
	h.txn = newTxnProducer(h.kafka.seeds(), h.topic, o.partitions, o.txnRate, o.abortRatio, o.seed, "chaos-txn-"+suffix, h.logf)
	if o.txnRate > 0 {
		h.txn.start(ctx)
	}

	// The group's first join, accounted as fault 0.
	start := &faultRun{plannedFault: plannedFault{Kind: kindStart, Wait: true}, Before: h.poller.snapshot()}
	start.At = time.Now().UnixNano()
	for i := range o.members {
		if _, err := h.fleet.start(memberName(i)); err != nil {
			return nil, err
		}
	}
	if err := h.waitDelivering(ctx, 3*time.Minute); err != nil {
		return nil, err
	}
	start.End = time.Now().UnixNano()
	start.AtEnd = h.poller.snapshot()
	h.faults = append(h.faults, start)
	h.logf("every member delivers; group type %q", h.groupType())
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return nil, err
	}
	if o.selfCheck {
		h.logf("self-check: the sink acknowledges the next batch without recording it")
		h.sink.lie.Store(true)
	}

	if err := h.faultPhase(ctx); err != nil {
		return nil, err
	}
	return h.drainAndCheck(ctx)
}

func (h *harness) groupType() string {
	h.poller.mu.Lock()
	defer h.poller.mu.Unlock()
	return h.poller.groupType
}

// waitDelivering waits until every running member has delivered to the
// sink.
func (h *harness) waitDelivering(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		missing := []string{}
		for _, m := range h.fleet.running() {
			if h.sink.instanceCount(m.instance) == 0 {
				missing = append(missing, m.instance)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("members %v delivered nothing within %v", missing, timeout)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// faultPhase runs the schedule until --duration is over.
func (h *harness) faultPhase(ctx context.Context) error {
	o := h.opts
	weights, _ := parseWeights(o.weights)
	sched := newSchedule(o.seed, weights, o.members, o.partitions, o.cluster, o.faultGap, o.overlap)
	h.faultStart = time.Now()
	deadline := h.faultStart.Add(o.duration)
	h.logf("fault phase: %v, mean gap %v, overlap %.2f, weights %s", o.duration, o.faultGap, o.overlap, o.weights)
	for time.Now().Before(deadline) {
		pf := sched.next()
		prev := h.faults[len(h.faults)-1]
		if pf.Wait {
			h.waitRecovered(ctx, prev, o.recoveryTimeout)
		}
		if err := sleepCtx(ctx, pf.Gap); err != nil {
			return err
		}
		if !time.Now().Before(deadline) {
			break
		}
		h.restartCrashed()
		fr := h.execute(ctx, pf)
		h.faults = append(h.faults, fr)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if fr.Err != "" && strings.HasPrefix(pf.Kind, "broker-") {
			// The broker did not come back: once more, then give up.
			h.logf("broker restart failed; trying once more")
			if err := h.kafka.restart(ctx, pf.Node, false, 0); err != nil {
				return fmt.Errorf("the broker does not restart: %w", err)
			}
		}
		h.progress()
	}
	h.faultEnd = time.Now()
	h.logf("fault phase over: %d faults in %v", len(h.faults)-1, h.faultEnd.Sub(h.faultStart).Round(time.Second))
	return nil
}

// restartCrashed starts again any member that exited on its own (already
// reported as a problem), so the schedule goes on with a full group.
func (h *harness) restartCrashed() {
	for _, name := range h.fleet.names() {
		if m := h.fleet.get(name); m != nil && !m.running() {
			h.logf("%s is not running: starting it again", m.instance)
			if _, err := h.fleet.start(name); err != nil {
				h.note("cannot restart %s: %v", name, err)
			}
		}
	}
}

// waitRecovered waits until every partition with records to commit at the
// end of fr's action has committed past where it was.
func (h *harness) waitRecovered(ctx context.Context, fr *faultRun, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for !h.poller.recovered(fr.AtEnd) {
		if time.Now().After(deadline) {
			late := fmt.Sprintf("commits had not moved again on every partition %v after the fault's end", timeout)
			fr.Note = strings.TrimSpace(fr.Note + " " + late)
			h.logf("fault #%d (%s): %s; going on", fr.Index, fr.Kind, late)
			return
		}
		if sleepCtx(ctx, 250*time.Millisecond) != nil {
			return
		}
	}
}

func (h *harness) progress() {
	h.logf("progress: produced %d live + %d txn records, sink %d requests, %d deliveries, %d failed on purpose",
		h.live.acked.Load(), h.txnRecords(), h.sink.Requests(), h.sink.Records(), h.sink.Failed())
}

func (h *harness) txnRecords() int {
	h.txn.mu.Lock()
	defer h.txn.mu.Unlock()
	return len(h.txn.recs)
}

// drainAndCheck ends the faults and the producers, lets every stall heal and
// every partition commit to its log end, then reads everything back and
// accounts.
func (h *harness) drainAndCheck(ctx context.Context) (*accounting, error) {
	o := h.opts
	h.logf("drain: sink normal, every member up, producers stopping")
	h.sink.setMode(sinkMode{kind: "normal"})
	if err := h.kafka.ready(ctx); err != nil {
		h.note("at the drain: %v", err)
	}
	h.restartCrashed()
	h.live.finish(ctx)
	if o.txnRate > 0 {
		h.txn.finish()
	}
	h.logf("producers stopped: live %d acked, %d failed; transactions %d committed, %d aborted, %d failed (%d records of unknown fate)",
		h.live.acked.Load(), h.live.failed.Load(), h.txn.committed, h.txn.aborted, h.txn.failed, h.txn.unknown)

	drainStart := time.Now()
	deadline := drainStart.Add(o.drainTimeout)
	var offs, ends []int64
	stable := 0
	for {
		ok, c, e := h.poller.drained()
		offs, ends = c, e
		if ok && h.sink.InFlight() == 0 {
			stable++
		} else {
			stable = 0
		}
		if stable >= 4 {
			break
		}
		if time.Now().After(deadline) {
			h.note("drain: after %v the commits %v are not at the log ends %v", o.drainTimeout, offs, ends)
			break
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
	h.logf("drained in %v: commits at the log ends %v", time.Since(drainStart).Round(time.Millisecond), ends)
	// The loss counters once every loss line is written.
	h.poller.scrapeMembers(ctx, true)
	h.fleet.stopAll(90 * time.Second)
	h.poller.stop()
	runEnd := time.Now().UnixNano()

	finalStarts, err := startOffsets(ctx, h.kafka.seeds(), h.topic, o.partitions)
	if err != nil {
		return nil, err
	}
	finalEnds, err := endOffsets(ctx, h.kafka.seeds(), h.topic, o.partitions)
	if err != nil {
		return nil, err
	}
	h.logf("reading the topic back (starts %v, ends %v) and the commit log", finalStarts, finalEnds)
	lg, err := readTopic(ctx, h.kafka.seeds(), h.topic, finalStarts, finalEnds)
	if err != nil {
		return nil, err
	}
	resurrected := h.markDeleted(lg, finalStarts)
	audit, err := readCommitLog(ctx, h.kafka.seeds(), h.group, h.topic)
	if err != nil {
		return nil, err
	}
	if w := h.sink.lied.Load(); w != nil {
		h.logf("self-check: the sink acknowledged %s without recording it; the checker must report it lost", *w)
	}
	ld := h.sink.Snapshot()
	for _, b := range ld.Bad {
		h.note("sink: %s", b)
	}
	if err := writeDuplicates(filepath.Join(o.out, "duplicates.csv"), ld); err != nil {
		h.logf("write duplicates.csv: %v", err)
	}
	hist, backs, _, paused := h.poller.history()
	facts := &lossFacts{deletions: h.deletions, truncations: h.truncations}
	facts.groupKnew = func(p int32, at int64, epoch int32) bool {
		knew := func(offset int64, e int32, meta string) bool {
			if e > epoch {
				return false
			}
			if offset > at {
				return true
			}
			m, err := commitmeta.Decode(meta)
			return err == nil && m.Base == offset && len(m.Delivered) > 0 && m.Delivered[len(m.Delivered)-1].To > at
		}
		if int(p) < len(hist) {
			for _, c := range hist[p] {
				if knew(c.offset, c.epoch, c.meta) {
					return true
				}
			}
		}
		for _, r := range audit {
			if r.p == p && knew(r.offset, r.epoch, r.meta) {
				return true
			}
		}
		return false
	}
	acc := account(lg, ld, hist, backs, audit, h.kafka.outages(), h.faults, paused, runEnd, facts)
	logs := h.fleet.scanLogs()
	var lostEx []string
	acc.Loss, lostEx = checkLosses(lg, ld, facts, logs.Losses, h.topic)
	acc.Loss.Notes = append(resurrected, acc.Loss.Notes...)
	acc.Lost += acc.Loss.LostUnreported
	acc.LostExamples = append(acc.LostExamples, first(lostEx, max(0, maxExamples-len(acc.LostExamples)))...)
	h.poller.mu.Lock()
	acc.LossMetrics = checkLossMetrics(h.poller.lossCounts, logs.Losses)
	h.poller.mu.Unlock()
	h.crossCheckProducers(lg, facts)
	return acc, nil
}

// markDeleted fills in, for every offset below a partition's log start,
// what the producers wrote there and when the harness deleted it; a log
// start past what the harness deleted is a problem (nothing else should
// delete: the topic has no retention that short).
func (h *harness) markDeleted(lg [][]logRec, starts []int64) (notes []string) {
	deletedTo := make([]int64, len(lg))
	resurrected := map[int32]int64{}
	for _, d := range h.deletions {
		if int(d.P) >= len(lg) {
			continue
		}
		deletedTo[d.P] = max(deletedTo[d.P], d.To)
		for o := d.From; o < d.To && o < int64(len(lg[d.P])); o++ {
			lr := &lg[d.P][o]
			if lr.kind != offDeleted {
				// Read back although the harness deleted it: a broker
				// killed before it checkpointed the new log start
				// (log.flush.start.offset.checkpoint.interval.ms, 60 s)
				// comes back with the old one, and the deleted records
				// with it. The members were told they were gone and
				// reported them lost: they are held to that, not to
				// delivering them.
				resurrected[d.P]++
				lr.was, lr.kind = lr.kind, offDeleted
			}
			// The first deletion: after a log start came back, a later
			// deletion covers offsets an earlier one deleted already.
			if lr.gone == 0 || d.At < lr.gone {
				lr.gone = d.At
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(resurrected)) {
		notes = append(notes, fmt.Sprintf("partition %d: %d offset(s) the harness deleted are in the log again (a broker killed within log.flush.start.offset.checkpoint.interval.ms of the deletion restarts with the old log start): counted as deleted", p, resurrected[p]))
	}
	for p, s := range starts {
		if p < len(lg) && s > deletedTo[p] {
			h.note("partition %d starts at offset %d, but the harness deleted only below %d", p, s, deletedTo[p])
		}
	}
	deleted := func(p int32, o int64) *logRec {
		if int(p) < len(lg) && o >= 0 && o < int64(len(lg[p])) && lg[p][o].kind == offDeleted {
			return &lg[p][o]
		}
		return nil
	}
	h.live.mu.Lock()
	for _, r := range h.live.recs {
		if lr := deleted(r.p, r.o); lr != nil {
			lr.was, lr.hash = offData, r.hash
		}
	}
	h.live.mu.Unlock()
	h.txn.mu.Lock()
	for _, r := range h.txn.recs {
		if lr := deleted(r.p, r.o); lr != nil {
			lr.was, lr.hash = offAborted, r.hash
			if r.state == 'c' {
				lr.was = offData
			}
		}
	}
	h.txn.mu.Unlock()
	return notes
}

// checkLossMetrics holds each member process's loss counters against its
// loss lines: a counter above what the lines add up to is wrong at any
// time; below is wrong only in a scrape after the drain (an earlier scrape
// may predate the last lines of a process that was then stopped).
func checkLossMetrics(counts map[string]lossCounters, events []lossEvent) []string {
	type sums struct{ lost, trunc int64 }
	logged := map[string]sums{}
	for _, e := range events {
		s := logged[e.Instance]
		if e.Truncated {
			s.trunc += e.Count
		} else {
			s.lost += e.Count
		}
		logged[e.Instance] = s
	}
	var bad []string
	for _, inst := range slices.Sorted(maps.Keys(counts)) {
		c, l := counts[inst], logged[inst]
		if c.Lost > l.lost || c.Truncated > l.trunc || (c.Final && (c.Lost != l.lost || c.Truncated != l.trunc)) {
			bad = append(bad, fmt.Sprintf("%s: kafka_watermark_lost_records_total %d and _truncated_records_total %d, but its log reports %d lost and %d truncated",
				inst, c.Lost, c.Truncated, l.lost, l.trunc))
		}
	}
	return bad
}

// crossCheckProducers checks what the producers were told against the log
// read back: an acknowledged record must be there (the broker's durability,
// not the binary's), each committed transaction's records visible, each
// aborted one's not.
//
// What the harness itself took away is left out: records it deleted, and
// records an unclean election truncated (acknowledged by the old leader
// alone; the new log holds others there).
func (h *harness) crossCheckProducers(lg [][]logRec, facts *lossFacts) {
	kindAt := func(p prodRec) (byte, bool) {
		if int(p.p) >= len(lg) || p.o < 0 || p.o >= int64(len(lg[p.p])) {
			return 0, false
		}
		r := lg[p.p][p.o]
		return r.kind, r.hash == p.hash
	}
	takenAway := func(p prodRec) bool {
		if int(p.p) < len(lg) && p.o >= 0 && p.o < int64(len(lg[p.p])) && lg[p.p][p.o].kind == offDeleted {
			return lg[p.p][p.o].gone > 0
		}
		// At an offset an unclean election rewrote, a record acknowledged
		// but not in the log is one the election lost: a record of the old
		// log, or an acknowledgement of the old leader's lineage that
		// arrived late.
		return facts.rewritten(int(p.p), p.o) != nil
	}
	var missing, wrong int
	var examples []string
	example := func(p prodRec, what string) {
		if len(examples) < 5 {
			k, same := kindAt(p)
			examples = append(examples, fmt.Sprintf("%d/%d %s, the log holds %s", p.p, p.o, what, describeKind(k, same)))
		}
	}
	h.live.mu.Lock()
	for _, r := range h.live.recs {
		if k, same := kindAt(r); (k != offData || !same) && !takenAway(r) {
			missing++
			example(r, "acknowledged to the live producer")
		}
	}
	h.live.mu.Unlock()
	h.txn.mu.Lock()
	for _, r := range h.txn.recs {
		if takenAway(r.prodRec) {
			continue
		}
		k, same := kindAt(r.prodRec)
		switch {
		case !same, r.state == 'c' && k != offData, r.state == 'a' && k != offAborted:
			wrong++
			example(r.prodRec, map[byte]string{'c': "of a committed transaction", 'a': "of an aborted transaction"}[r.state])
		}
	}
	h.txn.mu.Unlock()
	if missing > 0 {
		h.note("%d records the live producer saw acknowledged are not in the log as written (%s)", missing, strings.Join(examples, "; "))
	}
	if wrong > 0 {
		h.note("%d records of transactions that ended without error are not in the log as their outcome says (%s)", wrong, strings.Join(examples, "; "))
	}
}

// describeKind says what the log holds at an offset, for a message.
func describeKind(k byte, sameValue bool) string {
	what := map[byte]string{offData: "a visible record", offAborted: "an aborted record", offMarker: "a marker", offDeleted: "nothing (deleted)"}[k]
	switch {
	case what == "":
		return "nothing read back"
	case (k == offData || k == offAborted) && !sameValue:
		return what + " with another value"
	}
	return what
}

func createTopic(ctx context.Context, brokers, topic string, parts, rf int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, int32(parts), int16(rf), nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for {
		ends, err := adm.ListEndOffsets(cctx, topic)
		if err == nil && ends.Error() == nil && len(ends[topic]) == parts {
			return nil
		}
		if cctx.Err() != nil {
			return errors.New("topic " + topic + " has no leaders after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func startOffsets(ctx context.Context, brokers, topic string, parts int) ([]int64, error) {
	return listOffsets(ctx, brokers, topic, parts, "start", (*kadm.Client).ListStartOffsets)
}

func endOffsets(ctx context.Context, brokers, topic string, parts int) ([]int64, error) {
	return listOffsets(ctx, brokers, topic, parts, "end", (*kadm.Client).ListEndOffsets)
}

// listOffsets lists the offsets of topic's partitions with list (the log
// starts or ends), on a client of its own, within a minute.
func listOffsets(ctx context.Context, brokers, topic string, parts int, which string,
	list func(*kadm.Client, context.Context, ...string) (kadm.ListedOffsets, error)) ([]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	listed, err := list(kadm.NewClient(cl), cctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("%s offsets of %s: %w", which, topic, err)
	}
	out := make([]int64, parts)
	listed.Each(func(l kadm.ListedOffset) {
		if int(l.Partition) < parts {
			out[l.Partition] = l.Offset
		}
	})
	return out, nil
}

func reproduceCommand(o *options) string {
	args := []string{"go run ./tests/chaos", "--duration", o.duration.String(), "--seed", fmt.Sprint(o.seed)}
	if o.protocol != "classic" {
		args = append(args, "--protocol", o.protocol)
	}
	def, _ := parseOptions(nil)
	add := func(name string, v, d any) {
		if fmt.Sprint(v) != fmt.Sprint(d) {
			args = append(args, "--"+name, fmt.Sprint(v))
		}
	}
	add("cluster", o.cluster, def.cluster)
	add("members", o.members, def.members)
	add("partitions", o.partitions, def.partitions)
	add("rate", o.rate, def.rate)
	add("txn-rate", o.txnRate, def.txnRate)
	add("abort-ratio", o.abortRatio, def.abortRatio)
	add("fault-gap", o.faultGap, def.faultGap)
	add("overlap", o.overlap, def.overlap)
	if want := defaultWeights; o.cluster > 1 {
		want += "," + clusterExtraWeights
		add("weights", o.weights, want)
	} else {
		add("weights", o.weights, want)
	}
	add("source", o.source, def.source)
	if o.selfCheck {
		args = append(args, "--self-check")
	}
	if o.race {
		args = append(args, "--race")
	}
	return strings.Join(args, " ")
}

// buildBinary builds ./cmd/watermark-connect into dir, from the working
// tree (source "tree") or from git HEAD (source "head", a git archive copy
// in dir/src).
func buildBinary(ctx context.Context, root, source string, race bool, dir string) (string, error) {
	src := root
	if source == "head" {
		src = filepath.Join(dir, "src")
		if err := testkit.ExportRef(ctx, root, "HEAD", src); err != nil {
			return "", err
		}
	}
	return testkit.Build{Dir: src, Race: race, Out: filepath.Join(dir, "watermark-connect")}.Run(ctx)
}

// writeDuplicates writes every duplicate delivery: partition, offset, when
// and by whom it came again, when and by whom it came first.
func writeDuplicates(path string, ld *testkit.Ledger) error {
	names := map[uint16]string{}
	for n, i := range ld.Instances {
		names[i] = n
	}
	var b strings.Builder
	b.WriteString("partition,offset,again_at,again_by,first_arrived_at,first_by\n")
	for _, d := range ld.Dups {
		e := ld.Parts[d.P][d.O]
		fmt.Fprintf(&b, "%d,%d,%s,%s,%s,%s\n", d.P, d.O, fmtTime(d.At), names[d.Inst], fmtTime(e.FirstArrive), names[e.Inst])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// gitLine is the first line of a read-only git command's output in root,
// or "". GIT_OPTIONAL_LOCKS=0: never a refresh of the index.
func gitLine(root string, args ...string) string {
	c := exec.Command("git", args...)
	c.Dir, c.Env = root, append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	b, err := c.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

// gitDirty reports whether the working tree differs from HEAD (git diff
// --quiet exits 1).
func gitDirty(root string) bool {
	c := exec.Command("git", "diff", "--quiet", "HEAD")
	c.Dir, c.Env = root, append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var ee *exec.ExitError
	return errors.As(c.Run(), &ee) && ee.ExitCode() == 1
}
