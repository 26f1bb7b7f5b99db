package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// kindResult is one fault kind's figures.
type kindResult struct {
	Count        int     `json:"count"`
	Duplicates   int64   `json:"duplicates"`
	Exposure     int64   `json:"exposure"`
	MaxRecoveryS float64 `json:"max_recovery_s"`
	Unrecovered  int     `json:"unrecovered"`
	Outside      int64   `json:"outside_replay"`
	MaxAgeS      float64 `json:"max_watermark_age_s"`
	MaxPaused    int     `json:"max_paused_partitions"`
}

// faultLine is one fault of the timeline.
type faultLine struct {
	plannedFault
	GapS    float64 `json:"gap_s"`
	HoldS   float64 `json:"hold_s"`
	AtS     float64 `json:"at_s"`     // since the start of the fault phase (startup: negative)
	ActionS float64 `json:"action_s"` // how long the action took
	faultResult
	Err  string `json:"error,omitempty"`
	Note string `json:"note,omitempty"`
}

// report is chaos-report.json.
type report struct {
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures"`
	Error    string   `json:"harness_error,omitempty"`

	Seed       uint64  `json:"seed"`
	Command    string  `json:"command"`
	Protocol   string  `json:"protocol"`
	Ordering   string  `json:"ordering"`
	GroupType  string  `json:"group_type"`
	Cluster    int     `json:"cluster"`
	Members    int     `json:"members"`
	Partitions int     `json:"partitions"`
	DurationS  float64 `json:"duration_s"` // the fault phase
	TookS      float64 `json:"took_s"`     // the whole run

	Faults     int                    `json:"faults"`
	Records    int64                  `json:"records"` // visible records in the log (non-transactional and committed transactions)
	Received   int64                  `json:"received"`
	Deliveries int64                  `json:"deliveries"`
	Lost       int64                  `json:"lost"`
	Violations int64                  `json:"violations"`
	Backward   int                    `json:"backward"`
	Duplicates int64                  `json:"duplicates"`
	Exposure   int64                  `json:"exposure"`
	ByFault    map[string]*kindResult `json:"by_fault"`

	Aborted         int64 `json:"aborted_records"`
	AbortedReceived int64 `json:"aborted_received"`
	Markers         int64 `json:"markers"`
	Phantom         int64 `json:"phantom"`
	Corrupt         int64 `json:"corrupt"`
	StaleReads      int64 `json:"stale_reads"`
	// Records of transactions kgo reported committed, in flight across a
	// broker outage, that the log holds aborted (drain.go,
	// crossCheckProducers): tolerated, and shown.
	TxnOutcomeAcrossOutage int     `json:"txn_outcome_across_outage"`
	BackwardLog            int     `json:"backward_in_log"`
	BackwardPolled         int     `json:"backward_polled"`
	Audited                int     `json:"audited_commit_records"`
	PolledCommits          int     `json:"polled_distinct_commits"`
	RangesChecked          int64   `json:"range_offsets_checked"`
	StallsInCommits        int     `json:"stalls_in_commits"`
	MaxAgeS                float64 `json:"max_watermark_age_s"`
	MaxAgeWhere            string  `json:"max_watermark_age_where"`
	SlowestRecoveryS       float64 `json:"slowest_recovery_s"`
	SlowestRecovery        string  `json:"slowest_recovery_fault"`
	KillCycles             int     `json:"kill_cycles"`
	BrokerRestarts         int     `json:"broker_restarts"`
	LeaderMoves            int     `json:"leader_moves"`
	NetworkCuts            int     `json:"network_cuts"`
	Rebalances             int     `json:"rebalances"`
	MaxPaused              int     `json:"max_paused_partitions"`
	OutOfOrderAcks         int64   `json:"out_of_order_acks"`
	SinkFailed             int64   `json:"sink_failed_requests"`
	SinkAborted            int64   `json:"sink_aborted_requests"`

	// Records Kafka took away (losscheck.go): reported_lost must equal
	// expected_lost, the offsets the harness deleted before any sink had
	// them.
	ReportedLost int64        `json:"reported_lost"`
	ExpectedLost int64        `json:"expected_lost"`
	Losses       lossResult   `json:"losses"`
	Deletions    []deletion   `json:"deletions,omitempty"`
	Truncations  []truncation `json:"truncations,omitempty"`
	LossMetrics  []string     `json:"loss_metric_mismatches,omitempty"`
	BackSteps    int          `json:"backward_steps_allowed"` // one per truncation at most
	Deleted      int64        `json:"deleted_offsets"`

	// The dead-letter topic of a run that draws poison (deadletters.go).
	DeadLetterTopic string            `json:"dead_letter_topic,omitempty"`
	DeadLetters     *deadLetterResult `json:"dead_letters,omitempty"`

	// The key check of a run with keyed records (keyorder.go).
	KeyOrder *keyOrderResult `json:"key_order,omitempty"`

	// The exactly-once check of an --eos run (eos.go), and its member
	// pauses past the session timeout.
	EOS    *eosResult `json:"exactly_once,omitempty"`
	Pauses int        `json:"member_pauses,omitempty"`

	Produced  producedFigures   `json:"produced"`
	Logs      logStats          `json:"member_logs"`
	Schedule  []faultLine       `json:"schedule"`
	Violation []string          `json:"violation_examples,omitempty"`
	Backwards []string          `json:"backward_examples,omitempty"`
	LostAt    []string          `json:"lost_examples,omitempty"`
	Bad       []string          `json:"bad_examples,omitempty"`
	Env       map[string]string `json:"environment"`
}

