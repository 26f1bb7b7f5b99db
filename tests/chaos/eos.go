package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The exactly-once mode (--eos). Every member runs Kafka to Kafka: the
// kafka_watermark input with exactly_once: true, under a transactional id
// of its own that its restarts reuse (so that a restarted member aborts
// its predecessor's open transaction at once), then split, a random 0-5 ms
// of work per message and a processor that fails one message in
// --error-one-in (reject_errored nacks its batch: the open transaction
// aborts and every partition goes back to its last commit), into a
// kafka_watermark output bound to the group (max_in_flight 16) that writes
// each message to the output topic with its origin's partition and offset
// in headers. The faults are the member and broker kinds of the
// at-least-once runs plus member-pause: SIGSTOP past the session timeout,
// then SIGCONT, a zombie whose open transaction must be fenced.
//
// The sink is not used: there is nothing to hold a commit against at the
// time it is made, because a commit and the outputs it covers are one
// transaction. The checker reads the output topic after the drain as a
// read_committed reader, and requires every visible record of the source
// (non-transactional, or of a committed transaction) to have exactly one
// output there, and none for a record of an aborted transaction: lost 0,
// duplicates 0. Commits going backwards are checked as in the other mode,
// from the polled commits.

// eosWeights are the default weights of an --eos run.
const eosWeights = "member-kill=3,member-stop=2,member-pause=2,broker-term=1,broker-kill=1"

// eosKinds are the kinds an --eos run can draw: the sink kinds have no
// sink to act on, and retention, replay-rebalance and poison need one.
var eosKinds = []string{kindMemberKill, kindMemberStop, kindMemberPause, kindBrokerTerm, kindBrokerKill, kindKillInOutage}

// eosTxnTimeout is the members' transaction_timeout: what a read_committed
// reader waits at worst behind the open transaction of a member that died
// and did not come back under its id (and of a zombie whose transaction
// the coordinator had to time out).
const eosTxnTimeout = 20 * time.Second

// Headers the output writes (metadata.include_patterns): where each output
// record came from.
const (
	headerPartition = "kafka_partition"
	headerOffset    = "kafka_offset"
)

// checkEOS refuses what --eos does not combine with.
func (o *options) checkEOS() error {
	switch {
	case o.eosControl && !o.eos:
		return errors.New("--eos-control is the negative control of --eos: give both")
	case !o.eos:
		return nil
	case o.cluster != 1:
		return errors.New("--eos runs on the single broker (--cluster 3 is not built for it yet)")
	case o.selfCheck:
		return errors.New("--self-check is the negative control of the at-least-once sink; --eos has no sink")
	case o.ordering != "none" || o.keyCheck:
		return errors.New("--eos does not check key order (--ordering key, --key-check)")
	case o.errorOneIn == 1:
		return errors.New("--error-one-in 1 fails every message: no transaction could ever commit")
	}
	return nil
}

// eosYAML is an --eos member's config: the at-least-once member's input
// settings (read_committed, commit metadata, 500ms commit period, small
// batches, 6s session), exactly_once under the member's own transactional
// id, and tests/eos_test.go's pipeline.
//
// Under --eos-control the input and the output leave exactly_once out:
// the output then writes with a producer of its own, at least once, and a
// kill -9 or a nack writes again what was written above the last commit.
func (c memberConf) eosYAML(name, metricsAddr string) string {
	in := fmt.Sprintf("\n    exactly_once: true\n    transactional_id: %q\n    transaction_timeout: %s", c.txnPrefix+name, eosTxnTimeout)
	out := fmt.Sprintf("\n      exactly_once: { consumer_group: %q }", c.group)
	if c.control {
		in, out = "", ""
	}
	flaky := "content()"
	if c.errorOneIn > 0 {
		flaky = fmt.Sprintf(`if random_int(max: %d) == 0 { throw("chaos: flaky processor") } else { content() }`, c.errorOneIn-1)
	}
	return fmt.Sprintf(`http:
  enabled: true
  address: %[1]s
metrics:
  prometheus: {}
logger:
  level: INFO
  format: logfmt
  add_timestamp: true
shutdown_timeout: 30s
input:
  kafka_watermark:
    seed_brokers: [ %[2]q ]
    topics: [ %[3]q ]
    consumer_group: %[4]q
    client_id: %[5]q
    group_protocol: %[6]s
    transaction_isolation_level: read_committed
    commit_metadata: true
    commit_period: 500ms
    batch_max_records: 50
    max_pending_batches: 4
    session_timeout: 6s
    heartbeat_interval: 1s
    stall_replay_after: 3s%[7]s
pipeline:
  threads: 4
  processors:
    - split: { size: 10 }
    - sleep: { duration: '${! random_int(max: 5) }ms' }
    - mapping: |
        meta = @
        root = %[9]s
output:
  reject_errored:
    kafka_watermark:
      seed_brokers: [ %[2]q ]
      topic: %[10]q
      key: '${! @kafka_key }'
      max_in_flight: 16
      metadata: { include_patterns: [ '^kafka_(partition|offset)$' ] }%[8]s
`, metricsAddr, c.seeds(name), c.topic, c.group, "chaos-"+name, c.protocol, in, out, flaky, c.outTopic)
}

