package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

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

	// deadLetter is the members' dead-letter topic, in a run that draws
	// poison only ("": none).
	deadLetter string
	// outTopic is the members' output topic in an --eos run ("": none).
	outTopic string

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
	if err := createTopic(ctx, h.kafka.seeds(), h.topic, o.partitions, h.kafka.replication(), nil); err != nil {
		return nil, err
	}
	if o.eos {
		h.outTopic = h.topic + "-out"
		if err := createTopic(ctx, h.kafka.seeds(), h.outTopic, o.partitions, h.kafka.replication(), nil); err != nil {
			return nil, err
		}
		h.logf("exactly once: output topic %s, transactional ids chaos-eos-%s-<member>, one message in %d failing in a processor", h.outTopic, suffix, o.errorOneIn)
		if o.eosControl {
			h.logf("eos-control: the members run without exactly_once (at least once into Kafka); the run must FAIL with duplicates")
		}
	}
	if weights, _ := parseWeights(o.weights); drawsPoison(weights) {
		// Stamped by the broker: a dead letter's timestamp is when it was
		// appended, which the commit checks need (deadletters.go); its
		// origin's timestamp is in its provenance.
		h.deadLetter = h.topic + "-dlq"
		appendTime := "LogAppendTime"
		if err := createTopic(ctx, h.kafka.seeds(), h.deadLetter, deadLetterPartitions, h.kafka.replication(),
			map[string]*string{"message.timestamp.type": &appendTime}); err != nil {
			return nil, err
		}
		h.logf("dead-letter topic %s (%d partitions), dead_letter.max_attempts %d", h.deadLetter, deadLetterPartitions, deadLetterAttempts)
	}
	if err := h.kafka.ready(ctx); err != nil {
		return nil, err
	}
	h.logf("topic %s (%d partitions), group %s (%s protocol), %d members", h.topic, o.partitions, h.group, o.protocol, o.members)

	var err error
	if h.sink, err = newSink(h.topic, o.partitions, o.checksKeys(), h.logf); err != nil {
		return nil, err
	}
	defer h.sink.close()
	conf := memberConf{seeds: func(name string) string { return h.kafka.memberSeeds(memberIndex(name)) },
		topic: h.topic, group: h.group, sinkURL: h.sink.url(), protocol: o.protocol, deadLetter: h.deadLetter, ordering: o.ordering,
		eos: o.eos, outTopic: h.outTopic, txnPrefix: "chaos-eos-" + suffix + "-", errorOneIn: o.errorOneIn, control: o.eosControl}
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
	h.txn = newTxnProducer(h.kafka.seeds(), h.topic, o.partitions, o.txnRate, o.abortRatio, o.seed, "chaos-txn-"+suffix, h.logf)
	if o.checksKeys() {
		h.live.keys, h.txn.keys = newKeySpace(o.keys, liveKeySalt), newKeySpace(o.keys, txnKeySalt)
		h.logf("ordering %s: records keyed over %d keys, the empty key and null keys; key order checked at the sink", o.ordering, o.keys)
	}
	h.live.start(ctx)
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
	wait := h.waitDelivering
	if o.eos {
		wait = h.waitCommitting
	}
	if err := wait(ctx, 3*time.Minute); err != nil {
		return nil, err
	}
	start.End = time.Now().UnixNano()
	start.AtEnd = h.poller.snapshot()
	h.faults = append(h.faults, start)
	if o.eos {
		h.logf("every member commits transactions; group type %q", h.groupType())
	} else {
		h.logf("every member delivers; group type %q", h.groupType())
	}
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
	if o.eos {
		return h.drainAndCheckEOS(ctx)
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
	if h.opts.eos {
		h.logf("progress: produced %d live + %d txn records", h.live.acked.Load(), h.txnRecords())
		return
	}
	h.logf("progress: produced %d live + %d txn records, sink %d requests, %d deliveries, %d failed on purpose",
		h.live.acked.Load(), h.txnRecords(), h.sink.Requests(), h.sink.Records(), h.sink.Failed())
}

func (h *harness) txnRecords() int {
	h.txn.mu.Lock()
	defer h.txn.mu.Unlock()
	return len(h.txn.recs)
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