type producedFigures struct {
	LiveAcked       int64          `json:"live_acked"`
	LiveFailed      int64          `json:"live_failed"`
	TxnCommitted    int            `json:"transactions_committed"`
	TxnAborted      int            `json:"transactions_aborted"`
	TxnFailed       int            `json:"transactions_failed"`
	TxnUnknown      int            `json:"records_of_unknown_fate"`
	ProducerErrors  map[string]int `json:"errors,omitempty"`
	TxnErrors       map[string]int `json:"transaction_errors,omitempty"`
	ProducedRecords int64          `json:"records_written"`
}

func (h *harness) buildReport(acc *accounting, runErr error) *report {
	o := h.opts
	r := &report{Seed: o.seed, Command: reproduceCommand(o), Protocol: o.protocol, Ordering: o.ordering, Cluster: o.cluster, Members: o.members,
		Partitions: o.partitions, ByFault: map[string]*kindResult{}, Env: environment(h)}
	r.TookS = time.Since(h.began).Seconds()
	if !h.faultStart.IsZero() && !h.faultEnd.IsZero() {
		r.DurationS = h.faultEnd.Sub(h.faultStart).Seconds()
	}
	if h.poller != nil {
		r.GroupType = h.groupType()
	}
	if runErr != nil {
		r.Error = runErr.Error()
		r.Failures = append(r.Failures, "harness error: "+runErr.Error())
	}
	if h.live != nil {
		r.Produced.LiveAcked, r.Produced.LiveFailed = h.live.acked.Load(), h.live.failed.Load()
		h.live.mu.Lock()
		r.Produced.ProducerErrors = h.live.errs
		h.live.mu.Unlock()
	}
	if h.txn != nil {
		h.txn.mu.Lock()
		r.Produced.TxnCommitted, r.Produced.TxnAborted, r.Produced.TxnFailed, r.Produced.TxnUnknown = h.txn.committed, h.txn.aborted, h.txn.failed, h.txn.unknown
		r.Produced.TxnErrors = h.txn.errs
		h.txn.mu.Unlock()
	}
	if h.sink != nil {
		r.SinkFailed, r.SinkAborted = h.sink.Failed(), h.sink.Aborted()
		r.OutOfOrderAcks = h.sink.outOfOrder()
	}
	if h.fleet != nil {
		r.Logs = h.fleet.scanLogs()
	}
	var rebalances []int64
	if h.poller != nil {
		var hist [][]commitObs
		hist, _, rebalances, _ = h.poller.history()
		for _, hp := range hist {
			r.PolledCommits += len(hp)
		}
		h.poller.mu.Lock()
		for _, pz := range h.poller.paused {
			r.MaxPaused = max(r.MaxPaused, pz.paused)
		}
		h.poller.mu.Unlock()
	}
	r.Rebalances = len(rebalances)

	if acc != nil {
		r.Records, r.Received, r.Deliveries = acc.Records, acc.Received, acc.Deliveries
		r.Lost, r.Violations = acc.Lost, acc.ViolationsN
		r.BackwardLog, r.BackwardPolled = len(acc.BackwardLog), len(acc.BackwardPolled)
		r.Backward = r.BackwardLog + r.BackwardPolled
		r.Duplicates, r.Exposure = acc.Duplicates, acc.Exposure
		r.Aborted, r.AbortedReceived, r.Markers, r.Phantom, r.Corrupt = acc.Aborted, acc.AbortedReceived, acc.Markers, acc.Phantom, acc.Corrupt
		r.StaleReads, r.Audited, r.RangesChecked, r.StallsInCommits = acc.StaleReads, acc.Audited, acc.RangesChecked, acc.StallsInCommits
		r.MaxAgeS, r.MaxAgeWhere = round(acc.MaxAgeS), acc.MaxAgeWhere
		r.TxnOutcomeAcrossOutage = acc.TxnOutcomeAcrossOutage
		r.Violation = acc.Violations
		r.Backwards = append(slices.Clone(acc.BackwardLog), acc.BackwardPolled...)
		r.LostAt, r.Bad = acc.LostExamples, acc.BadExamples
		r.Produced.ProducedRecords = acc.Records + acc.Aborted
		r.Losses, r.LossMetrics, r.BackSteps, r.Deleted = acc.Loss, acc.LossMetrics, acc.BackSteps, acc.Deleted
		r.ReportedLost, r.ExpectedLost = acc.Loss.ReportedLost, acc.Loss.Expected
		r.DeadLetters = acc.DeadLetters
		r.KeyOrder = acc.KeyOrder
		r.EOS = acc.EOS
	}
	r.DeadLetterTopic = h.deadLetter
	r.Deletions, r.Truncations = h.deletions, h.truncations
	var faultPhaseStart int64
	if !h.faultStart.IsZero() {
		faultPhaseStart = h.faultStart.UnixNano()
	}
	for i, f := range h.faults {
		fl := faultLine{plannedFault: f.plannedFault, GapS: f.Gap.Seconds(), HoldS: f.Hold.Seconds(), Err: f.Err, Note: f.Note,
			ActionS: round(float64(f.End-f.At) / 1e9)}
		if faultPhaseStart != 0 {
			fl.AtS = round(float64(f.At-faultPhaseStart) / 1e9)
		}
		if acc != nil && i < len(acc.Faults) {
			fl.faultResult = acc.Faults[i]
			fl.RecoveryS, fl.MaxAgeS = round(fl.RecoveryS), round(fl.MaxAgeS)
		}
		r.Schedule = append(r.Schedule, fl)
		k := r.ByFault[f.Kind]
		if k == nil {
			k = &kindResult{}
			r.ByFault[f.Kind] = k
		}
		k.Count++
		k.Duplicates += fl.Duplicates
		k.Exposure += fl.Exposure
		k.Outside += fl.Outside
		k.MaxAgeS = max(k.MaxAgeS, fl.MaxAgeS)
		k.MaxPaused = max(k.MaxPaused, fl.MaxPaused)
		if fl.RecoveryS < 0 {
			k.Unrecovered++
		} else {
			k.MaxRecoveryS = max(k.MaxRecoveryS, fl.RecoveryS)
			if f.Kind != kindStart && fl.RecoveryS > r.SlowestRecoveryS {
				r.SlowestRecoveryS, r.SlowestRecovery = fl.RecoveryS, fmt.Sprintf("#%d %s", f.Index, f.Kind)
			}
		}
		if f.Kind != kindStart {
			r.Faults++
		}
		switch f.Kind {
		case kindMemberKill:
			r.KillCycles++
		case kindKillInOutage:
			r.KillCycles++
			r.BrokerRestarts++
		case kindMemberCut:
			r.NetworkCuts++
		case kindLeaderMove:
			r.LeaderMoves++
		case kindBrokerTerm, kindBrokerKill:
			r.BrokerRestarts++
		case kindMemberPause:
			r.Pauses++
		}
		if acc != nil && fl.Duplicates > fl.Exposure {
			r.Failures = append(r.Failures, fmt.Sprintf("fault #%d (%s): %d duplicates, more than its exposure %d", f.Index, f.Kind, fl.Duplicates, fl.Exposure))
		}
	}
	if acc != nil {
		fail := func(cond bool, format string, args ...any) {
			if cond {
				r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
			}
		}
		// An --eos run says the same of its output (eosResult.failures).
		sink := acc.EOS == nil
		fail(sink && r.Lost > 0, "%d records lost (first: %v)", r.Lost, acc.LostExamples)
		fail(r.Violations > 0, "%d commit violations (first: %v)", r.Violations, first(acc.Violations, 3))
		fail(r.Backward > 0, "%d backward commits (first: %v)", r.Backward, first(r.Backwards, 3))
		fail(sink && r.AbortedReceived > 0, "%d records of aborted transactions received at read_committed", r.AbortedReceived)
		fail(sink && r.Phantom > 0, "%d deliveries of offsets that hold no visible record", r.Phantom)
		fail(sink && r.Corrupt > 0, "%d records received with a value other than the log's", r.Corrupt)
		for _, m := range acc.Loss.Mismatches {
			r.Failures = append(r.Failures, "reported_lost: "+m)
		}
		for _, m := range acc.LossMetrics {
			r.Failures = append(r.Failures, "loss metrics: "+m)
		}
		if acc.DeadLetters != nil {
			r.Failures = append(r.Failures, acc.DeadLetters.failures()...)
		}
		if acc.KeyOrder != nil {
			r.Failures = append(r.Failures, acc.KeyOrder.failures()...)
		}
		if acc.EOS != nil {
			r.Failures = append(r.Failures, acc.EOS.failures()...)
		}
	}
	if h.poller != nil && acc != nil && r.GroupType != o.protocol {
		r.Failures = append(r.Failures, fmt.Sprintf("the group is a %q group, not %q: the members fell back to another protocol", r.GroupType, o.protocol))
	}
	for _, b := range r.Logs.Bad {
		r.Failures = append(r.Failures, "member log: "+b)
	}
	if h.fleet != nil {
		h.fleet.mu.Lock()
		for _, p := range h.fleet.problems {
			r.Failures = append(r.Failures, "member: "+p)
		}
		h.fleet.mu.Unlock()
	}
	r.Failures = append(r.Failures, h.notes...)
	r.Passed = len(r.Failures) == 0
	if r.Failures == nil {
		r.Failures = []string{}
	}
	r.SlowestRecoveryS = round(r.SlowestRecoveryS)
	r.DurationS, r.TookS = round(r.DurationS), round(r.TookS)
	return r
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func round(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

func summaryLine(r *report) string {
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL"
	}
	loss := ""
	if r.ReportedLost > 0 || r.ExpectedLost > 0 || len(r.Deletions) > 0 {
		loss = fmt.Sprintf(" reported_lost=%d/%d", r.ReportedLost, r.ExpectedLost)
	}
	if d := r.DeadLetters; d != nil {
		loss += fmt.Sprintf(" dead_lettered=%d copies=%d poison=%d/%d bad_provenance=%d never_refused=%d",
			d.Records, d.Copies, d.PoisonDead, d.Poison, d.BadProvenance, d.Unrefused)
	}
	if k := r.KeyOrder; k != nil {
		loss += fmt.Sprintf(" ordering=%s keyed=%d key_first_inversions=%d key_overlaps=%d key_in_request=%d older_again=%d",
			r.Ordering, k.Keyed, k.FirstOrder, k.Overlaps, k.InRequest, k.OlderAgain)
	}
	if e := r.EOS; e != nil {
		loss += fmt.Sprintf(" eos outputs=%d aborted_outputs=%d aborted_transactions=%d", e.Outputs, e.AbortedOutputs, e.TxnAborted)
	}
	return fmt.Sprintf("chaos: %s seed=%d protocol=%s faults=%d records=%d lost=%d violations=%d backward=%d duplicates=%d exposure=%d%s took=%.0fs",
		verdict, r.Seed, r.Protocol, r.Faults, r.Records, r.Lost, r.Violations, r.Backward, r.Duplicates, r.Exposure, loss, r.TookS)
}

func writeReport(dir string, r *report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "chaos-report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "chaos-report.md"), []byte(markdown(r)), 0o644)
}