// pause stops member name with SIGSTOP for hold and resumes it with
// SIGCONT (also when ctx ends first: a run never leaves a member stopped).
func (f *fleet) pause(ctx context.Context, name string, hold time.Duration) error {
	m := f.get(name)
	if m == nil || !m.running() {
		return fmt.Errorf("%s is not running", name)
	}
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP %s: %w", m.instance, err)
	}
	f.logf("paused %s (SIGSTOP) for %v", m.instance, hold)
	err := sleepCtx(ctx, hold)
	if cerr := m.cmd.Process.Signal(syscall.SIGCONT); cerr != nil && m.running() {
		return fmt.Errorf("SIGCONT %s: %w", m.instance, cerr)
	}
	f.logf("resumed %s (SIGCONT)", m.instance)
	return err
}

// waitCommitting waits until every running member has committed a
// transaction (kafka_watermark_transactions_total{result="committed"}):
// the --eos counterpart of waitDelivering.
func (h *harness) waitCommitting(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		for _, m := range h.fleet.running() {
			if committedTxns(ctx, m, h.opts.eosControl) == 0 {
				missing = append(missing, m.instance)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("members %v committed no transaction within %v", missing, timeout)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// committedTxns is how many transactions member m says it committed (0
// when its metrics cannot be read); under --eos-control, which has no
// transactions, how many partition commits.
func committedTxns(ctx context.Context, m *member, control bool) float64 {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	series, err := testkit.ScrapeMetrics(sctx, m.metricsAddr)
	if err != nil {
		return 0
	}
	if control {
		n, _ := series.Sum("kafka_watermark_commits_total")
		return n
	}
	n := 0.0
	for _, s := range series.Find("kafka_watermark_transactions_total") {
		if s.Labels["result"] == "committed" {
			n += s.Value
		}
	}
	return n
}

// outRec is one record of the output topic, as a read_committed reader
// sees it.
type outRec struct {
	p    int32 // where it is in the output topic
	o    int64
	srcP int32 // its origin, from its headers (hdrOK false: missing or not a number)
	srcO int64
	hdr  bool
	hash uint32 // of the value
	ts   int64  // Unix ns: when it was produced (the output sets no timestamp)
}

func (r outRec) String() string {
	return fmt.Sprintf("output %d/%d at %s", r.p, r.o, fmtTime(r.ts))
}

// readOutput reads every partition of the output topic to its end, once
// at read_committed (the records a reader of the output sees) and once at
// read_uncommitted (how many records the aborted transactions wrote).
func readOutput(ctx context.Context, brokers, topic string, parts int) (visible []outRec, aborted int64, err error) {
	ends, err := endOffsets(ctx, brokers, topic, parts)
	if err != nil {
		return nil, 0, err
	}
	err = scanTopic(ctx, brokers, topic, ends, true, func(r *kgo.Record) {
		or := outRec{p: r.Partition, o: r.Offset, hash: testkit.HashValue(string(r.Value)), ts: r.Timestamp.UnixNano()}
		var pOK, oOK bool
		for _, h := range r.Headers {
			switch h.Key {
			case headerPartition:
				p, err := strconv.ParseInt(string(h.Value), 10, 32)
				or.srcP, pOK = int32(p), err == nil
			case headerOffset:
				o, err := strconv.ParseInt(string(h.Value), 10, 64)
				or.srcO, oOK = o, err == nil
			}
		}
		or.hdr = pOK && oOK
		visible = append(visible, or)
	})
	if err != nil {
		return nil, 0, err
	}
	all := int64(0)
	if err := scanTopic(ctx, brokers, topic, ends, false, func(*kgo.Record) { all++ }); err != nil {
		return nil, 0, err
	}
	return visible, all - int64(len(visible)), nil
}

// scanTopic calls fn with every data record of topic below ends, at
// read_committed or not. It reads control records too, so that it knows
// when a partition is read to its end even when a marker ends it; it
// waits up to 5 minutes for a transaction still open (the last one of a
// member that did not come back ends at its transaction_timeout).
func scanTopic(ctx context.Context, brokers, topic string, ends []int64, committed bool, fn func(*kgo.Record)) error {
	offsets := map[int32]kgo.Offset{}
	for p, e := range ends {
		if e > 0 {
			offsets[int32(p)] = kgo.NewOffset().AtStart()
		}
	}
	left := len(offsets)
	if left == 0 {
		return nil
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seedList(brokers)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.KeepControlRecords(),
		kgo.ClientID("chaos-eos-reader"),
	}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	done := make([]bool, len(ends))
	for left > 0 {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return fmt.Errorf("read %s (read_committed %v): %d partitions not read to their end: %w", topic, committed, left, rctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			if int(p) >= len(ends) || r.Offset >= ends[p] {
				return
			}
			if !r.Attrs.IsControl() {
				fn(r)
			}
			if r.Offset == ends[p]-1 && !done[p] {
				done[p] = true
				left--
			}
		})
	}
	return nil
}

// eosResult is what the exactly-once check found.
type eosResult struct {
	OutputTopic string `json:"output_topic"`
	// Outputs are the output records a read_committed reader sees;
	// AbortedOutputs those only a read_uncommitted reader sees (written in
	// transactions that aborted).
	Outputs        int64 `json:"outputs"`
	AbortedOutputs int64 `json:"aborted_outputs"`
	// Exactly is the source's visible records with exactly one output;
	// Lost, those with none; Duplicated, those with more, and Duplicates
	// the outputs beyond the first of each.
	Exactly    int64 `json:"exactly_once"`
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated_records"`
	Duplicates int64 `json:"duplicates"`
	// AbortedSource: outputs of source records of aborted transactions;
	// Phantom: outputs whose origin is no record of the source (a marker,
	// past its end, headers missing); Corrupt: outputs whose value is not
	// their origin's.
	AbortedSource int64 `json:"aborted_source_outputs"`
	Phantom       int64 `json:"phantom"`
	Corrupt       int64 `json:"corrupt"`
	// From the members' logs: the INFO lines "exactly_once: transaction
	// aborted (...)", by cause, and the ERROR lines of an abort that failed.
	TxnAborted     int            `json:"transactions_aborted"`
	AbortCauses    map[string]int `json:"abort_causes,omitempty"`
	TxnAbortFailed int            `json:"abort_failures"`
	// Examples of every breach, and every duplicate (origin -> outputs).
	Examples []string `json:"examples,omitempty"`
	dups     []eosDup
}

// eosDup is a source record with more than one output.
type eosDup struct {
	srcP int32
	srcO int64
	outs []outRec
}

func (r *eosResult) example(format string, args ...any) {
	if len(r.Examples) < maxExamples {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

func (r *eosResult) failures() []string {
	var out []string
	fail := func(cond bool, format string, args ...any) {
		if cond {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	fail(r.Lost > 0, "exactly once: %d source records have no output in %s", r.Lost, r.OutputTopic)
	fail(r.Duplicates > 0, "exactly once: %d source records have more than one output (%d outputs too many) for a read_committed reader of %s", r.Duplicated, r.Duplicates, r.OutputTopic)
	fail(r.AbortedSource > 0, "exactly once: %d outputs of source records of aborted transactions", r.AbortedSource)
	fail(r.Phantom > 0, "exactly once: %d outputs whose origin is no record of the source", r.Phantom)
	fail(r.Corrupt > 0, "exactly once: %d outputs with a value other than their origin's", r.Corrupt)
	return out
}

// eosAccount checks the output read back (outs) against the source read
// back (lg), and fills in what account does for the other mode that still
// means something here: per fault, its recovery, the duplicates of its
// window (an output beyond the first of its origin belongs to the fault in
// whose window it was produced), paused partitions and watermark ages;
// backward commits from the polls. Exposure stays 0: with exactly once no
// fault may duplicate anything.
func eosAccount(lg [][]logRec, outs []outRec, abortedOuts int64, hist [][]commitObs, backs []backObs, outages []window,
	faults []*faultRun, paused []pausedObs, runEnd int64) *accounting {
	a := &accounting{}
	e := &eosResult{Outputs: int64(len(outs)), AbortedOutputs: abortedOuts}
	by := make([][][]outRec, len(lg))
	for p := range lg {
		by[p] = make([][]outRec, len(lg[p]))
	}
	for _, r := range outs {
		switch {
		case !r.hdr:
			e.Phantom++
			e.example("%s has no origin headers", r)
			continue
		case int(r.srcP) >= len(lg) || r.srcP < 0 || r.srcO < 0 || r.srcO >= int64(len(lg[r.srcP])):
			e.Phantom++
			e.example("%s names %d/%d, past the source's end", r, r.srcP, r.srcO)
			continue
		}
		src := lg[r.srcP][r.srcO]
		switch src.kind {
		case offData:
			by[r.srcP][r.srcO] = append(by[r.srcP][r.srcO], r)
			if r.hash != src.hash {
				e.Corrupt++
				e.example("%s holds another value than its origin %d/%d", r, r.srcP, r.srcO)
			}
		case offAborted:
			e.AbortedSource++
			e.example("%s comes from %d/%d, a record of an aborted transaction", r, r.srcP, r.srcO)
		default:
			e.Phantom++
			e.example("%s names %d/%d, which holds no visible record", r, r.srcP, r.srcO)
		}
	}
	a.Faults = make([]faultResult, len(faults))
	for p := range lg {
		for o, r := range lg[p] {
			switch r.kind {
			case offData:
				a.Records++
			case offAborted:
				a.Aborted++
				continue
			case offMarker:
				a.Markers++
				continue
			default:
				continue
			}
			got := by[p][o]
			switch len(got) {
			case 0:
				e.Lost++
				if len(a.LostExamples) < maxExamples {
					a.LostExamples = append(a.LostExamples, fmt.Sprintf("%d/%d", p, o))
				}
				continue
			case 1:
				e.Exactly++
				a.Received++
				continue
			}
			a.Received++
			e.Duplicated++
			e.Duplicates += int64(len(got) - 1)
			slices.SortFunc(got, func(x, y outRec) int {
				return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(x.p, y.p), cmp.Compare(x.o, y.o))
			})
			e.dups = append(e.dups, eosDup{srcP: int32(p), srcO: int64(o), outs: got})
			e.example("%d/%d has %d outputs: %v", p, o, len(got), got)
			for _, again := range got[1:] {
				if i := faultAt(faults, again.ts); i >= 0 {
					a.Faults[i].Duplicates++
				}
			}
		}
	}
	a.Deliveries, a.Lost, a.Duplicates = e.Outputs, e.Lost, e.Duplicates
	a.AbortedReceived, a.Phantom, a.Corrupt = e.AbortedSource, e.Phantom, e.Corrupt
	windowEnd := func(i int) int64 {
		if i+1 < len(faults) {
			return faults[i+1].At
		}
		return runEnd
	}
	for i, f := range faults {
		f.Recovered = recoveredAt(lg, hist, f.End)
		res := &a.Faults[i]
		res.RecoveryS = -1
		if f.Recovered > 0 && f.Recovered <= windowEnd(i) {
			res.RecoveryS = float64(f.Recovered-f.At) / 1e9
		}
		for _, pz := range paused {
			if pz.at >= f.At && pz.at < windowEnd(i) {
				res.MaxPaused = max(res.MaxPaused, pz.paused)
				res.MaxStalled = max(res.MaxStalled, pz.stalled)
			}
		}
	}
	c := &checker{a: a, lg: lg}
	c.backward(hist, backs, outages)
	c.ages(hist, faults)
	a.EOS = e
	return a
}

// abortCause sorts an abort line of a member by its reason: the text in
// "transaction aborted (...)", which names what failed.
func abortCause(line string) string {
	_, why, _ := strings.Cut(line, "exactly_once: transaction aborted (")
	if i := strings.LastIndex(why, "); "); i >= 0 {
		why = why[:i]
	}
	switch {
	case strings.Contains(why, "chaos: flaky processor"):
		return "nack: the flaky processor"
	case strings.HasPrefix(why, "batch "):
		return "nack: other"
	case strings.HasPrefix(why, "a batch of an epoch that ended"):
		return "late_ack"
	case strings.HasPrefix(why, "partitions "):
		return "rebalance"
	case strings.HasPrefix(why, "the commit failed: "):
		// What kgo or the broker said: "the transaction was aborted" (a
		// rebalance while it was open), a fenced producer, a timeout.
		what := strings.TrimPrefix(why, "the commit failed: ")
		if len(what) > 80 {
			what = what[:80] + "..."
		}
		return "commit failed: " + what
	}
	return "other"
}

// writeEOSDuplicates writes every source record with more than one output:
// its origin, then each output (partition/offset@time), first produced
// first.
func writeEOSDuplicates(path string, e *eosResult) error {
	var b strings.Builder
	b.WriteString("source_partition,source_offset,outputs\n")
	for _, d := range e.dups {
		var outs []string
		for _, o := range d.outs {
			outs = append(outs, fmt.Sprintf("%d/%d@%s", o.p, o.o, fmtTime(o.ts)))
		}
		fmt.Fprintf(&b, "%d,%d,%s\n", d.srcP, d.srcO, strings.Join(outs, " "))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// drainAndCheckEOS is drainAndCheck for --eos: the same drain (every
// member up, the producers stopped, every partition committed to its log
// end, then every member stopped gracefully), then the source and the
// output read back and held against each other.
func (h *harness) drainAndCheckEOS(ctx context.Context) (*accounting, error) {
	o := h.opts
	h.logf("drain: every member up, producers stopping")
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
	stable := 0
	var offs, ends []int64
	for {
		ok, c, e := h.poller.drained()
		offs, ends = c, e
		if ok {
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
	h.fleet.stopAll(90 * time.Second)
	h.poller.stop()
	runEnd := time.Now().UnixNano()

	starts, err := startOffsets(ctx, h.kafka.seeds(), h.topic, o.partitions)
	if err != nil {
		return nil, err
	}
	srcEnds, err := endOffsets(ctx, h.kafka.seeds(), h.topic, o.partitions)
	if err != nil {
		return nil, err
	}
	h.logf("reading the source back (starts %v, ends %v) and the output topic %s", starts, srcEnds, h.outTopic)
	lg, err := readTopic(ctx, h.kafka.seeds(), h.topic, starts, srcEnds)
	if err != nil {
		return nil, err
	}
	_ = h.markDeleted(lg, starts) // nothing deletes in an --eos run: a log start above 0 is a problem it notes
	outs, abortedOuts, err := readOutput(ctx, h.kafka.seeds(), h.outTopic, o.partitions)
	if err != nil {
		return nil, err
	}
	hist, backs, _, paused := h.poller.history()
	acc := eosAccount(lg, outs, abortedOuts, hist, backs, h.kafka.outages(), h.faults, paused, runEnd)
	acc.EOS.OutputTopic = h.outTopic
	logs := h.fleet.scanLogs()
	acc.EOS.TxnAborted, acc.EOS.AbortCauses, acc.EOS.TxnAbortFailed = logs.TxnAborted, logs.TxnAbortCauses, logs.TxnAbortFailed
	if err := writeEOSDuplicates(filepath.Join(o.out, "duplicates.csv"), acc.EOS); err != nil {
		h.logf("write duplicates.csv: %v", err)
	}
	e := acc.EOS
	h.logf("exactly once: %d source records, %d outputs read_committed (%d more in aborted transactions): %d exactly once, %d lost, %d duplicated (%d outputs too many), %d outputs of aborted source records, %d phantom, %d corrupt; %d transactions aborted %v",
		acc.Records, e.Outputs, e.AbortedOutputs, e.Exactly, e.Lost, e.Duplicated, e.Duplicates, e.AbortedSource, e.Phantom, e.Corrupt, e.TxnAborted, e.AbortCauses)
	acc.TxnOutcomeAcrossOutage = h.crossCheckProducers(lg, &lossFacts{}, h.kafka.outages())
	return acc, nil
}

// eosSummary is the markdown summary of an --eos run.
func eosSummary(row func(string, any), r *report) {
	e := r.EOS
	row("faults", r.Faults)
	row("kill -9 cycles / broker restarts / member pauses past the session / rebalances seen",
		fmt.Sprintf("%d / %d / %d / %d", r.KillCycles, r.BrokerRestarts, r.Pauses, r.Rebalances))
	row("source records (visible: non-transactional and committed transactions)", r.Records)
	row("source records of aborted transactions / transaction markers", fmt.Sprintf("%d / %d", r.Aborted, r.Markers))
	row("outputs a read_committed reader of "+e.OutputTopic+" sees / outputs of aborted transactions (read_uncommitted only)",
		fmt.Sprintf("%d / %d", e.Outputs, e.AbortedOutputs))
	row("source records with exactly one output", e.Exactly)
	row("**lost**: source records with no output (must be 0)", e.Lost)
	row("**duplicates**: outputs beyond the first of a source record (must be 0); source records concerned", fmt.Sprintf("%d; %d", e.Duplicates, e.Duplicated))
	row("**outputs of aborted source records / phantom / corrupt** (must be 0)", fmt.Sprintf("%d / %d / %d", e.AbortedSource, e.Phantom, e.Corrupt))
	row("**backward commits** (must be 0), polled", r.BackwardPolled)
	row("transactions aborted (members' INFO lines)", e.TxnAborted)
	for _, k := range slices.Sorted(maps.Keys(e.AbortCauses)) {
		row("&nbsp;&nbsp;of which "+k, e.AbortCauses[k])
	}
	row("aborts that failed (ERROR lines; the broker aborts at transaction_timeout)", e.TxnAbortFailed)
	row("stale reads right after a broker restart (tolerated)", r.StaleReads)
	if r.TxnOutcomeAcrossOutage > 0 {
		row("source records of transactions kgo said committed, across a broker outage, aborted in the log (tolerated; the producer's, not the input's)", r.TxnOutcomeAcrossOutage)
	}
	row("largest watermark age", fmt.Sprintf("%.1f s (%s)", r.MaxAgeS, r.MaxAgeWhere))
	row("slowest recovery (fault to commits moving again)", fmt.Sprintf("%.1f s (%s)", r.SlowestRecoveryS, r.SlowestRecovery))
	row("commits polled (distinct)", r.PolledCommits)
	row("most partitions paused at once (max_pending_batches)", r.MaxPaused)
	row("member logs: partitions lost / stalls / replays in place / skipped records / commit failures",
		fmt.Sprintf("%d / %d / %d / %d / %d", r.Logs.Lost, r.Logs.Stalled, r.Logs.Replays, r.Logs.Skipped, r.Logs.CommitFailed))
	row("producers: live acked / failed; transactions committed / aborted / failed",
		fmt.Sprintf("%d / %d; %d / %d / %d", r.Produced.LiveAcked, r.Produced.LiveFailed, r.Produced.TxnCommitted, r.Produced.TxnAborted, r.Produced.TxnFailed))
	row("time taken", fmt.Sprintf("%.0f s", r.TookS))
}
